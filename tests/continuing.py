"""What the continuation tests share: the story the scripted model tells, the
conversation that asked for it, and a client's configuration for a server's URL."""

from __future__ import annotations

from railings.messages import System, User
from railings.transport import ClientConfig

STORY = "Once upon a time there was a king who lived in a castle by the sea."
HISTORY = (System("Be brief."), User("Tell me a story."))
KEY = "sk-test-continue-0000"


def config(provider: str, url: str, max_tokens: int = 1024) -> ClientConfig:
    """A client of ``provider``'s wire at the server (or proxy) ``url``."""
    base = url + "/v1" if provider == "openai" else url
    return ClientConfig(
        provider,  # type: ignore[arg-type]
        "m",
        max_tokens=max_tokens,
        base_url=base,
        api_key=KEY,
    )
