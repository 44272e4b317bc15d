"""Sending the battery and reading each answer with railings' own layers.

Each answer's bytes go to the stream reader (the turn: proof, stop reason, usage,
content) and to a keep-alive counter of the wire's framing, a line at a time, so each
keep-alive is placed exactly: before the first event, before the first content, or
during content. What a framing can carry as a keep-alive is counted by its own rule
(:data:`KEEPALIVES`): SSE comments and ``ping`` events by the SSE decoder, NDJSON blank
lines (its decoder skips them); AWS event-stream frames carry none, and a binary frame
is never cut at a byte that looks like a line end: the reader gets whole chunks.
Nothing here reads the wire by itself. The key goes only to the configured URL, in the
wire's own header (or the request is signed, as the client signs Bedrock's without a
key), and no redirect is followed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import httpx2

from railings.errors import ConnectError, ConnectTimeout, RailingsError
from railings.probe.battery import NAMED_ENDING_WIRES, Ask, body
from railings.providers import Framing, spec
from railings.redact import redact, register_secret, register_url_secrets
from railings.transport import ClientConfig
from railings.transport.client import signer
from railings.transport.errors_map import BOUNDARY, error_from_response, map_exception
from railings.transport.response import body_chunks, is_event_stream, read_bounded
from railings.turn.model import Outcome, Termination, Turn
from railings.turn.profile import STOP_THEN_USAGE, Evidence, Profile
from railings.turn.reader import StreamReader
from railings.turn.verdict import CallVerdict, judge
from railings.wire.sse import SSEDecoder

__all__ = ["ATTEMPTS", "KEEPALIVES", "PLACES", "Observation", "ProbeFailed", "observe"]

ATTEMPTS = 3  # per request, when no connection to the endpoint could be made
_WAITS = (0.5, 1.0)
# Where a keep-alive came: before the answer's first event (the server waited), after it
# but before the first content, or among the content.
PLACES = ("before the first event", "before content", "during content")
# What each framing can carry as a keep-alive, in the report's words; a framing missing
# here carries none (AWS event-stream: every frame is a typed, checksummed message).
KEEPALIVES = {Framing.SSE: "comments", Framing.NDJSON: "blank lines"}


# Asks each answer what a structural profile would: is its proof preceded by its stop
# reason, after the last content? The rule is the reader's; the probe only asks.
_STRUCTURAL = Profile(
    name="probe",
    structural=True,
    evidence={
        "structural": Evidence(
            observed="the question the probe asks", seen=1, date="-", source="railings probe"
        )
    },
)


class ProbeFailed(Exception):
    """A request of the battery got no answer to read (one line, the key redacted)."""


@dataclass(slots=True)
class Observation:
    """What one request's answer showed. Times are seconds since the request was sent."""

    ask: Ask
    turn: Turn
    verdicts: tuple[CallVerdict, ...]
    http_version: str
    content_encoding: str
    accept_encoding: str
    first_byte: float
    first_content: float | None = None
    structured: bool = False  # complete under a structural profile too
    largest_gap: float = 0.0  # the longest silence between two reads of the body
    wait_before_first_event: float | None = None  # when keep-alives came first: how long
    # The framing's keep-alives (:data:`KEEPALIVES`: SSE comments, NDJSON blank lines).
    comments: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))
    pings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))
    # Without the wire's proof: did the answer end with a stop reason, then usage, then the
    # server's clean close (the one ending a profile may name instead)?
    named_ending: bool = False


# The named ending, tried on every answer beside the wire's own rule.
_NAMED = Profile(
    name="probe",
    proof=STOP_THEN_USAGE,
    evidence={"proof": Evidence(observed="tried", seen=1, date="-", source="railings probe")},
)


async def observe(config: ClientConfig, asks: tuple[Ask, ...], *, http2: bool) -> list[Observation]:
    """Send each request in turn and read its answer; :class:`ProbeFailed` when one
    cannot be sent or is answered with an error."""
    register_secret(config.api_key)  # redacted from every message from now on
    register_url_secrets(config.base_url)
    try:  # as the client authenticates: SigV4 for Bedrock without a key
        auth = config.auth or signer(config)
    except RailingsError as exc:
        raise ProbeFailed(redact(str(exc))) from None
    async with httpx2.AsyncClient(
        auth=auth,
        http2=http2,
        follow_redirects=False,  # the key stays with the origin given
        trust_env=False,  # as the client: no proxy or .netrc from the environment
        timeout=httpx2.Timeout(connect=10.0, read=120.0, write=30.0, pool=30.0),
        verify=config.verify,
    ) as http:
        return [await _one(http, config, ask, n) for n, ask in enumerate(asks, 1)]


