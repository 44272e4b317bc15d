"""``railings.inspect`` for the Gemini, Bedrock and Ollama clients' objects, duck-typed.

Read without importing ``google-genai``, ``boto3`` or ``ollama``:

* a google-genai ``GenerateContentResponse`` (``to_json_dict()`` when it has it, else
  ``model_dump``), or its dict in either spelling -- the wire's camelCase or
  ``model_dump()``'s snake_case, whose ``thought_signature`` is bytes -- or a list of
  the chunks ``generate_content_stream`` yielded;
* boto3 ``converse_stream`` events (``{"messageStart": {...}}``,
  ``{"contentBlockDelta": {...}}`` ..., an exception as ``{"throttlingException":
  {...}}``), as a list, or the response dict whose ``"stream"`` holds them;
* an ollama ``ChatResponse`` or ``GenerateResponse`` (``model_dump``) or its dict, or a
  list of the chunks ``chat(stream=True)`` or ``generate(stream=True)`` yielded.

Each object goes through the wire's own decoder
(:mod:`railings.providers.gemini.decoder`, :mod:`railings.providers.bedrock.decoder`,
:mod:`railings.providers.ollama.decoder`), so the proof rule is the wire's, not taken
as given: the chunks must carry it (a last ``finishReason``, ``messageStop``,
``done: true``); an object without it -- one chunk from mid-stream -- is judged
interrupted.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from railings.events import ProviderErrorEvent, StreamEvent, Unknown
from railings.providers import bedrock, gemini, ollama
from railings.providers.bedrock.decoder import (
    ERROR_CLASSES,
    ERROR_STATUS,
    EVENT_HANDLERS,
    BedrockDecoder,
)
from railings.providers.gemini.decoder import GeminiDecoder
from railings.providers.ollama.decoder import OllamaDecoder
from railings.wire._json import as_int

__all__ = ["read"]

# Keys whose values are the model's or the caller's data, not the API's fields: their
# keys are never respelled.
_DATA_KEYS = frozenset({"args", "response", "partialArgs", "partial_args"})
_GEMINI_KEYS = frozenset(
    {"candidates", "promptFeedback", "prompt_feedback", "usageMetadata", "usage_metadata"}
)


def read(obj: Any) -> tuple[str, list[StreamEvent]] | None:
    """The wire and the normalized events of ``obj`` when it is one of these clients'
    objects (the module docstring); None for anything else."""
    items = _items(obj)
    if not items:
        return None
    first = items[0]
    if _GEMINI_KEYS & first.keys():
        return gemini.SPEC.name, _gemini(items)
    if "done" in first and ("message" in first or "response" in first):  # chat, generate
        return ollama.SPEC.name, _ollama(items)
    if len(first) == 1 and _bedrock_kind(next(iter(first))):
        return bedrock.SPEC.name, _bedrock(items)
    return None


def _items(obj: Any) -> list[dict[str, Any]]:
    if isinstance(obj, Mapping) and isinstance(obj.get("stream"), Iterable):
        obj = obj["stream"]  # a boto3 converse_stream response
    single = isinstance(obj, Mapping | str | bytes) or not isinstance(obj, Iterable)
    if single or hasattr(obj, "model_dump") or hasattr(obj, "to_json_dict"):
        one = _as_dict(obj)
        return [] if one is None else [one]
    out: list[dict[str, Any]] = []
    for item in obj:
        value = _as_dict(item)
        if value is None:
            return []
        out.append(value)
    return out


def _as_dict(obj: Any) -> dict[str, Any] | None:
    if isinstance(obj, Mapping):
        return dict(obj)
    to_json = getattr(obj, "to_json_dict", None)  # google-genai: the wire's spelling
    if callable(to_json):
        value = to_json()
        return value if isinstance(value, dict) else None
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        value = dump(warnings=False)  # SDK models may hold types newer than their unions
        return value if isinstance(value, dict) else None
    return None


# -- Gemini --------------------------------------------------------------------------------


def _gemini(items: list[dict[str, Any]]) -> list[StreamEvent]:
    decoder = GeminiDecoder()
    out: list[StreamEvent] = []
    for item in items:
        out += decoder.feed_object(_wire(item, respell=True))
    return out + decoder.close()


def _wire(value: Any, *, respell: bool) -> Any:
    """An SDK's value as the wire spells it: bytes (boto3's blobs, google-genai's thought
    signatures) in base64; with ``respell``, ``model_dump()``'s snake_case keys in
    camelCase, the data under ``args`` / ``response`` kept as is."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if respell and isinstance(key, str):
                out[_camel_key(key)] = item if key in _DATA_KEYS else _wire(item, respell=True)
            else:
                out[key] = _wire(item, respell=respell)
        return out
    if isinstance(value, list):
        return [_wire(item, respell=respell) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


# -- Bedrock -------------------------------------------------------------------------------


def _bedrock_kind(key: object) -> bool:
    return isinstance(key, str) and (key in EVENT_HANDLERS or key.endswith("Exception"))


def _bedrock(items: list[dict[str, Any]]) -> list[StreamEvent]:
    decoder = BedrockDecoder()
    out: list[StreamEvent] = []
    for item in items:
        if len(item) != 1:
            out.append(Unknown(name="bedrock:event"))
            continue
        ((kind, payload),) = item.items()
        payload = _wire(payload, respell=False) if isinstance(payload, Mapping) else {}
        handler = EVENT_HANDLERS.get(kind)
        if handler is not None:
            out += handler(decoder, payload)
        elif kind in ERROR_CLASSES or kind.endswith("Exception"):
            out.append(
                ProviderErrorEvent(
                    message=str(payload.get("message") or kind),
                    provider_type=kind,
                    status=as_int(payload.get("originalStatusCode")) or ERROR_STATUS.get(kind),
                )
            )
        else:
            out.append(Unknown(name=f"bedrock:{kind}"))
    return out + decoder.close()


# -- Ollama --------------------------------------------------------------------------------


def _ollama(items: list[dict[str, Any]]) -> list[StreamEvent]:
    decoder = OllamaDecoder()
    out: list[StreamEvent] = []
    for item in items:
        # ``model_dump()`` keeps unset fields as None: the wire leaves them out.
        line = {key: value for key, value in item.items() if value is not None}
        out += decoder.feed(json.dumps(line, default=str))
        if any(isinstance(e, ProviderErrorEvent) for e in out):
            break
    return out + decoder.close()
