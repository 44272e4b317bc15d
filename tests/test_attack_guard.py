"""Attacks on the guard inside the official SDKs, through a real server on 127.0.0.1.

The guard must never let an SDK end a turn the reader refuses: where the SDK's own
rule for the end is laxer than the reader's (the openai SDK stops at any data that
*starts with* ``[DONE]`` and closes the body), the guard has to speak before the SDK
stops, because a body closed by its caller raises nothing.
"""

from __future__ import annotations

import openai
import pytest

from _server import CannedServer, Reply, openai_text
from railings import accelerations, guard
from railings.replay import replay
from railings.turn.model import Outcome

# Spellings of the last event that the openai SDK takes for [DONE] and the reader refuses.
NEAR_PROOFS = [b"data: [DONE] \n\n", b"data: [DONE]x\n\n", b"data: [DONE]\ndata: {}\n\n"]


@pytest.mark.parametrize("accelerated", [True, False], ids=["accelerated", "plain"])
@pytest.mark.parametrize("last", NEAR_PROOFS, ids=["space", "suffix", "two-lines"])
def test_attack_a_near_proof_the_reader_refuses_is_not_a_finished_turn(
    last: bytes, accelerated: bool
) -> None:
    chunks = [*openai_text(["hello"], done=False), last]
    body = b"".join(chunks)
    assert replay(body, provider="openai").turn.outcome is not Outcome.COMPLETE
    with accelerations.override(accelerated), CannedServer() as server:
        server.push(Reply(chunks=chunks))
        client = guard.install(
            openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)
        )
        try:
            with pytest.raises(openai.APIError) as raised:
                for _ in client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                ):
                    pass
        finally:
            client.close()
    assert guard.interruption(raised.value) is not None
