"""The user name and password of a base URL are found the way URL parsers find them: the
userinfo is everything before the authority's last ``@`` (urllib, httpx2), so a password
with a space or an ``@`` in it, which those parsers accept unencoded, is registered whole."""

from __future__ import annotations

import pytest

from railings.redact import url_secrets


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("http://user:Open Sesame Qz81@host/v1", "Open Sesame Qz81"),
        ("http://user:Open@Sesame-Qz81@host:8080/v1", "Open@Sesame-Qz81"),
        ("https://user:pa%20ss%40word@host", "pa ss@word"),
        ("https://user:plainpassword@host", "plainpassword"),
    ],
)
def test_the_whole_password_of_a_url_is_found(url: str, password: str) -> None:
    found = url_secrets(url)
    assert password in found and "user" in found


@pytest.mark.parametrize("url", ["http://host/v1", "http://host:8080", "", None, "http://[::1"])
def test_a_url_without_userinfo_has_no_secret(url: str | None) -> None:
    assert url_secrets(url) == []
