"""Which endpoint ``railings run`` and ``railings chat`` talk to (see PROVIDER_CHOICE):
the flags, else a key in the environment, else the embedded scripted model server."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from railings._extras import missing
from railings.cli._common import InputError, UsageError, chosen_profile
from railings.errors import ConfigurationError
from railings.providers import FALLBACK, KEY_PICKS, SPECS, ProviderName, spec
from railings.redact import redact
from railings.transport import ClientConfig, Timeouts

__all__ = [
    "DEFAULT_MODELS",
    "DEMO_MAX_TOKENS",
    "KEY_PICKS",
    "PROVIDER_CHOICE",
    "Endpoint",
    "endpoint_for",
    "workdir_of",
]

PROVIDER_CHOICE = """\
which endpoint: --demo forces the embedded scripted model; else --provider /
--base-url / --model first; else an API key in the environment picks the real
API (ANTHROPIC_API_KEY -> anthropic, OPENAI_API_KEY -> openai, GEMINI_API_KEY
-> gemini, AWS_BEARER_TOKEN_BEDROCK -> bedrock; the SDKs' base URL variables
are honoured, and OLLAMA_HOST for --provider ollama, which needs no key;
--provider bedrock without a token signs with AWS credentials, the bedrock
extra); else the embedded scripted model server starts in-process with a
demonstration script (no key, no network) in a fresh temporary working
directory. Either way, one line on stderr says where the turns go before the
first request. A provider's public API without its key is refused at once.

shell commands, and writes that configure later commands (.git/, Makefile,
.envrc, ...), ask for confirmation on a terminal; --yes allows all; without a
terminal nothing is confirmed unless --yes is given.
"""

# The CLI's default model for each wire (ProviderSpec.default_model), and which wire a
# key in the environment picks (KEY_PICKS): both from the provider registry.
DEFAULT_MODELS: dict[str, str] = {s.name: s.default_model for s in SPECS}
DEMO_MAX_TOKENS = 1024


# -- choosing the endpoint -----------------------------------------------------------------


@dataclass
class Endpoint:
    """Where the turns go: the client's configuration, the tools' working directory,
    and the line that tells the user (None: nothing to say)."""

    config: ClientConfig
    workdir: Path
    note: str | None


@contextlib.contextmanager
def endpoint_for(args: argparse.Namespace) -> Iterator[Endpoint]:
    """The endpoint the flags and environment choose, with the embedded server if none."""
    if args.demo and (args.provider or args.base_url or args.model):
        raise UsageError(
            "--demo uses the embedded scripted model: drop --provider/--base-url/--model"
        )
    explicit = args.provider or args.base_url or args.model
    provider: ProviderName | None = args.provider
    if provider is None and not explicit and not args.demo:
        picked = next((s for s in KEY_PICKS if os.environ.get(s.api_key_env)), None)
        provider = None if picked is None else picked.name
    timeouts = Timeouts(
        idle=args.idle_timeout, content_idle=args.content_idle, total=args.total_timeout
    )
    if provider is None and not explicit:
        if getattr(args, "resume", False):
            raise UsageError(
                "--resume: the embedded scripted model speaks Chat Completions, which keeps "
                "no response to read again; use it with --provider openai-responses"
            )
        from railings.testing import Script, ScriptedServer

        with ScriptedServer(Script.demo()) as server, contextlib.ExitStack() as stack:
            if args.workdir:
                workdir = workdir_of(args.workdir)
            else:
                workdir = Path(
                    stack.enter_context(tempfile.TemporaryDirectory(prefix="railings-demo-"))
                )
            config = ClientConfig(
                provider=FALLBACK.name,  # the server's Chat Completions
                model="railings-scripted-1",
                base_url=server.openai_base_url,
                api_key="demo",
                max_tokens=args.max_tokens or DEMO_MAX_TOKENS,
                timeouts=timeouts,
            )
            why = "--demo" if args.demo else "no API key in the environment"
            note = (
                f"{why}: using the embedded scripted model "
                f"(a demonstration, no network) at {server.url}, workdir {workdir}"
            )
            yield Endpoint(config, workdir, note)
        return
    provider = provider or FALLBACK.name
    named = getattr(args, "profile", None)  # --profile (railings probe has none)
    try:
        config = ClientConfig(
            provider=provider,
            model=args.model or spec(provider).default_model,
            base_url=args.base_url,
            max_tokens=args.max_tokens or 4096,
            timeouts=timeouts,
            profile=None if named is None else chosen_profile(named),
            resume=bool(getattr(args, "resume", False)),
        )
    except ConfigurationError as exc:
        raise UsageError(_as_typed(str(exc))) from None
    _refuse_without_key(config)
    where = redact(f"{provider} model {config.model} at {config.base_url} ({_auth_note(config)})")
    yield Endpoint(config, workdir_of(args.workdir or "."), where)


# The client's parameters as the command line spells them: an error names what the user typed.
_OPTIONS = {
    "base_url": "--base-url",
    "model": "--model",
    "max_tokens": "--max-tokens",
    "resume:": "--resume:",
}


def _as_typed(message: str) -> str:
    """``message`` with a leading parameter name of the client turned into its option."""
    name, space, rest = message.partition(" ")
    return f"{_OPTIONS[name]} {rest}" if space and name in _OPTIONS else message


def _public(config: ClientConfig) -> bool:
    """Is the base URL the provider's own public API (its default, or its region's)?"""
    wire = spec(config.provider)
    regional = wire.regional_base_url.replace("{region}", config.region or "")
    return config.base_url in (wire.default_base_url, regional)


def _refuse_without_key(config: ClientConfig) -> None:
    """A public API without its key answers 401: say so now, not after the network. A
    wire that signs requests instead (Bedrock's SigV4) is refused only without the
    signer's extra; one that needs no key (Ollama) never."""
    wire = spec(config.provider)
    if config.api_key or not wire.key_required or not _public(config):
        return
    if wire.sigv4_service and not missing("botocore"):
        from railings.transport.sigv4 import SigV4

        try:  # AWS credentials sign the requests: none found is a mistake to say now
            SigV4(config.region or "", service=wire.sigv4_service).check()
        except ConfigurationError as exc:
            raise InputError(f"--provider {config.provider}: {exc}") from None
        return
    also = " (or AWS credentials with pip install botocore)" if wire.sigv4_service else ""
    raise InputError(
        f"--provider {config.provider} needs {config.key_variable} in the environment{also} "
        f"(for {config.base_url}); --demo runs the embedded scripted model instead"
    )


def _auth_note(config: ClientConfig) -> str:
    """How the turns authenticate, for the line on stderr (never the key itself)."""
    if config.api_key:
        return f"key from {config.key_variable}"
    if spec(config.provider).sigv4_service:
        return f"SigV4, AWS credentials, region {config.region}"
    return "no key"


def workdir_of(path: str) -> Path:
    """``--workdir`` as a resolved directory; anything else is a usage error."""
    workdir = Path(path).expanduser()
    if not workdir.is_dir():
        raise UsageError(f"--workdir {path}: not a directory")
    return workdir.resolve()