async def _one(http: httpx2.AsyncClient, config: ClientConfig, ask: Ask, n: int) -> Observation:
    request = http.build_request(
        "POST",
        config.url,
        json=body(ask, config.provider, config.model),
        headers=config.request_headers(),
    )
    clock = asyncio.get_running_loop().time
    for attempt in range(ATTEMPTS):
        start = clock()
        try:
            response = await http.send(request, stream=True)
        except BOUNDARY as exc:
            error = map_exception(exc)
            # Only a connection never made is tried again: a request the server may have
            # received (and billed) is not resent behind the plan that was announced.
            if attempt + 1 == ATTEMPTS or not isinstance(error, ConnectError | ConnectTimeout):
                raise ProbeFailed(redact(f"request {n} ({ask.label}): {error}")) from None
            await asyncio.sleep(_WAITS[attempt])
            continue
        except RailingsError as exc:  # the signer found no credentials
            raise ProbeFailed(redact(f"request {n} ({ask.label}): {exc}")) from None
        break
    try:
        wanted = spec(config.provider).content_types
        if not is_event_stream(response, wanted):
            data = await read_bounded(response)
            if response.status_code < 300 and b'"error"' not in data:
                kind = response.headers.get("content-type") or "no content type"
                raise ProbeFailed(
                    f"request {n} ({ask.label}): expected {' or '.join(wanted)}, got {kind}"
                )
            error = error_from_response(
                response.status_code,
                response.headers,
                data,
                key_variable=config.key_variable,
                has_key=bool(config.api_key),
            )
            raise ProbeFailed(redact(f"request {n} ({ask.label}): {error}"))
        return await _read(response, ask, config.provider, start, clock)
    except RailingsError as exc:
        raise ProbeFailed(redact(f"request {n} ({ask.label}): {exc}")) from None
    except BOUNDARY as exc:
        raise ProbeFailed(redact(f"request {n} ({ask.label}): {map_exception(exc)}")) from None
    finally:
        await response.aclose()


async def _read(
    response: httpx2.Response,
    ask: Ask,
    provider: str,
    start: float,
    now: Callable[[], float],
) -> Observation:
    reader = StreamReader(provider, max_tokens=ask.max_tokens)
    named = None
    if provider in NAMED_ENDING_WIRES:
        named = StreamReader(provider, max_tokens=ask.max_tokens, profile=_NAMED)
    strict = StreamReader(provider, max_tokens=ask.max_tokens, profile=_STRUCTURAL)
    counter = _counter(spec(provider).framing)
    seen = _Tally(first_byte=now() - start)
    events = 0
    last = now()
    async for chunk in body_chunks(response):
        arrived = now()
        seen.largest_gap = max(seen.largest_gap, arrived - last)
        last = arrived
        # Lines for the text framings (where keep-alives are placed), whole chunks for
        # the binary one.
        for piece in [chunk] if counter is None else chunk.splitlines(keepends=True):
            place = _place(events, reader.content)
            if counter is not None:
                new, kept, pings = counter.feed(piece)
                events += new
                seen.comments[place] += kept
                seen.pings[place] += pings
            if events and seen.wait_before_first_event is None and _kept_alive(seen):
                seen.wait_before_first_event = arrived - start
            if named is not None and named.reads_on:
                named.feed(piece)
            if strict.reads_on:
                strict.feed(piece)
            if not reader.reads_on:  # ended, and no usage follows its proof on this wire
                continue
            reader.feed(piece)
            if reader.content and seen.first_content is None:
                seen.first_content = arrived - start
        if reader.terminated and not reader.reads_on:
            break
    reader.close()  # reached only when the body ended as the server closed it
    strict.close()
    if named is not None:
        named.close()
    turn = reader.turn()
    return Observation(
        ask=ask,
        turn=turn,
        verdicts=judge(turn),
        http_version=response.http_version,
        content_encoding=response.headers.get("content-encoding", "") or "identity",
        accept_encoding=response.request.headers.get("accept-encoding", ""),
        structured=strict.turn().outcome is Outcome.COMPLETE,
        **asdict(seen),
        named_ending=named is not None
        and turn.termination is Termination.ABRUPT
        and named.turn().termination is Termination.CLEAN,
    )


class _SSECount:
    """SSE's keep-alives, by its own decoder: comments, and ``ping`` events (Anthropic)."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()

    def feed(self, line: bytes) -> tuple[int, int, int]:
        """The events, comments and pings ``line`` completed."""
        comments = self._sse.comments
        events = self._sse.feed(line)
        pings = sum(1 for event in events if event.event == "ping")
        return len(events), self._sse.comments - comments, pings


class _NDJSONCount:
    """NDJSON's keep-alives: blank lines, which its decoder skips. A line ends at LF, as
    NDJSON's decoder ends it (a CR before it belongs to the line)."""

    def __init__(self) -> None:
        self._blank = True  # the line begun so far holds nothing but white space

    def feed(self, piece: bytes) -> tuple[int, int, int]:
        """The lines (events), blank lines and pings (none) ``piece`` completed."""
        if piece.strip():
            self._blank = False
        if not piece.endswith(b"\n"):
            return 0, 0, 0
        blank, self._blank = self._blank, True
        return (0, 1, 0) if blank else (1, 0, 0)


def _counter(framing: Framing) -> _SSECount | _NDJSONCount | None:
    if framing is Framing.SSE:
        return _SSECount()
    return _NDJSONCount() if framing is Framing.NDJSON else None


@dataclass(slots=True)
class _Tally:
    """The timings and keep-alives of an answer, as they arrive (:class:`Observation`'s)."""

    first_byte: float
    first_content: float | None = None
    largest_gap: float = 0.0
    wait_before_first_event: float | None = None
    comments: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))
    pings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))


def _place(events: int, content: bool) -> str:
    if not events:
        return PLACES[0]
    return PLACES[2] if content else PLACES[1]


def _kept_alive(seen: _Tally) -> bool:
    return bool(seen.comments[PLACES[0]] or seen.pings[PLACES[0]])
