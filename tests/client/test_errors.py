"""Errors over HTTP are the library's own classes (the same ones the in-process call raises);
a refused key is ``AuthenticationError``; no server at all is ``RemoteError``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from served_app import APP, Served, configure

from threadline import SessionManager, errors
from threadline.client import AsyncClient, AuthenticationError, Client, RemoteError

pytestmark = pytest.mark.timeout(240)

# (what it does, called with a manager or a client) — each must raise the same class.
CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("rename unknown", lambda api: api.rename("nope", "x")),
    ("delete unknown", lambda api: api.delete("nope")),
    ("exists", lambda api: api.create(session_id="s1")),
    ("unknown message", lambda api: api.get_session("s1").checkout("nope")),
    ("rewind unknown message", lambda api: api.rewind("s1", before_message_id="nope")),
    ("fork at unknown message", lambda api: api.fork("s1", "nope")),
    ("bad message", lambda api: api.append("s1", {"role": "user", "parts": "hi"})),
    ("not a message", lambda api: api.append("s1", "hi")),
    ("unknown block", lambda api: api.get_session("s1").replace_context_block("nope", "x")),
    (
        "block too large",
        lambda api: api.get_session("s1").replace_context_block("memory", "word " * 500),
    ),
    ("bad state key", lambda api: api.update_state("s1", {"": 1})),
    ("bad limit", lambda api: api.get_history("s1", limit=0)),
    ("bad usage", lambda api: api.add_usage("s1", -1, 0)),
    ("other user's session", lambda api: api.get_history("s1", user_id="bob")),
]


def _raised(fn: Callable[[], Any]) -> type[BaseException] | None:
    try:
        fn()
    except Exception as exc:
        return type(exc)
    return None


@pytest.fixture
def seeded(served: Served) -> Served:
    with Client(served.url, served.key) as client:
        client.create(session_id="s1", user_id="ana")
        client.append("s1", {"id": "m1", "role": "user", "content": "hi"})
    return served


def test_errors_map_to_the_classes_the_library_raises(seeded: Served) -> None:
    manager = configure(SessionManager(":memory:", APP))
    manager.create(session_id="s1", user_id="ana")
    manager.append("s1", {"id": "m1", "role": "user", "content": "hi"})
    differ = []
    with Client(seeded.url, seeded.key) as client:
        for name, case in CASES:
            local = _raised(lambda case=case: case(manager))
            remote = _raised(lambda case=case: case(client))
            if local is None or local is not remote:
                differ.append(
                    (name, getattr(local, "__name__", None), getattr(remote, "__name__", None))
                )
    assert differ == []


def test_the_error_message_and_status_come_through(seeded: Served) -> None:
    with Client(seeded.url, seeded.key) as client, pytest.raises(errors.SessionNotFoundError) as e:
        client.rename("nope", "x")
    assert "nope" in str(e.value) and e.value.status_code == 404  # type: ignore[attr-defined]
    assert isinstance(e.value, KeyError)  # `except KeyError` keeps working, as in-process


def test_unknown_missing_and_revoked_keys_are_authentication_errors(served: Served) -> None:
    for key in ("not-a-key", None):
        with Client(served.url, key) as client, pytest.raises(AuthenticationError):
            client.list()
    import threadline
    from threadline.server import revoke_key
    from threadline.server._keys import key_id_of

    key = served.new_key()
    with Client(served.url, key) as client:
        assert client.list().sessions == []
        with threadline.connect(served.store_url) as store:
            revoke_key(store, key_id_of(key))
        with pytest.raises(AuthenticationError):
            client.list()


def test_another_apps_sessions_are_missing(served: Served) -> None:
    with Client(served.url, served.key) as client:
        client.append("mine", {"role": "user", "content": "secret plans"})
    with Client(served.url, served.new_key(app="other")) as other:
        assert other.get("mine") is None
        assert other.search("secret") == []
        with pytest.raises(errors.SessionNotFoundError):
            other.get_history("mine")


def test_the_async_client_raises_the_same_classes(seeded: Served) -> None:
    async def main() -> list[type[BaseException]]:
        raised = []
        async with AsyncClient(seeded.url, seeded.key) as client:
            for call in (
                lambda: client.get_session("nope").get_history(),
                lambda: client.create(session_id="s1"),
                lambda: client.get_session("s1").checkout("nope"),
                lambda: client.append("s1", {"role": "user", "parts": "hi"}),
            ):
                try:
                    await call()
                except Exception as exc:
                    raised.append(type(exc))
        async with AsyncClient(seeded.url, "bad-key") as client:
            try:
                await client.list()
            except Exception as exc:
                raised.append(type(exc))
        return raised

    assert asyncio.run(main()) == [
        errors.SessionNotFoundError,
        errors.SessionExistsError,
        errors.MessageNotFoundError,
        errors.InvalidMessageError,
        AuthenticationError,
    ]


def test_no_server_is_a_remote_error() -> None:
    with Client("http://127.0.0.1:9", "key", timeout=2) as client, pytest.raises(RemoteError):
        client.list()
