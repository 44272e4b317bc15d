"""What a provider is, as one frozen value: :class:`ProviderSpec`.

A spec names what every layer needs to know about one wire format and nothing
else: where it is POSTed, how a conversation becomes its request body and a
tool result goes back, which decoder reads its stream, what proves a turn
finished (as the decoder's event and the spellings that carry it), how its stop
reasons and error types map to railings' vocabulary, and how ``replay
--provider auto`` recognises it. The transport, the reader, the guard, the
test kit, classification, telemetry and the CLI read these fields instead of
keeping tables of their own; the registry is :mod:`railings.providers`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol
from urllib.parse import quote, urlsplit

from railings.conversation import Message, ToolResult, ToolSpec
from railings.errors import ProviderError
from railings.events import StreamEvent, TerminationProof, UsageUpdate
from railings.providers.resumption import Resumption
from railings.stops import Stop
from railings.wire._json import as_count
from railings.wire.sse import ServerSentEvent

__all__ = [
    "Detection",
    "EncodeRequest",
    "ErrorShapes",
    "Framing",
    "Proof",
    "ProviderDecoder",
    "ProviderName",
    "ProviderSpec",
    "Resumption",
    "ScriptedShape",
    "StopReasons",
    "as_dict",
    "as_str",
    "compact_json",
    "usage_update",
]


# The one type of a provider's name, for the whole package (re-exported by the registry
# and by railings.transport.config).
ProviderName = Literal["openai", "anthropic", "openai-responses", "gemini", "bedrock", "ollama"]

# The header a key travels in: ``Bearer <key>`` in ``authorization``, the key alone in
# the others.
AuthHeader = Literal["authorization", "x-api-key", "x-goog-api-key"]


class Framing(StrEnum):
    """How a wire cuts its response body into the frames its decoder reads.

    * ``SSE``: ``text/event-stream`` events (:class:`~railings.wire.sse.SSEDecoder`),
      one :class:`~railings.wire.sse.ServerSentEvent` per frame.
    * ``EVENTSTREAM``: AWS ``application/vnd.amazon.eventstream`` binary frames, both CRCs
      checked (:class:`~railings.wire.eventstream.EventStreamDecoder`), one
      :class:`~railings.wire.eventstream.Message` per frame.
    * ``NDJSON``: ``application/x-ndjson``, one JSON object per line
      (:class:`~railings.wire.ndjson.NDJSONDecoder`), one ``str`` per frame.
    """

    SSE = "sse"
    EVENTSTREAM = "eventstream"
    NDJSON = "ndjson"


class ProviderDecoder(Protocol):
    """The provider layer of the reader: frames in (of the spec's :class:`Framing`: a
    ``ServerSentEvent``, an event-stream ``Message`` or an NDJSON line), normalized
    events out."""

    def feed(self, frame: Any, /) -> list[StreamEvent]:
        """The normalized events of one frame."""
        ...

    def close(self) -> list[StreamEvent]:
        """The normalized events EOF completes."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EncodeRequest:
    """What a request encoder reads: one turn's conversation and its options.

    ``include_usage`` and ``max_tokens_field`` matter to Chat Completions only (the
    other encoders ignore them)."""

    model: str
    messages: Sequence[Message]
    max_tokens: int
    tools: Sequence[ToolSpec] = ()
    extra: Mapping[str, Any] | None = None
    include_usage: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"


