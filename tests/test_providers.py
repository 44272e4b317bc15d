"""The provider registry: every spec whole and coherent, and no provider table elsewhere.

A spec is the one place a wire format is described (railings.providers). These tests
list the specs, check that each fills every field and that the fields agree with each
other and with the rest of the package (paths route back, the inverse stop-reason map
inverts the forward one, the decoder reads the provider's own captures, detection
recognises them), and scan the source so that no module outside ``providers/`` keeps a
table or a branch keyed by provider names.
"""

from __future__ import annotations

import ast
import dataclasses
import pickle
import typing
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import railings
from conftest import CORPUS, REAL, RESPONSES, manifest
from railings import classify, telemetry
from railings.conversation import Message, ToolResult, User
from railings.errors import ConfigurationError, ProviderError
from railings.events import StreamEvent, TerminationProof, Unknown
from railings.providers import (
    FALLBACK,
    KEY_PICKS,
    NAMES,
    SPECS,
    EncodeRequest,
    Framing,
    ProviderName,
    ProviderSpec,
    anthropic,
    bedrock,
    detect,
    error_types,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
    provider_for_path,
    spec,
    spec_for_path,
    stop_reason_on,
    stop_reasons,
)
from railings.providers.anthropic.encoder import anthropic_messages_body
from railings.providers.bedrock.encoder import bedrock_body
from railings.providers.gemini.encoder import gemini_body
from railings.providers.ollama.encoder import ollama_body
from railings.providers.openai_chat.encoder import openai_chat_body
from railings.providers.openai_responses.encoder import openai_responses_body
from railings.replay import replay
from railings.stops import Stop
from railings.transport.config import ClientConfig
from railings.turn.model import Termination
from railings.turn.reader import StreamReader
from railings.turn.stop_reason import normalize_stop_reason
from railings.wire.eventstream import EventStreamDecoder
from railings.wire.ndjson import NDJSONDecoder
from railings.wire.sse import ServerSentEvent, SSEDecoder

MODULES = {
    "openai": openai_chat,
    "anthropic": anthropic,
    "openai-responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
    "ollama": ollama,
}
_CORPUS_NAMES = {"openai-chat": "openai", "anthropic-messages": "anthropic"}
# The wires with a corpus folder of their own (tests/corpus/<name>/MANIFEST.tsv).
_OWN_FOLDERS = ("gemini", "bedrock", "ollama")

# The wires the transport's ClientConfig and the test kit speak on this branch. The
# transport reads ProviderSpec.path_for, key_required and the regional base URL, and
# the kit adds a KitWire per spec, in their own work on the new wires: each extends
# its tuple there.
TRANSPORT_SPEAKS = ("openai", "anthropic", "openai-responses")
KIT_SPEAKS = ("openai", "anthropic", "openai-responses", "gemini", "bedrock", "ollama")


