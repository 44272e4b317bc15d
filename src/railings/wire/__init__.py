"""Wire layer: the shared sans-IO framing (bytes to lines, SSE events, event-stream
messages, NDJSON lines) and the helpers every provider's decoder shares; each provider's
own decoder is in its package, ``railings.providers.<name>.decoder``."""