@dataclass(frozen=True, slots=True, kw_only=True)
class Proof:
    """The termination proof, two ways.

    ``markers``: the :class:`~railings.events.TerminationProof` markers the decoder
    emits (what the termination table's PROOF signal stands for). ``data``: data
    values that are the proof by themselves (``[DONE]``); ``events``: ``event:``
    names that are (for event-stream framing, the ``:event-type`` header:
    ``messageStop``); ``types``: the data's ``"type"`` values that are, when a server
    leaves the ``event:`` line out (OpenRouter); ``fields``: keys of a frame's JSON
    object whose terminal value is the proof (Gemini's ``finishReason``, on the
    stream's last event only; Ollama's ``done: true``). ``structure``: what this wire's
    own API always sends before its proof, in words (a stop reason: ``a finish_reason``),
    for the message when a strict profile finds a proof without it; empty where the
    proof carries the stop reason itself (:mod:`railings.turn.profile`)."""

    markers: frozenset[str]
    data: frozenset[str] = frozenset()
    events: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()
    fields: frozenset[str] = frozenset()
    structure: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReasons:
    """The stop-reason maps of one wire.

    ``wire``: this wire's spellings, as the wire writes them -> railings' normalized
    stop reason (the provider module's public ``STOP_REASONS``; the registry's
    :func:`~railings.providers.stop_reasons` is their union, which the turn layer
    normalizes with). ``nearest``: normalized stop reasons this wire cannot say -> the
    spelling a server of this wire sends instead (the scripted server uses it).
    ``derived``: spellings whose meaning the turn decides (the Responses status
    ``completed``: ``tool_use`` with calls, else ``end_turn``), outside the table.
    :meth:`to_wire` is the inverse the scripted server needs."""

    wire: Mapping[str, Stop]
    nearest: Mapping[str, str] = field(default_factory=dict)
    derived: frozenset[str] = frozenset()

    @property
    def inverse(self) -> dict[str, str]:
        """Normalized -> this wire's spelling; where two spellings normalize alike, the
        first listed in :attr:`wire` is the one sent."""
        return {normalized: spelling for spelling, normalized in reversed([*self.wire.items()])}

    def to_wire(self, stop: str) -> str | None:
        """This wire's spelling of ``stop``, one of its own spellings or a normalized stop
        reason: a spelling of this wire stays as is, a normalized one is inverted, or
        sent as its nearest; None when nothing here knows it. Another wire's spelling is
        normalized first by the registry (:func:`~railings.providers.stop_reason_on`)."""
        if stop in self.wire:
            return stop
        return self.inverse.get(stop, self.nearest.get(stop))


@dataclass(frozen=True, slots=True, kw_only=True)
class Detection:
    """How ``replay --provider auto`` recognises this wire.

    For SSE framing, from one SSE event: ``events``: ``event:`` names;
    ``event_prefixes``: prefixes of them; ``data``: data values (``[DONE]``);
    ``markers``: substrings of the data with its spaces removed
    (``"type":"message_start"``). For NDJSON framing, ``markers`` are asked of the
    first line, every one of them required (:meth:`recognises_line`). ``prefix``: the
    body's first bytes say this wire by themselves (the event-stream prelude, whose CRC
    no text body meets by chance)."""

    events: frozenset[str] = frozenset()
    event_prefixes: tuple[str, ...] = ()
    data: frozenset[str] = frozenset()
    markers: tuple[str, ...] = ()
    prefix: Callable[[bytes], bool] | None = None

    def recognises_line(self, line: str) -> bool:
        """True when the NDJSON ``line`` (a stream's first) holds every marker."""
        compact = line.replace(" ", "")
        return bool(self.markers) and all(marker in compact for marker in self.markers)

    def recognises(self, sse: ServerSentEvent) -> bool:
        """True when ``sse`` is, by these hints, an event of this wire."""
        if sse.event in self.events or sse.event.startswith(self.event_prefixes):
            return True
        if sse.data in self.data:
            return True
        compact = sse.data.replace(" ", "")
        return any(marker in compact for marker in self.markers)


# What the decoders share: lenient reads of JSON values, and usage counts.
def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_str(value: object) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def usage_update(
    usage: object, inputs: str, outputs: str, *, opening: bool = False
) -> list[StreamEvent]:
    """The :class:`~railings.events.UsageUpdate` of a usage object whose counts are named
    ``inputs`` and ``outputs``; none when ``usage`` is not an object."""
    if not isinstance(usage, dict):
        return []
    return [
        UsageUpdate(
            input_tokens=as_count(usage.get(inputs)),
            output_tokens=as_count(usage.get(outputs)),
            opening=opening,
        )
    ]


