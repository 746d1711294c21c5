"""A NATS cluster as the clients and the servers' configuration see it: every member's URL, the
stream replicas that follow them, credentials put into and taken out of each URL, and the routes'
own password in each member's configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.bus.credentials import connect_options, user_of
from shared.config import NatsSettings
from shared.infra import nats_auth, passwords, provision

pytestmark = pytest.mark.unit

CLUSTER = "nats://127.0.0.1:4222,nats://127.0.0.1:4223, nats://127.0.0.1:4224"


def test_every_member_is_a_server_to_connect_to_and_streams_follow_their_number() -> None:
    settings = NatsSettings(url=CLUSTER)
    assert connect_options(settings)["servers"] == [
        "nats://127.0.0.1:4222",
        "nats://127.0.0.1:4223",
        "nats://127.0.0.1:4224",
    ]
    assert settings.replicas == 3
    assert NatsSettings(url="nats://one:4222").replicas == 1
    five = ",".join(f"nats://n{i}:4222" for i in range(5))
    assert NatsSettings(url=five).replicas == 3, "at most three copies unless asked"
    assert NatsSettings(url="nats://svc:4222", stream_replicas=3).replicas == 3


def test_stream_replicas_beyond_what_jetstream_allows_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="stream_replicas"):
        NatsSettings(stream_replicas=7)


def test_credentials_go_into_every_members_url_and_come_out_of_all() -> None:
    members = CLUSTER.replace(" ", "")
    credentials = {"watcher": ("watcher", "pw")}
    provided = provision.Provided(members, "local process", lambda: None, None, credentials)
    url = provided.url_as("watcher")
    assert url.split(",") == [f"nats://watcher:pw@127.0.0.1:{port}" for port in (4222, 4223, 4224)]
    assert user_of(NatsSettings(url=url)) == "watcher"
    assert connect_options(NatsSettings(url=url))["inbox_prefix"] == "_INBOX.watcher"
    assert passwords.without_user(url) == members


def test_a_member_routes_to_every_member_with_the_route_password_on_loopback_only() -> None:
    member = nats_auth.ClusterMember("nats-2", 6001, (6000, 6001, 6002), "secret", monitor_port=8222)
    text = nats_auth.render(dict.fromkeys(nats_auth.permissions.ROLES, "x")) + nats_auth.render_cluster(
        member
    )
    assert 'server_name: "nats-2"' in text
    assert 'listen: "127.0.0.1:6001"' in text
    assert 'http: "127.0.0.1:8222"' in text
    for port in (6000, 6001, 6002):
        assert f"nats-route://route:secret@127.0.0.1:{port}" in text
    route_block = text[text.index("cluster {") :]
    assert 'user: "route"' in route_block
    assert 'password: "secret"' in route_block
    assert "route" not in nats_auth.permissions.ROLES, "no client identity is the route user"
