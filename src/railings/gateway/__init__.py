"""``railings gateway``: the proof rule for every client, in any language, over HTTP.

::

    railings gateway --upstream https://api.openai.com      # then base URL http://127.0.0.1:PORT/v1

    # or deploy the ASGI app with your own server:
    #   uvicorn --factory 'railings.gateway:app'   (upstream from $RAILINGS_GATEWAY_UPSTREAM)

See :mod:`railings.gateway.asgi` for what happens to each request,
:mod:`railings.gateway.judge` for each kind of stream, and docs/GATEWAY.md.
"""

from __future__ import annotations

from railings.gateway.asgi import HEALTH_PATH, METRICS_PATH, Gateway, app
from railings.gateway.judge import Ending, StreamJudge
from railings.gateway.metrics import Metrics

__all__ = ["HEALTH_PATH", "METRICS_PATH", "Ending", "Gateway", "Metrics", "StreamJudge", "app"]
