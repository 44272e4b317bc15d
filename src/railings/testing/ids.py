"""Provider-shaped identifiers: ``chatcmpl-…``, ``call_…``, ``resp_…``, ``msg_01…``, ``toolu_01…``,
``req_…``.

Random by default; a script's ``seed`` makes every id of a server run
reproducible, which keeps test failures readable.
"""

from __future__ import annotations

import base64
import random
import string

__all__ = ["Ids"]

_ALNUM = string.ascii_letters + string.digits
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_HEX = "0123456789abcdef"


class Ids:
    """A source of ids shaped like each provider's; the same ``seed`` gives the same ids in
    the same order (None: random)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def _token(self, n: int, alphabet: str) -> str:
        return "".join(self._rng.choice(alphabet) for _ in range(n))

    # OpenAI
    def chat_completion(self) -> str:
        """A Chat Completions id: ``chatcmpl-`` and 29 letters or digits."""
        return "chatcmpl-" + self._token(29, _ALNUM)

    def openai_call(self) -> str:
        """An OpenAI tool call id (also a Responses function call's ``call_id``): ``call_`` and 24
        letters or digits."""
        return "call_" + self._token(24, _ALNUM)

    def openai_request(self) -> str:
        """An OpenAI request id (``x-request-id``): ``req_`` and 32 hex digits."""
        return "req_" + self._token(32, _HEX)

    # OpenAI Responses: the response and each output item (``msg_``, ``rs_``, ``fc_``)
    # carry 50 hex digits; a function call's ``call_id`` is an ``openai_call``.
    def response(self) -> str:
        """A Responses API response id: ``resp_`` and 50 hex digits."""
        return "resp_" + self._token(50, _HEX)

    def response_item(self, prefix: str) -> str:
        """A Responses output item id: ``{prefix}_`` and 50 hex digits (``msg``, ``rs``, ``fc``)."""
        return f"{prefix}_" + self._token(50, _HEX)

    # Anthropic
    def message(self) -> str:
        """An Anthropic message id: ``msg_01`` and 22 base58 characters."""
        return "msg_01" + self._token(22, _BASE58)

    def anthropic_tool(self) -> str:
        """An Anthropic tool use id: ``toolu_01`` and 22 base58 characters."""
        return "toolu_01" + self._token(22, _BASE58)

    def anthropic_request(self) -> str:
        """An Anthropic request id (``request-id``): ``req_011C`` and 20 base58 characters."""
        return "req_011C" + self._token(20, _BASE58)

    def signature(self) -> str:
        """A thinking block's signature: 96 random bytes in base64 (opaque, as Anthropic's)."""
        return base64.b64encode(self._rng.randbytes(96)).decode("ascii")

    # Gemini, Bedrock, Ollama
    def gemini_response(self) -> str:
        """A Gemini ``responseId``: 23 letters or digits (as ``ymmLabjHPMKE1PIPpJeV6Ac``)."""
        return self._token(23, _ALNUM)

    def bedrock_tool(self) -> str:
        """A Bedrock ``toolUseId``: ``tooluse_`` and 22 letters or digits."""
        return "tooluse_" + self._token(22, _ALNUM)

    def ollama_call(self) -> str:
        """An Ollama tool call id: ``call_`` and 8 lower-case letters or digits."""
        return "call_" + self._token(8, "abcdefghijklmnopqrstuvwxyz0123456789")

    def uuid(self) -> str:
        """A UUID-shaped request id (Bedrock's ``x-amzn-requestid``, Gemini's calls)."""
        h = self._token(32, _HEX)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
