"""The console listens on loopback unless told otherwise, and beyond loopback only with a token."""

from __future__ import annotations

from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from services.console.settings import ConsoleSettings, is_loopback
from services.console.web import create_app

pytestmark = pytest.mark.unit


def test_defaults_to_loopback_without_a_token() -> None:
    settings = ConsoleSettings()
    assert settings.host == "127.0.0.1"
    assert settings.token is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "console.example.com"])
def test_listening_beyond_loopback_without_a_token_is_refused_naming_the_setting(host: str) -> None:
    with pytest.raises(ValidationError, match="CONSOLE_TOKEN must be set"):
        ConsoleSettings(host=host)


def test_beyond_loopback_with_a_token_is_accepted() -> None:
    assert ConsoleSettings(host="0.0.0.0", token="s3cret").host == "0.0.0.0"


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("::1", True), ("localhost", True)])
def test_loopback_names(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _client(token: str | None) -> TestClient:
    # Static assets need none of the readers, so the token check is seen alone.
    unused = cast(Any, None)
    return TestClient(create_app(unused, unused, unused, token=token))


def test_without_the_token_every_request_is_refused() -> None:
    client = _client("s3cret")
    assert client.get("/static/console.css").status_code == 401
    assert client.get("/static/console.css", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_the_token_as_bearer_or_once_in_the_url_then_as_a_cookie() -> None:
    client = _client("s3cret")
    assert client.get("/static/console.css", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/static/console.css?token=s3cret")
    assert first.status_code == 200
    assert client.get("/static/console.css").status_code == 200  # the cookie carries it now


def test_no_token_set_means_open_on_loopback() -> None:
    assert _client(None).get("/static/console.css").status_code == 200
