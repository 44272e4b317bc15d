"""OpenAI Responses API, as the scripted server writes it (sans-IO: dicts and bytes).

Shapes follow the real API (see ``tests/captures/responses/``): each event is an
``event: <type>`` line and a ``data:`` line of compact JSON that repeats the
``type`` and carries ``sequence_number``, counting from 0 over the whole stream.
The order::

    response.created, response.in_progress    the response: status in_progress, output []
    a reasoning item, when the turn thinks (as with ``reasoning.summary: "auto"``):
        response.output_item.added            {"type": "reasoning", "summary": []}
        response.reasoning_summary_part.added
        response.reasoning_summary_text.delta ...
        response.reasoning_summary_text.done
        response.reasoning_summary_part.done
        response.output_item.done             the summary filled in
    a message item, when the turn has text:
        response.output_item.added            {"type": "message", "status": "in_progress"}
        response.content_part.added           an output_text part with text ""
        response.output_text.delta ...
        response.output_text.done
        response.content_part.done
        response.output_item.done             status completed, the text filled in
    a function_call item per call (and the item of each other call type: see
    ``testing/wire_responses_items.py``):
        response.output_item.added            arguments "", call_id, name
        response.function_call_arguments.delta ...
        response.function_call_arguments.done
        response.output_item.done
    response.completed                        the whole response again, with usage

At the output limit the item being written is closed with what it holds and
``status: "incomplete"`` (its ``.done`` events carry the cut text or the cut
arguments), later items never start, and the terminal event is
``response.incomplete`` with ``incomplete_details.reason: "max_output_tokens"``
and the cut items in ``response.output``. Each item has an ``output_index``
(its place in the output) and an id (``rs_``, ``msg_``, ``fc_``); a function
call's ``call_id`` (``call_...``) is the id its output is sent back under.

A reasoning item carries ``encrypted_content`` (opaque here; the API fills it
by default); how a later request's ``input`` is checked against it is in
:mod:`~railings.testing.wire_responses_ask` (:func:`parse_ask`, importable here).

Left out on purpose: the ``obfuscation`` padding field of the deltas (the shape
``stream_options.include_obfuscation: false`` gives).
:func:`error_event` and :func:`failed_event` are the two ways the API reports
a failure inside a stream; the fault proxy injects them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

from railings.testing.plan import Plan, compact, count_tokens, pieces, responses_status
from railings.testing.wire_responses_ask import ResponsesAsk, parse_ask
from railings.testing.wire_responses_items import call_events, plan_items, text_part

__all__ = [
    "ResponsesAsk",
    "error_event",
    "events",
    "failed_event",
    "output_items",
    "parse_ask",
    "response",
    "sse",
]


def sse(obj: Mapping[str, Any]) -> bytes:
    """One event: the ``event:`` line repeats the data's ``type``, as OpenAI sends it."""
    return f"event: {obj['type']}\ndata: {compact(obj)}\n\n".encode()


def _usage(plan: Plan, input_tokens: int) -> dict[str, Any]:
    reasoning = min(plan.output_tokens, count_tokens(len(plan.thinking)))
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
        "output_tokens": plan.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + plan.output_tokens,
    }


def _response(
    ask: ResponsesAsk,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
    reason: str | None = None,
    *,
    response_id: str,
    created: int,
    model: str,
) -> dict[str, Any]:
    """The response object, its fields in the API's order."""
    echo = ask.echo
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": echo.get("background", False),
        "error": None,
        "incomplete_details": {"reason": reason} if reason is not None else None,
        "instructions": echo["instructions"],
        "max_output_tokens": echo["max_output_tokens"],
        "max_tool_calls": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": echo["parallel_tool_calls"],
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "auto" if status == "in_progress" else "default",
        "store": echo["store"],
        "temperature": echo["temperature"],
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": echo["tool_choice"],
        "tools": echo["tools"],
        "top_logprobs": 0,
        "top_p": echo["top_p"],
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": echo["metadata"],
    }


# -- the output items (testing/wire_responses_items.py) -------------------------------


def output_items(plan: Plan, new_item_id: Callable[[str], str]) -> list[dict[str, Any]]:
    """The ``output`` of a response that carries ``plan``."""
    return [item.final() for item in plan_items(plan, new_item_id)]


