"""AWS Signature Version 4 for Bedrock, by botocore's own signer (the ``bedrock`` extra).

Bedrock takes either an API key as a bearer token (``AWS_BEARER_TOKEN_BEDROCK``: no
extra dependency, see :class:`~railings.transport.config.ClientConfig`) or a request
signed with the caller's AWS credentials. Signing is never written here: the
canonical request, the string to sign and the key derivation are botocore's
:class:`botocore.auth.SigV4Auth`, the signer boto3 itself uses, and the credentials
come from botocore's default chain (environment, shared files, SSO, the instance
role ...), as ``boto3.client("bedrock-runtime")`` finds them.

:class:`SigV4` is an ``httpx2.Auth``: the client signs every request it sends,
retries included (each gets a fresh ``X-Amz-Date``, and refreshed credentials once
the chain's expire). The secret key never leaves botocore; it, the access key id and
the session token are registered with the secret registry before a request carries
them, and ``authorization`` / ``x-amz-security-token`` are secret headers, so no
error, log line or journal entry shows them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx2

from railings._extras import require
from railings.errors import ConfigurationError
from railings.redact import register_secret

__all__ = ["SERVICE", "SIGNED_HEADERS", "SigV4"]

# The signing name of the bedrock-runtime endpoints (botocore's service model says so).
SERVICE = "bedrock"
# The request headers the signature covers, besides the host and botocore's own
# ``x-amz-*``: what the endpoint reads. The others (user-agent, accept-encoding, the
# connection's) may be changed by a proxy on the way and are left out, as the AWS
# SDKs leave user-agent out.
SIGNED_HEADERS = ("content-type", "accept")
# What botocore adds to the request (its header names, as sent).
_ADDED = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-SHA256")


class SigV4(httpx2.Auth):
    """Signs each request with SigV4 for ``region`` and ``service`` (Bedrock's
    :data:`SERVICE` by default).

    ``credentials``: a botocore credentials object (``botocore.credentials.Credentials``);
    None: botocore's default chain, resolved on the first request (off the event loop:
    the chain may ask the instance metadata service). Raises
    :class:`~railings.errors.MissingDependency` without botocore (``pip install botocore``).
    """

    requires_request_body = True  # the payload's hash is signed

    def __init__(self, region: str, *, service: str = SERVICE, credentials: Any = None) -> None:
        require("SigV4 request signing", "botocore")
        if not region:
            raise ConfigurationError(
                "SigV4 signing needs a region: set AWS_REGION (or pass region=...)"
            )
        self.region = region
        self.service = service
        self._credentials = credentials
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SigV4(region={self.region!r}, service={self.service!r})"

    def check(self) -> None:
        """Find the credentials now (a :class:`~railings.errors.ConfigurationError`
        when there are none), so a command can refuse before its first request."""
        self._frozen()

    def _frozen(self) -> Any:
        """The current credentials, frozen for one signature (refreshed when due)."""
        import botocore.exceptions
        import botocore.session

        try:
            with self._lock:
                if self._credentials is None:
                    self._credentials = botocore.session.get_session().get_credentials()
                credentials = self._credentials
            if credentials is None:
                raise ConfigurationError(
                    "no AWS credentials found for SigV4 signing (botocore's default "
                    "chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, SSO, an "
                    "instance role); or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key"
                )
            frozen = credentials.get_frozen_credentials()
        # A bad profile, an expired SSO session, a refresh that failed.
        except botocore.exceptions.BotoCoreError as exc:
            raise ConfigurationError(f"AWS credentials for SigV4: {exc}") from None
        register_secret(frozen.access_key)
        register_secret(frozen.secret_key)
        register_secret(frozen.token)
        return frozen

    def sign(self, request: httpx2.Request, frozen: Any) -> None:
        """Add botocore's SigV4 headers for ``frozen`` credentials to ``request``."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        headers = {
            name: request.headers[name] for name in SIGNED_HEADERS if name in request.headers
        }
        aws = AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        SigV4Auth(frozen, self.service, self.region).add_auth(aws)
        for name in _ADDED:
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        """Sign and send ``request`` (the sync httpx2 client)."""
        self.sign(request, self._frozen())
        yield request

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, Any]:
        """Sign and send ``request``; the credentials are resolved in a worker thread."""
        self.sign(request, await asyncio.to_thread(self._frozen))
        yield request
