"""Ownership is decided in one place (``threadline._ownership``) and every site agrees with it.

Two rules, for any ``(owner, caller)``: the library's (``visible_to``: a caller sees its own
sessions and the owner-less ones) and the exact one (``owned_by``: a user-bound HTTP key, a
purge naming a user). The manager's reads and writes and the store's precondition on a write
naming a user follow ``visible_to``; the server's tenancy and event filter and ``purge``
follow ``owned_by``. ``None`` as caller sees everything, another user's session never.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from threadline import SessionManager, SessionNotFoundError
from threadline._manager_steps import purged_by
from threadline._ownership import check_visible, owned_by, visible_to
from threadline.internal import INTERNAL_PREFIX
from threadline.messages import normalize_message, user
from threadline.server._tenancy import Tenant
from threadline.store._sql.base import _check_owner

APP = "owners"
# Users as the library stores them, the reserved owner of ADK's "" user among them: to the
# rules it is a plain owner like any other.
NAMES = st.sampled_from(["ana", "bob", INTERNAL_PREFIX + "adk:empty-user"]) | st.from_regex(
    r"[a-z]{1,6}", fullmatch=True
)
OWNERS = st.none() | NAMES
CALLERS = st.none() | NAMES
_ids = itertools.count()


@pytest.fixture(scope="module")
def manager() -> SessionManager:
    return SessionManager(":memory:", app_name=APP)


def _session(manager: SessionManager, owner: str | None) -> str:
    session_id = f"s{next(_ids)}"
    manager.create(session_id=session_id, user_id=owner)
    return session_id


def _manager_sees(manager: SessionManager, session_id: str, caller: str | None) -> dict[str, bool]:
    """What each of the manager's ownership checks answers (True: the caller reaches it)."""
    seen = {"get": manager.get(session_id, user_id=caller) is not None}
    for name, call in (
        ("get_session", lambda: manager.get_session(session_id, user_id=caller)),
        ("get_or_create", lambda: manager.get_or_create(session_id, user_id=caller)),
        ("rename", lambda: manager.rename(session_id, "n", user_id=caller)),
        ("add_usage", lambda: manager.add_usage(session_id, 1, 1, user_id=caller)),
        ("store_append", lambda: _store_append(manager, session_id, caller)),
    ):
        try:
            call()
        except SessionNotFoundError:
            seen[name] = False
        else:
            seen[name] = True
    return seen


def _store_append(manager: SessionManager, session_id: str, caller: str | None) -> None:
    message = normalize_message(user("hi"))
    manager.store.append_messages(APP, session_id, [message], user_id=caller)


@settings(max_examples=150, deadline=None)
@given(owner=OWNERS, caller=CALLERS)
def test_every_site_agrees_with_the_one_rule(
    manager: SessionManager, owner: str | None, caller: str | None
) -> None:
    session_id = _session(manager, owner)
    library = visible_to(owner, caller)
    exact = owned_by(owner, caller)
    # The library's rule: the manager's checks and the store's precondition.
    assert _manager_sees(manager, session_id, caller) == dict.fromkeys(
        ("get", "get_session", "get_or_create", "rename", "add_usage", "store_append"), library
    )
    try:
        _check_owner(APP, session_id, owner, caller)
        check_visible(APP, session_id, owner, caller)
    except SessionNotFoundError:
        assert not library
    else:
        assert library
    # The exact rule: a key bound to the caller (or an app key), purge; the feeds call owned_by.
    tenant = Tenant(APP, caller, manager)
    try:
        tenant.require(session_id)
    except SessionNotFoundError:
        assert not exact
    else:
        assert exact
    info = manager.get(session_id)
    assert purged_by(info, datetime.now(UTC) + timedelta(days=1), caller) is exact


@given(owner=OWNERS, caller=CALLERS)
def test_the_two_rules_differ_only_on_owner_less_sessions(
    owner: str | None, caller: str | None
) -> None:
    if owned_by(owner, caller):
        assert visible_to(owner, caller)  # the exact rule never sees more
    if visible_to(owner, caller) != owned_by(owner, caller):
        assert owner is None and caller is not None
    if caller is None:
        assert visible_to(owner, caller) and owned_by(owner, caller)  # app-wide access
    if None not in (owner, caller) and owner != caller:
        assert not visible_to(owner, caller)  # another user's session: never


def test_a_write_naming_a_user_to_a_missing_session_creates_it_owned_by_that_user() -> None:
    manager = SessionManager(":memory:", app_name=APP)
    manager.append("new", user("hi"), user_id="ana")
    info = manager.get("new")
    assert info is not None and info.user_id == "ana"
    with pytest.raises(SessionNotFoundError):
        manager.append("new", user("hi"), user_id="bob")