def own_captures(name: str) -> list[Path]:
    """The provider's real captures in tests/corpus."""
    if name == "openai-responses":
        return sorted(RESPONSES.glob("*.sse"))
    if name in _OWN_FOLDERS:
        folder = CORPUS / name
        lines = (folder / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
        return [folder / line.split("\t")[0] for line in lines[1:] if line.strip()]
    return [REAL / row["file"] for row in manifest() if _CORPUS_NAMES.get(row["provider"]) == name]


def decode(s: ProviderSpec, body: bytes) -> list[StreamEvent]:
    """``body`` framed as the spec says and read by its decoder, ``close()`` included."""
    framer: SSEDecoder | EventStreamDecoder | NDJSONDecoder = {
        Framing.SSE: SSEDecoder,
        Framing.EVENTSTREAM: EventStreamDecoder,
        Framing.NDJSON: NDJSONDecoder,
    }[s.framing]()
    decoder = s.decoder(0)
    frames = [*framer.feed(body), *framer.close()]
    return [e for frame in frames for e in decoder.feed(frame)] + decoder.close()


# -- the list ------------------------------------------------------------------------------


def test_the_registry_lists_each_provider_once_in_its_module() -> None:
    assert NAMES == ("openai", "anthropic", "openai-responses", "gemini", "bedrock", "ollama")
    assert typing.get_args(ProviderName) == NAMES  # the one name type lists them all
    assert [s.name for s in SPECS] == list(NAMES)
    for s in SPECS:
        assert MODULES[s.name].SPEC is s  # one module, one spec
        assert spec(s.name) is s
    assert FALLBACK is openai_chat.SPEC
    with pytest.raises(ConfigurationError, match="unknown provider 'mistral'"):
        spec("mistral")


# The wires the gateway judges (it answers a Partial or a cut call in their own shape);
# the others pass through it untouched.
GATEWAY_JUDGES = ("openai", "anthropic", "openai-responses")


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_every_field_is_filled(s: ProviderSpec) -> None:
    # Optional by nature: a version header, a region (regional services only), more key
    # variables than one, a SigV4 signing name (AWS only), and the error map of a wire
    # whose errors carry no type (Ollama: the status classifies).
    optional = {
        "version_header",
        "regional_base_url",
        "region_env",
        "api_key_envs",
        "sigv4_service",
    }
    if s.name == "ollama":
        optional.add("error_types")
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if f.name == "version_header":
            assert value is None or (len(value) == 2 and all(value)), f.name
            continue
        if f.name == "whole_body":  # only a wire with a non-streamed body a reader knows
            assert value is None or callable(value), f.name
            continue
        if f.name == "sequence_number":  # only a wire whose events are numbered
            continue
        if f.name == "resumption":  # only a numbered wire whose provider keeps responses
            assert value is None or (s.numbered and s.sequence_number is not None), f.name
            continue
        if f.name == "error_shapes":  # only the wires the gateway judges
            assert (value is None) == (s.name not in GATEWAY_JUDGES), f.name
            continue
        assert value is not None, f.name
        if isinstance(value, str | tuple | dict) and f.name not in optional:
            assert value, f"{s.name}.{f.name} is empty"
    assert callable(s.decoder) and callable(s.encode) and callable(s.tool_result)
    assert s.proof.markers
    assert s.proof.data | s.proof.events | s.proof.types | s.proof.fields, "the proof is named"
    assert s.stop_reasons.wire
    assert s.error_types or s.name == "ollama"
    d = s.detection
    assert d.events or d.event_prefixes or d.data or d.markers or d.prefix
    assert s.scripted.lead >= 1 and s.scripted.seams >= 1
    # A numbered wire says how its numbers are read from bytes; no other wire has one.
    assert s.numbered == (s.sequence_number is not None)
    assert s.sequence_numbers(b'data: {"sequence_number":7}\n\n') == ([7] if s.numbered else [])
    # Only a server commonly run locally without a key defaults to plain HTTP (loopback).
    assert s.default_base_url.startswith("https://" if s.key_required else "http://127.0.0.1:")
    assert bool(s.regional_base_url) == bool(s.region_env)
    if s.regional_base_url:
        assert "{region}" in s.regional_base_url
    for name in (s.base_url_env, s.api_key_env, *s.region_env):
        assert name.isupper() and name.replace("_", "").isalnum(), name
    assert s.content_types and all("/" in c for c in s.content_types)
    assert {Framing.SSE: "text/event-stream"}.get(s.framing, s.content_types[0]) == (
        s.content_types[0]
    )


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_the_request_path_names_the_model_where_the_wire_wants_it(s: ProviderSpec) -> None:
    path = s.path_for("us.anthropic.claude:0/x")
    if "{model}" in s.request_path:
        assert "us.anthropic.claude%3A0%2Fx" in path and "{" not in path
    else:
        assert path == s.request_path
    assert spec_for_path(urlsplit(s.default_base_url + path).path) is s


# -- coherence -----------------------------------------------------------------------------


@pytest.mark.parametrize("s", [spec(n) for n in TRANSPORT_SPEAKS], ids=TRANSPORT_SPEAKS)
def test_a_specs_hooks_are_named_functions_with_their_signatures(s: ProviderSpec) -> None:
    # The hooks pickle by name (to another process), and the decoder picks the first
    # choice unless told otherwise.
    for hook in (s.decoder, s.encode, s.tool_result):
        assert pickle.loads(pickle.dumps(hook)) is hook
    assert type(s.decoder()) is type(s.decoder(choice=0))
    result = s.tool_result(result=ToolResult(call_id="c", content="ok"), call_type="function")
    assert result
    if "{model}" not in s.request_path:
        assert s.path_for(None) == s.request_path  # type: ignore[arg-type]  # never read


@pytest.mark.parametrize("s", [spec(n) for n in TRANSPORT_SPEAKS], ids=TRANSPORT_SPEAKS)
def test_paths_route_back_to_the_spec(s: ProviderSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(s.base_url_env, raising=False)
    url = ClientConfig(provider=s.name, model="m", api_key="k").url
    assert url == s.default_base_url + s.request_path
    path = urlsplit(url).path
    assert spec_for_path(path) is s
    assert provider_for_path(path) == s.name
    assert provider_for_path("/gateway/prefix" + path + "/?x=1") == s.name  # any prefix
    for suffix in s.path_suffixes:
        assert spec_for_path("/any" + suffix) is s
    assert spec_for_path("/v1/models") is None


@pytest.mark.parametrize("s", [spec(n) for n in TRANSPORT_SPEAKS], ids=TRANSPORT_SPEAKS)
def test_the_client_authenticates_as_the_spec_says(
    s: ProviderSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(s.api_key_env, "sk-from-env")
    monkeypatch.setenv(s.base_url_env, "http://127.0.0.1:9/base")
    config = ClientConfig(provider=s.name, model="m")
    assert config.api_key == "sk-from-env" and config.key_variable == s.api_key_env
    assert config.base_url == "http://127.0.0.1:9/base"
    headers = config.request_headers()
    expected = "Bearer sk-from-env" if s.auth_header == "authorization" else "sk-from-env"
    assert headers[s.auth_header] == expected
    if s.version_header is not None:
        assert headers[s.version_header[0]] == s.version_header[1]


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_the_inverse_stop_reason_map_inverts_the_forward_one(s: ProviderSpec) -> None:
    reasons = s.stop_reasons
    table = stop_reasons()
    for spelling, normalized in reasons.wire.items():
        assert table[spelling.lower()] == normalized  # an entry of the registry's union
        assert normalize_stop_reason(spelling) == normalized
        assert reasons.to_wire(spelling) == spelling  # a spelling of this wire stays
        assert stop_reason_on(s, spelling) == spelling
    for normalized, spelling in reasons.inverse.items():
        assert reasons.wire[spelling] == normalized
        assert reasons.to_wire(normalized) == spelling
    for normalized, spelling in reasons.nearest.items():
        assert normalized not in reasons.inverse  # only what the wire cannot say
        assert spelling in reasons.wire or spelling in reasons.derived
    # Every normalized stop reason, and every wire's spelling of one, has a spelling on
    # every wire (the scripted server can send any forced stop reason).
    for normalized in set(table.values()):
        assert reasons.to_wire(normalized) is not None, normalized
    for spelling in table:
        assert stop_reason_on(s, spelling) is not None, spelling
        assert stop_reason_on(s, spelling.upper()) is not None, spelling
    assert reasons.to_wire("no-such-reason") is None
    assert stop_reason_on(s, "no-such-reason") is None


def test_each_provider_module_owns_its_stop_reason_spellings() -> None:
    from railings.turn import stop_reason

    seen: dict[str, Stop] = {}
    for s in SPECS:
        own = MODULES[s.name].STOP_REASONS
        assert s.stop_reasons.wire is own  # the module's public table, not a copy
        for spelling, normalized in own.items():
            assert isinstance(normalized, Stop), spelling
            assert seen.setdefault(spelling.lower(), normalized) is normalized, spelling
    # The turn layer normalizes with the union the registry gives it, and nothing else.
    assert stop_reason.TABLE == stop_reasons() == seen
    assert stop_reason.Stop is Stop and railings.Stop is Stop


def test_the_scripted_server_sends_the_inverse_of_each_spec() -> None:
    from railings.testing.script import (
        anthropic_stop_reason,
        openai_finish_reason,
        responses_status,
    )

    assert openai_finish_reason("end_turn") == "stop"
    assert openai_finish_reason("max_tokens") == "length"
    assert anthropic_stop_reason("tool_calls") == "tool_use"
    assert anthropic_stop_reason("content_filter") == "refusal"
    assert responses_status("length") == ("incomplete", "max_output_tokens")
    assert responses_status("tool_use") == ("completed", None)
    assert responses_status("weird") == ("incomplete", "weird")


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_the_framing_and_decoder_read_the_providers_own_captures(s: ProviderSpec) -> None:
    captures = own_captures(s.name)
    assert captures
    for path in captures:
        events = decode(s, path.read_bytes())
        proofs = [e for e in events if isinstance(e, TerminationProof)]
        assert all(s.is_proof(p) for p in proofs), path.name


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_the_decoder_and_proof_read_the_providers_own_captures(s: ProviderSpec) -> None:
    captures = own_captures(s.name)
    assert captures
    clean = 0
    for path in captures:
        body = path.read_bytes()
        reader = StreamReader(s.name)
        events = reader.feed(body)
        events += reader.close()  # Gemini's proof comes at EOF
        proofs = [e for e in events if isinstance(e, TerminationProof)]
        if reader.turn().termination is Termination.CLEAN:
            clean += 1
            assert len(proofs) == 1 and s.is_proof(proofs[0]), path.name
            assert proofs[0].marker in s.proof.markers
    assert clean  # the rule is exercised by real bytes


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_detection_recognises_each_providers_own_captures(s: ProviderSpec) -> None:
    for path in own_captures(s.name):
        result = replay(path.read_bytes())
        assert result.turn.provider == s.name, path.name


@pytest.mark.parametrize("s", SPECS, ids=NAMES)
def test_the_encoders_are_the_messages_modules(s: ProviderSpec) -> None:
    history: list[Message] = [User("hi"), ToolResult("call_1", "42")]
    request = EncodeRequest(model="m", messages=history, max_tokens=7)
    with_model = {
        "openai": openai_chat_body,
        "anthropic": anthropic_messages_body,
        "openai-responses": openai_responses_body,
        "ollama": ollama_body,
    }
    in_path = {"gemini": gemini_body, "bedrock": bedrock_body}  # the model is in the path
    if s.name in with_model:
        expected = with_model[s.name]("m", history, max_tokens=7)
    else:
        expected = in_path[s.name](history, max_tokens=7)
    assert s.encode(request) == expected
    # Only a wire that asks for usage carries the option (and only it may drop it).
    assert ("stream_options" in s.encode(request)) == s.asks_for_usage
    result = s.tool_result(ToolResult("call_1", "42", is_error=True), "function")
    assert result and "call_1" in repr(result) and "42" in repr(result)


def test_error_types_agree_and_are_classifications_table() -> None:
    seen: dict[str, type[ProviderError]] = {}
    for s in SPECS:
        for kind, cls in s.error_types.items():
            assert seen.setdefault(kind.lower(), cls) is cls, kind  # two specs never disagree
    assert classify.PROVIDER_TYPE_TABLE == error_types() == seen
    assert classify.class_for_provider_type("overloaded_error").__name__ == "Overloaded"
    assert classify.class_for_provider_type("insufficient_quota").__name__ == "QuotaExceeded"
    # Looked up whatever the case the wire writes them in.
    assert classify.class_for_provider_type("throttlingException").__name__ == "RateLimited"
    assert classify.class_for_provider_type("RESOURCE_EXHAUSTED").__name__ == "RateLimited"


def test_the_test_kit_speaks_every_spec() -> None:
    from railings.testing.wires import WIRES, kit_wire

    assert [w.spec.name for w in WIRES] == list(KIT_SPEAKS)
    for s in map(spec, KIT_SPEAKS):
        wire = kit_wire(s)
        assert wire.spec is s
        assert any(path.endswith(s.request_path) for path in wire.paths)
        assert all(spec_for_path(path) is s for path in wire.paths)


def test_telemetry_names_come_from_the_specs() -> None:
    assert {s.name: s.gen_ai_name for s in SPECS} == telemetry.GEN_AI_PROVIDERS
    assert telemetry.GEN_AI_PROVIDERS["openai-responses"] == "openai"


def test_the_clis_defaults_come_from_the_specs() -> None:
    from railings.cli import endpoint

    assert {s.name: s.default_model for s in SPECS} == endpoint.DEFAULT_MODELS
    assert endpoint.KEY_PICKS is KEY_PICKS
    # A key in the environment picks one wire for each variable a key-requiring spec
    # reads, the first spec in the registry that reads it; the help names each.
    keys = [s.api_key_env for s in KEY_PICKS]
    assert len(set(keys)) == len(keys)
    assert set(keys) == {s.api_key_env for s in SPECS if s.key_required}
    for picked in KEY_PICKS:
        assert picked.key_required
        assert next(s for s in SPECS if s.api_key_env == picked.api_key_env) is picked
        assert f"{picked.api_key_env} -> {picked.name}" in " ".join(
            endpoint.PROVIDER_CHOICE.split()
        )


# -- detection of a stream that opens with unknown event types ---------------------------

_ANTHROPIC_TURN = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"claude","content":[],"stop_reason":null,'
    b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
    b"event: content_block_start\n"
    b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
    b"event: content_block_stop\n"
    b'data: {"type":"content_block_stop","index":0}\n\n'
    b"event: message_delta\n"
    b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":2}}\n\n'
    b"event: message_stop\n"
    b'data: {"type":"message_stop"}\n\n'
)
# As in the anthropic SDK's ``unknown_events`` test: events of types no version knows
# come first, named and unnamed.
_UNKNOWN_FIRST = (
    b"event: completion\n"
    b'data: {"type":"completion","completion":"nothing","stop_reason":null}\n\n'
    b'data: {"type":"future_event_type","value":1}\n\n'
)


@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_a_stream_opening_with_unknown_events_is_detected_by_its_first_known_one(
    chunk_size: int | None,
) -> None:
    result = replay(_UNKNOWN_FIRST + _ANTHROPIC_TURN, chunk_size=chunk_size)
    turn = result.turn
    assert turn.provider == "anthropic"
    assert turn.termination is Termination.CLEAN and turn.text == "Hi"
    assert turn.unknown_events == 2  # applied and counted, never dropped
    assert turn.stop_reason == "end_turn"


def test_the_unknown_events_before_detection_come_out_in_order() -> None:
    reader = StreamReader("auto")
    assert reader.feed(_UNKNOWN_FIRST) == []  # undecided: held, not guessed
    assert not reader.terminated
    events = reader.feed(_ANTHROPIC_TURN)
    assert events[:2] == [
        Unknown(name="anthropic:completion"),
        Unknown(name="anthropic:future_event_type"),
    ]
    assert reader.terminated and reader.provider == "anthropic"


def test_a_stream_of_unknown_events_only_is_read_as_the_fallback() -> None:
    result = replay(_UNKNOWN_FIRST)
    assert result.turn.provider == FALLBACK.name
    assert result.turn.termination is Termination.ABRUPT  # no proof: interrupted


def test_held_events_are_bounded_then_the_fallback_reads_them() -> None:
    # Past the bound the stream is read as undetected streams always were: Chat
    # Completions from its first event (whose unknown data ends it abruptly there).
    many = b'data: {"type":"future_event_type"}\n\n' * 65
    reader = StreamReader("auto")
    reader.feed(many + _ANTHROPIC_TURN)
    reader.close()
    assert reader.provider == FALLBACK.name
    big = b"event: completion\ndata: " + b"x" * 200 + b"\n\n"
    reader = StreamReader("auto", max_event_size=300)
    reader.feed(big + big + _ANTHROPIC_TURN)  # 400 bytes to hold > one event's 300
    assert reader.provider == FALLBACK.name


def test_every_spec_is_asked_by_detection() -> None:
    from railings.providers import DETECTION_ORDER

    assert sorted(s.name for s in DETECTION_ORDER) == sorted(NAMES)


def test_detection_hints_per_event() -> None:
    def sse(event: str, data: str) -> ServerSentEvent:
        return ServerSentEvent(event=event, data=data, id="", retry=None)

    assert detect(sse("message", "[DONE]")) is openai_chat.SPEC
    assert detect(sse("message", '{"id":"c","choices":[]}')) is openai_chat.SPEC
    assert detect(sse("ping", "{}")) is anthropic.SPEC
    assert detect(sse("message", '{"type": "message_start"}')) is anthropic.SPEC
    assert detect(sse("response.created", "{}")) is openai_responses.SPEC
    assert detect(sse("message", '{"type":"response.created"}')) is openai_responses.SPEC
    assert detect(sse("completion", '{"type":"completion"}')) is None


# -- no provider table outside providers/ --------------------------------------------------

SRC = Path(railings.__file__).parent
PROVIDER_NAMES = frozenset(NAMES)

# Files that still keep a provider-keyed table or branch, each with why. Shrink this list:
# a file listed here that no longer keeps one fails the test too.
ALLOWED: dict[str, str] = {
    # Not wire names: the optional SDK packages named "openai" and "anthropic" (extras).
    "_extras.py": "SDK package names of the extras",
    "cli/demo.py": "SDK package names of the demo's clients",
    # Facts of the official SDKs, not of the wires: which SDK the demo compares on which
    # wire (its columns; ``railings matrix --client all`` covers every wire), and which
    # of the openai SDK's two APIs drives which of the two OpenAI wires.
    "matrix/compare.py": "the demo's (SDK client, wire) columns",
    "matrix/sdks.py": "the wires each official SDK client speaks, and its API for each",
    # Owned by people changing these files at the same time; to be switched to the specs
    # (ProviderSpec.encode, .auth_header, .proof ...) after their work is merged.
}


def provider_of(node: ast.expr | None) -> str | None:
    """The provider ``node`` names, or None: a provider name as a string (``"openai"``),
    a provider module's spec or its name however it was imported (``openai_chat.SPEC``,
    ``CHAT_SPEC.name``), or the registry asked for one by name (``spec("gemini")``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value in PROVIDER_NAMES else None
    if isinstance(node, ast.Attribute) and node.attr == "name":
        node = node.value  # a spec's name: the spec
    if isinstance(node, ast.Attribute) and node.attr == "SPEC":
        if isinstance(node.value, ast.Name) and node.value.id in _MODULE_NAMES:
            return _MODULE_NAMES[node.value.id]
        if isinstance(node.value, ast.Attribute) and node.value.attr in _MODULE_NAMES:
            return _MODULE_NAMES[node.value.attr]  # railings.providers.gemini.SPEC
    if isinstance(node, ast.Name) and (node.id == "SPEC" or node.id.endswith("_SPEC")):
        return node.id  # a spec imported under its own name: one provider, unnamed
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if called == "spec":
            return provider_of(node.args[0])
    return None


# The registry's modules, by the names they are imported under.
_MODULE_NAMES = {module.__name__.rpartition(".")[2]: name for name, module in MODULES.items()}


def _names(nodes: Sequence[ast.expr | None]) -> set[str]:
    """The providers ``nodes`` name; a tuple among them (a key of several parts) names
    what its parts name."""
    found: set[str] = set()
    for node in nodes:
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        found.update(p for p in map(provider_of, parts) if p is not None)
    return found


def provider_tables(source: str) -> list[tuple[int, str]]:
    """Where ``source`` keys something by provider: a dict whose keys name two or more
    providers (as strings, or by their specs), a ``Literal`` or another collection
    naming two or more, or a comparison or ``case`` with one."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and len(_names(node.keys)) >= 2:
            found.append((node.lineno, "a dict keyed by provider names"))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(_names(node.elts)) >= 2:
            found.append((node.lineno, "a Literal or collection of provider names"))
        elif isinstance(node, ast.Compare) and isinstance(
            node.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot
        ):
            if _names([node.left, *node.comparators]):
                found.append((node.lineno, "a comparison with a provider name"))
        elif isinstance(node, ast.MatchValue) and _names([node.value]):
            found.append((node.lineno, "a case on a provider name"))
    return sorted(found)


def test_the_scan_finds_each_kind_of_provider_table() -> None:
    source = (
        'A = {"openai": 1, "anthropic": 2}\n'
        'B = Literal["openai", "openai-responses"]\n'
        'if p == "openai-responses": pass\n'
        'match p:\n    case "anthropic": pass\n'
        'C = {"openai": 1}\n'  # one name is no table
        # Keyed by the specs instead of their names, however they were imported.
        "D = {openai_chat.SPEC.name: 1, anthropic.SPEC.name: 2}\n"  # line 7
        "E = {gemini.SPEC: 1, providers.bedrock.SPEC: 2}\n"
        'F = {spec("ollama").name: 1, CHAT_SPEC.name: 2}\n'
        "G = (anthropic.SPEC, openai_chat.SPEC)\n"  # line 10
        "if wire is gemini.SPEC: pass\n"
        'H = {("sdk", "openai"): 1, ("sdk", "anthropic"): 2}\n'  # keys of several parts
        "I = {s.name: s.default_model for s in SPECS}\n"  # derived from the registry
        "J = {openai_chat.SPEC.name: 1}\n"
    )
    assert sorted(line for line, _ in provider_tables(source)) == [1, 2, 3, 5, 7, 8, 9, 10, 11, 12]


def test_no_module_outside_providers_keeps_a_provider_table() -> None:
    offenders: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("providers/"):
            continue
        found = provider_tables(path.read_text(encoding="utf-8"))
        if found:
            offenders[rel] = [f"{rel}:{line}: {what}" for line, what in found]
    unexpected = [line for rel, lines in offenders.items() if rel not in ALLOWED for line in lines]
    assert not unexpected, "read railings.providers instead:\n" + "\n".join(unexpected)
    stale = sorted(set(ALLOWED) - set(offenders))
    assert not stale, f"no provider table left in {stale}: remove them from ALLOWED"


def test_the_wire_modules_stop_tables_agree_with_the_one_normalization() -> None:
    from railings.providers.bedrock import decoder as bedrock_wire
    from railings.providers.gemini import decoder as gemini_wire
    from railings.providers.ollama import decoder as ollama_wire

    for table in (gemini_wire.STOP_REASONS, bedrock_wire.STOP_REASONS, ollama_wire.STOP_REASONS):
        for spelling, normalized in table.items():
            if normalized in set(Stop):
                assert normalize_stop_reason(spelling) == normalized, spelling
            else:  # OTHER, IMAGE_OTHER, load ...: no normalized meaning, kept lower-cased
                assert normalize_stop_reason(spelling) == spelling.lower(), spelling
    # A stop the window forced is an output-limit cut; a botched call is its own reason.
    assert normalize_stop_reason("model_context_window_exceeded") == "max_tokens"
    assert normalize_stop_reason("MALFORMED_FUNCTION_CALL") == "malformed_tool_use"
    assert normalize_stop_reason("load") == "load"  # Ollama's lifecycle: kept as it is
