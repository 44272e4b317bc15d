"""Amazon Bedrock ConverseStream (``"bedrock"``).

``POST {base_url}/model/{modelId}/converse-stream``.

The answer is ``application/vnd.amazon.eventstream`` binary frames, both CRCs
checked (:mod:`railings.wire.eventstream`, :mod:`railings.providers.bedrock.decoder`). The proof
of termination is the ``messageStop`` event; the ``metadata`` event (usage) comes
after it and is no proof alone. Exceptions arrive as ``:message-type: exception``
frames, typed by ``:exception-type`` (:data:`BEDROCK_ERROR_TYPES`). Tool input arrives
as raw JSON text fragments (strict parsing applies); tool results go back as
``toolResult`` blocks leading a user message (:mod:`railings.providers.bedrock.encoder`).

Authentication: a Bedrock API key is a bearer token (``AWS_BEARER_TOKEN_BEDROCK``, as
boto3 reads it) and needs nothing else; SigV4 signing is the transport's optional
extra. The base URL is regional, ``https://bedrock-runtime.{region}.amazonaws.com``,
the region from ``AWS_REGION`` or ``AWS_DEFAULT_REGION`` (``us-east-1`` by default);
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` replaces it, as it does for boto3.
"""

from __future__ import annotations

from typing import Any

from railings.conversation import ToolResult
from railings.providers.base import (
    Detection,
    EncodeRequest,
    Framing,
    Proof,
    ProviderDecoder,
    ProviderSpec,
    ScriptedShape,
    StopReasons,
)
from railings.providers.bedrock.decoder import (
    CONTENT_TYPE,
    ERROR_CLASSES,
    MESSAGE_STOP,
    STOP_REASONS,
    BedrockDecoder,
)
from railings.providers.bedrock.encoder import bedrock_body, bedrock_tool_result
from railings.wire.eventstream import looks_like_eventstream

__all__ = ["BEDROCK_ERROR_TYPES", "SPEC", "STOP_REASONS"]

# The exception types (``:exception-type``) and their classes: throttling, service
# unavailable, internal, model stream error (HTTP 424 in the API reference: the model
# failed mid-stream; retried, as the AWS SDKs retry it), model timeout and model not
# ready pass with time; validation, access denied and resource not found never do.
BEDROCK_ERROR_TYPES = ERROR_CLASSES


def _decoder(choice: int = 0) -> ProviderDecoder:
    # One message per stream: no choices to pick from.
    return BedrockDecoder()


def _encode(request: EncodeRequest) -> dict[str, Any]:
    # The model is in the request path (ProviderSpec.path_for), not the body.
    return bedrock_body(
        request.messages, max_tokens=request.max_tokens, tools=request.tools, extra=request.extra
    )


def _tool_result(result: ToolResult, call_type: str) -> list[dict[str, Any]]:
    # One toolResult block; the encoder puts a turn's results first in one user message.
    return [bedrock_tool_result(result)]


SPEC = ProviderSpec(
    name="bedrock",
    title="Amazon Bedrock ConverseStream",
    request_path="/model/{model}/converse-stream",
    framing=Framing.EVENTSTREAM,
    content_types=(CONTENT_TYPE,),
    path_suffixes=("/converse-stream",),
    default_base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    # On-demand in the regions Bedrock serves, tool use included (Converse API).
    default_model="amazon.nova-lite-v1:0",
    regional_base_url="https://bedrock-runtime.{region}.amazonaws.com",
    region_env=("AWS_REGION", "AWS_DEFAULT_REGION"),
    usage_after_proof=True,  # metadata (usage, metrics) follows messageStop
    base_url_env="AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    api_key_env="AWS_BEARER_TOKEN_BEDROCK",
    sigv4_service="bedrock",  # without the token: SigV4 (railings.transport.sigv4)
    auth_header="authorization",
    version_header=None,
    request_id_header="x-amzn-requestid",
    gen_ai_name="aws.bedrock",
    decoder=_decoder,
    encode=_encode,
    tool_result=_tool_result,
    asks_for_usage=False,
    proof=Proof(
        markers=frozenset({MESSAGE_STOP}),
        events=frozenset({MESSAGE_STOP}),  # the :event-type header
    ),
    stop_reasons=StopReasons(
        wire=STOP_REASONS,
        nearest={"refusal": "content_filtered", "pause_turn": "end_turn"},
    ),
    error_types=BEDROCK_ERROR_TYPES,
    detection=Detection(prefix=looks_like_eventstream),
    numbered=False,
    scripted=ScriptedShape(lead=2, seams=2),
)
