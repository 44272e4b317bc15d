"""One non-streamed model answer through the gateway: read bounded, decoded, judged whole.

The body is read piece by piece and its content codings undone as it arrives
(:class:`~railings.transport.coding.BodyDecoder`, in pieces of at most 1 MiB), so
what is held is bounded by ``max_answer`` counted on the decoded bytes: a gzip
answer that would inflate past it is refused once it has, never held whole. The
judge (:func:`railings.inspect`) reads the decoded JSON, and the client gets those
same bytes, without ``content-encoding`` and with their own ``content-length``.

An answer the gateway cannot stand behind is a 502 in the provider's own error
shape, with ``x-should-retry: false`` (the upstream already produced, and billed,
the answer; a resend would pay for it again): one past the bound, one in a coding
railings cannot read (``br``, ``zstd``, ``compress``; the gateway asked for
``identity``), one that does not decode, one the upstream broke off, and, with
``refuse_cut_calls``, one holding a tool call the output limit cut.
"""

from __future__ import annotations

import json
import zlib

import httpx2

from railings.classify import INTERRUPTED_MESSAGE
from railings.errors import RailingsError
from railings.gateway.client_side import NO_RETRY, Send, answer
from railings.gateway.decoding import stream_decoder
from railings.gateway.judge import cut_message
from railings.gateway.limits import describe
from railings.gateway.metrics import Metrics
from railings.gateway.record import TurnRecord
from railings.gateway.shapes import CUT_CODE, INTERRUPTED_CODE, error_body
from railings.gateway.upstream import response_headers
from railings.sdk_objects import inspect
from railings.transport.coding import BodyDecoder, Unreadable
from railings.transport.errors_map import BOUNDARY, map_exception
from railings.turn.verdict import RejectReason

__all__ = ["TOO_LARGE_CODE", "UNREADABLE_CODE", "forward_answer", "read_answer"]

TOO_LARGE_CODE = "upstream_answer_too_large"
UNREADABLE_CODE = "upstream_answer_unreadable"


class AnswerTooLarge(Exception):
    """The answer passed ``max_answer`` (decoded, or on the wire)."""


async def read_answer(response: httpx2.Response, limit: int) -> bytes:
    """The decoded body of ``response``, at most ``limit`` bytes.

    Raises :class:`AnswerTooLarge`, :class:`~railings.transport.coding.Unreadable`,
    ``zlib.error`` (a body that does not decode) or a transport error (``BOUNDARY``).
    """
    # The same reading of Content-Encoding as a judged stream's: one rule for both.
    decoder = stream_decoder(response.headers.get_list("content-encoding")) or BodyDecoder(())
    parts: list[bytes] = []
    size = wire = 0
    async for chunk in response.aiter_raw():
        wire += len(chunk)
        for piece in decoder.feed(chunk):
            size += len(piece)
            if size > limit or wire > limit:
                raise AnswerTooLarge
            parts.append(piece)
    for piece in decoder.close():
        size += len(piece)
        if size > limit:
            raise AnswerTooLarge
        parts.append(piece)
    return b"".join(parts)


async def forward_answer(
    record: TurnRecord,
    response: httpx2.Response,
    send: Send,
    *,
    refuse_cut_calls: bool,
    limit: int,
    metrics: Metrics,
) -> None:
    """Read, judge and forward one 2xx JSON answer (or refuse it with a 502)."""
    refusal: tuple[str, str, str] | None = None  # (metric reason, code, message)
    try:
        data = await read_answer(response, limit)
    except AnswerTooLarge:
        message = f"railings gateway: the upstream's answer is larger than {describe(limit)}"
        refusal = ("too_large", TOO_LARGE_CODE, message)
    except (Unreadable, zlib.error) as exc:
        message = f"railings gateway: the upstream's answer cannot be read: {exc}"
        refusal = ("unreadable", UNREADABLE_CODE, message)
    except BOUNDARY as exc:
        record.finish("error", error=map_exception(exc).message)
        refusal = ("", INTERRUPTED_CODE, "railings gateway: " + INTERRUPTED_MESSAGE)
    finally:
        await response.aclose()  # before answering: the connection is not held meanwhile
    if refusal is not None:
        reason, code, message = refusal
        record.status = 502
        if reason:  # a broken-off body is an interruption, not a refused answer
            record.finish("error", error=message)
            metrics.inc(
                "railings_gateway_refused_answers_total", provider=record.provider, reason=reason
            )
        payload = error_body(record.provider, code, message)
        await answer(send, 502, payload, "application/json", NO_RETRY)
        return
    try:
        judged = inspect(
            json.loads(data), max_tokens=record.max_tokens, request_chars=record.request_chars
        )
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, RailingsError):
        judged = None  # not a model answer railings reads: pass it on as it came
    cut = [v for v in judged.verdicts if v.reason is RejectReason.TRUNCATED] if judged else []
    record.turn = judged.turn if judged else None
    if cut and refuse_cut_calls and judged is not None:
        record.rejected = tuple(v.call.name for v in cut)
        message = cut_message(cut, judged.turn)
        record.status = 502
        record.finish("refused", error=message)
        metrics.inc("railings_gateway_answers_total", provider=record.provider, outcome="refused")
        payload = error_body(record.provider, CUT_CODE, message)
        await answer(send, 502, payload, "application/json", NO_RETRY)
        return
    # Only an answer railings read is "complete"; anything else passed on unjudged.
    outcome = "complete" if judged is not None else "unjudged"
    record.finish(outcome)
    metrics.inc("railings_gateway_answers_total", provider=record.provider, outcome=outcome)
    headers = [
        (name, value)
        for name, value in response_headers(response.headers.raw, keep_length=False)
        if name != b"content-encoding"  # decoded above: labelled as what it now is
    ]
    headers.append((b"content-length", str(len(data)).encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    record.sent_first_byte()
    await send({"type": "http.response.body", "body": data})
