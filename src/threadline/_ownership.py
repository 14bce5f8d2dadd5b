"""Who may see a session: the ownership rules, decided here and nowhere else (pure).

A session's owner (``SessionInfo.user_id``) is fixed when it is created: a user id, or
``None`` for a session without one. A caller names a user (``user_id=``, or the user an API
key is bound to), or ``None`` for app-wide access. Two rules, for two kinds of caller:

* :func:`visible_to` — the library's rule (``SessionManager``, ``Session``, the store's
  precondition on writes naming a user): a caller sees its own sessions *and* the sessions
  without an owner (in one process the app chose to share them; a write naming a user never
  claims such a session). The store checks the same rule before a write
  (:func:`check_visible`): a missing row has no owner yet, so the write may create it.
* :func:`owned_by` — the exact rule (a user-bound HTTP key, listings and purges filtered by
  a user): a caller sees only the sessions owned by exactly its user. A key handed to one
  end user must not reach the sessions the app keeps without an owner.

Both agree that ``None`` as the caller sees everything and that a session of another user
is never seen; they differ only on owner-less sessions (:func:`visible_to` ⊇
:func:`owned_by`). Anything not seen is reported missing (``SessionNotFoundError``), never
forbidden, so ids do not leak. An adapter that maps a user id of its framework onto another
owner (ADK's empty user id owns its sessions as ``"__threadline__:adk:empty-user"``) does
that before asking: to these rules every owner is a plain non-empty string.

>>> [visible_to(owner, "ana") for owner in ("ana", "bob", None)]
[True, False, True]
>>> [owned_by(owner, "ana") for owner in ("ana", "bob", None)]
[True, False, False]
"""

from __future__ import annotations

from threadline.errors import SessionNotFoundError

__all__ = ["check_visible", "not_found", "owned_by", "visible_to"]


def visible_to(owner: str | None, caller: str | None) -> bool:
    """Whether a caller naming ``caller`` (``None``: app-wide) sees a session of ``owner``
    (``None``: no owner) under the library's rule: its own and the owner-less ones.

    >>> visible_to("ana", None), visible_to("ana", "ana"), visible_to(None, "ana")
    (True, True, True)
    >>> visible_to("bob", "ana")
    False
    """
    return caller is None or owner is None or owner == caller


def owned_by(owner: str | None, caller: str | None) -> bool:
    """Whether a caller naming ``caller`` (``None``: app-wide) sees a session of ``owner``
    under the exact rule: only sessions owned by exactly that user.

    >>> owned_by("ana", None), owned_by(None, None), owned_by("ana", "ana")
    (True, True, True)
    >>> owned_by(None, "ana"), owned_by("bob", "ana")
    (False, False)
    """
    return caller is None or owner == caller


def not_found(session_id: str, app: str | None = None) -> SessionNotFoundError:
    """The error for a session that does not exist or is not the caller's (the same words
    for both, so ids do not leak).

    >>> not_found("s1", "travel")
    SessionNotFoundError("session 's1' not found in app 'travel'")
    >>> not_found("s1")
    SessionNotFoundError("session 's1' not found")
    """
    where = "" if app is None else f" in app {app!r}"
    return SessionNotFoundError(f"session {session_id!r} not found{where}")


def check_visible(app: str, session_id: str, owner: str | None, caller: str | None) -> None:
    """``SessionNotFoundError`` unless :func:`visible_to` (``owner`` ``None`` also when the
    session does not exist yet: a write may create it, owned by ``caller``).

    >>> check_visible("travel", "s1", None, "ana")
    >>> check_visible("travel", "s1", "bob", "ana")
    Traceback (most recent call last):
    threadline.errors.SessionNotFoundError: session 's1' not found in app 'travel'
    """
    if not visible_to(owner, caller):
        raise not_found(session_id, app)
