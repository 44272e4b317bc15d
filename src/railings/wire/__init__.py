"""Wire layer: sans-IO decoders from bytes to lines to SSE events to provider events."""