def compact_json(obj: Any) -> str:
    """JSON as the providers send it: no spaces, UTF-8 text kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorShapes:
    """How an error railings itself reports is shaped on this wire, so the wire's own
    clients raise on it (the gateway's Partial and cut-call answers): ``event(code,
    message, sequence_number)`` is one whole stream event, blank line included;
    ``body(code, message)`` the JSON body of a non-streamed answer."""

    event: Callable[[str, str, int | None], bytes]
    body: Callable[[str, str], bytes]

    @classmethod
    def of(cls, error: Callable[[str, str], dict[str, Any]], event: str = "") -> ErrorShapes:
        """The shapes of a wire whose stream event carries the same JSON object as its
        body, ``error(code, message)``, after an ``event:`` line naming ``event`` when
        one is given."""
        head = f"event: {event}\n" if event else ""
        return cls(
            event=lambda code, message, _number: (
                f"{head}data: {compact_json(error(code, message))}\n\n".encode()
            ),
            body=lambda code, message: compact_json(error(code, message)).encode(),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedShape:
    """How the scripted server shapes this wire's stream (the fault matrix aims by it):
    ``lead`` events before the first content delta, ``seams`` events that close one
    output item and open the next."""

    lead: int
    seams: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """One wire format, whole. See the module docstring; each field is documented where
    the registry's providers fill it (:mod:`railings.providers.openai_chat` ...).

    * ``name``: railings' name (``ClientConfig.provider``, ``--provider``).
    * ``title``: what a person calls it ("OpenAI Chat Completions").
    * ``request_path``: what the client appends to the base URL; a ``{model}`` in it is
      the model, percent-encoded (:meth:`path_for`): Gemini
      ``/v1beta/models/{model}:streamGenerateContent?alt=sse``, Bedrock
      ``/model/{model}/converse-stream``. The query string is part of it.
    * ``framing``: how the response body is cut into frames (:class:`Framing`).
    * ``content_types``: the media types a streamed answer of this wire carries, the
      first the one its servers send (``text/event-stream``,
      ``application/vnd.amazon.eventstream``, ``application/x-ndjson``).
    * ``path_suffixes``: how any request path says this wire, whatever prefix a gateway
      puts before it (the guard, the proxies and the scripted server route by them).
    * ``default_base_url``, ``base_url_env``, ``api_key_env``: as in the official SDK.
    * ``default_model``: the model ``railings run`` and ``railings chat`` ask for when
      ``--model`` names none.
    * ``regional_base_url``, ``region_env``: for a regional service (Bedrock), the base
      URL with a ``{region}`` in it and the variables that name the region, first set
      wins (``AWS_REGION``, ``AWS_DEFAULT_REGION``); ``default_base_url`` is then the
      default region's. Empty for the others.
    * ``usage_after_proof``: the wire reports usage after its proof (Bedrock's
      ``metadata`` follows ``messageStop``): the reader reads on after the proof, for
      usage only, until EOF.
    * ``whole_body``: how a body that was not streamed is read, where the wire has one
      a reader can recognise (Gemini without ``alt=sse``: one JSON array of the
      stream's objects), given the body and the choice; None elsewhere.
    * ``key_required``: False where a server commonly needs no key (a local Ollama):
      a missing key is then no configuration error, and no auth header is sent.
    * ``auth_header``: ``authorization`` (``Bearer <key>``), ``x-api-key`` or
      ``x-goog-api-key`` (the key alone);
      ``version_header``: a header every request needs (name, value), or None;
      ``request_id_header``: the response header that names the request.
    * ``api_key_envs``: every variable a key is read from, first set wins, where the
      SDK reads more than ``api_key_env`` (google-genai: ``GOOGLE_API_KEY``, then
      ``GEMINI_API_KEY``); empty: ``api_key_env`` alone.
    * ``sigv4_service``: the AWS signing name (``bedrock``) of a wire whose requests are
      signed with SigV4 when no key is configured (:mod:`railings.transport.sigv4`);
      empty for the others.
    * ``gen_ai_name``: the OpenTelemetry GenAI ``gen_ai.provider.name``.
    * ``decoder``: a fresh stream decoder, given the Chat Completions choice to read
      (the other wires have one message per stream and ignore it).
    * ``encode``: the request encoder (conversation -> JSON body).
    * ``tool_result``: how one tool result goes back: the wire values (messages, items
      or blocks) it becomes, given the type of the call it answers.
    * ``asks_for_usage``: the stream reports usage only when the request asks for it
      (Chat Completions' ``stream_options.include_usage``, which some compatible
      servers reject: the client drops it for them).
    * ``proof``, ``stop_reasons``, ``error_types`` (provider error type or code -> error
      class), ``detection``, ``numbered`` (events carry sequence numbers),
      ``scripted``: see their classes.
    * ``error_shapes``: an error railings reports in this wire's own shape
      (:class:`ErrorShapes`); None for a wire the gateway passes through unjudged.
    * ``sequence_number``: for a ``numbered`` wire, an event's number as raw bytes show
      it (one group, the digits), for readers that scan bytes without parsing them (the
      gateway, the fault proxy): :meth:`sequence_numbers` reads it. None elsewhere.
    * ``resumption``: for a ``numbered`` wire whose provider can keep a response, how
      a broken stream is read again (:class:`Resumption`); None elsewhere.
    * ``continues_by_prefill``: a Partial answer is continued by sending its text back as
      the conversation's last, assistant, message for the model to carry on
      (:mod:`railings.continuation`); False: the text goes in a trailing user message
      that asks for the rest. A caller may choose either on any wire.
    """

    name: ProviderName
    title: str
    request_path: str
    framing: Framing
    content_types: tuple[str, ...]
    path_suffixes: tuple[str, ...]
    default_base_url: str
    default_model: str
    base_url_env: str
    api_key_env: str
    auth_header: AuthHeader
    version_header: tuple[str, str] | None
    request_id_header: str
    gen_ai_name: str
    decoder: Callable[[int], ProviderDecoder]
    encode: Callable[[EncodeRequest], dict[str, Any]]
    tool_result: Callable[[ToolResult, str], list[dict[str, Any]]]
    asks_for_usage: bool
    proof: Proof
    stop_reasons: StopReasons
    error_types: Mapping[str, type[ProviderError]]
    detection: Detection
    numbered: bool
    scripted: ScriptedShape
    api_key_envs: tuple[str, ...] = ()
    sigv4_service: str = ""
    key_required: bool = True
    regional_base_url: str = ""
    region_env: tuple[str, ...] = ()
    usage_after_proof: bool = False
    whole_body: Callable[[bytes, int], list[StreamEvent]] | None = None
    error_shapes: ErrorShapes | None = None
    sequence_number: re.Pattern[bytes] | None = None
    resumption: Resumption | None = None
    continues_by_prefill: bool = False

    @property
    def base_path(self) -> str:
        """The path of :attr:`default_base_url`, without its trailing slash (OpenAI's
        ``/v1``; empty for a base URL at the host's root)."""
        return urlsplit(self.default_base_url).path.rstrip("/")

    def path_for(self, model: str) -> str:
        """The request path for ``model``: :attr:`request_path` with its ``{model}``
        percent-encoded (as botocore encodes a Bedrock ``modelId``: an ARN's ``:`` and
        ``/`` included); a path without ``{model}`` is returned as is."""
        if "{model}" not in self.request_path:
            return self.request_path
        return self.request_path.replace("{model}", quote(model, safe=""))

    def routes(self, path: str) -> bool:
        """True when the request ``path`` (query string and trailing slash ignored)
        speaks this wire."""
        path = path.partition("?")[0].rstrip("/")
        return path.endswith(self.path_suffixes)

    def is_proof(self, event: StreamEvent) -> bool:
        """True for this wire's termination proof event."""
        return isinstance(event, TerminationProof) and event.marker in self.proof.markers

    def sequence_numbers(self, data: bytes) -> list[int]:
        """The event numbers ``data`` (raw bytes of whole events) shows, in order, read
        without parsing it (:attr:`sequence_number`); empty for a wire whose events are
        not numbered."""
        if self.sequence_number is None:
            return []
        return [int(n) for n in self.sequence_number.findall(data)]