def _terminal(plan: Plan) -> tuple[str, str | None]:
    status, reason = responses_status(plan.stop_reason)
    if plan.truncated and status == "completed":
        return "incomplete", "max_output_tokens"  # a forced stop reason cannot hide a cut
    return status, reason


def response(
    plan: Plan,
    ask: ResponsesAsk,
    *,
    response_id: str,
    created: int,
    model: str,
    new_item_id: Callable[[str], str],
) -> dict[str, Any]:
    """The body of a non-streamed response."""
    status, reason = _terminal(plan)
    output = output_items(plan, new_item_id)
    usage = _usage(plan, ask.input_tokens)
    return _response(
        ask, status, output, usage, reason, response_id=response_id, created=created, model=model
    )


def events(
    plan: Plan,
    ask: ResponsesAsk,
    *,
    response_id: str,
    created: int,
    model: str,
    chunk_size: int,
    new_item_id: Callable[[str], str],
) -> Iterator[bytes]:
    """The SSE events of a streamed response, one ``bytes`` per event."""
    sequence = 0

    def event(type_: str, **fields: Any) -> bytes:
        nonlocal sequence
        out = sse({"type": type_, "sequence_number": sequence, **fields})
        sequence += 1
        return out

    lifecycle = partial(_response, ask, response_id=response_id, created=created, model=model)
    yield event("response.created", response=lifecycle("in_progress", []))
    yield event("response.in_progress", response=lifecycle("in_progress", []))
    items = plan_items(plan, new_item_id)
    for index, item in enumerate(items):
        at = {"item_id": item.id, "output_index": index}
        if item.kind == "reasoning":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={"id": item.id, "type": "reasoning", "summary": []},
            )
            summary = {**at, "summary_index": 0}
            empty = {"type": "summary_text", "text": ""}
            yield event("response.reasoning_summary_part.added", **summary, part=empty)
            for piece in pieces(item.text, chunk_size):
                yield event("response.reasoning_summary_text.delta", **summary, delta=piece)
            yield event("response.reasoning_summary_text.done", **summary, text=item.text)
            cut = {} if item.complete else {"status": "incomplete"}
            whole = {"type": "summary_text", "text": item.text}
            yield event("response.reasoning_summary_part.done", **summary, part=whole, **cut)
        elif item.kind == "message":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={
                    "id": item.id,
                    "type": "message",
                    "status": "in_progress",
                    "content": [],
                    "role": "assistant",
                },
            )
            content = {**at, "content_index": 0}
            yield event("response.content_part.added", **content, part=text_part(""))
            for piece in pieces(item.text, chunk_size):
                yield event("response.output_text.delta", **content, delta=piece, logprobs=[])
            yield event("response.output_text.done", **content, text=item.text, logprobs=[])
            yield event("response.content_part.done", **content, part=text_part(item.text))
        else:
            yield from call_events(item, index, event, chunk_size)
        yield event("response.output_item.done", output_index=index, item=item.final())
    status, reason = _terminal(plan)
    final = lifecycle(
        status, [item.final() for item in items], _usage(plan, ask.input_tokens), reason
    )
    yield event(f"response.{status}", response=final)


# -- failures inside a stream ---------------------------------------------------------------

SERVER_ERROR_MESSAGE = "The server had an error while processing your request. Sorry about that!"


def error_event(
    sequence_number: int, code: str = "server_error", message: str = SERVER_ERROR_MESSAGE
) -> bytes:
    """The ``error`` event (flat: ``code``, ``message``, ``param``)."""
    return sse(
        {
            "type": "error",
            "sequence_number": sequence_number,
            "code": code,
            "message": message,
            "param": None,
        }
    )


def failed_event(
    created: Mapping[str, Any],
    sequence_number: int,
    code: str = "server_error",
    message: str = SERVER_ERROR_MESSAGE,
) -> bytes:
    """``response.failed`` for the response that ``created`` (a ``response.created``
    event's object) opened: the same response, ``status: "failed"`` and the error."""
    base = created.get("response")
    failed = dict(base) if isinstance(base, Mapping) else {}
    failed.update(status="failed", error={"code": code, "message": message})
    return sse({"type": "response.failed", "sequence_number": sequence_number, "response": failed})
