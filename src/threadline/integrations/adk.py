"""Google ADK backends: ``ThreadlineSessionService``, ``ThreadlineMemoryService`` and
``ThreadlineArtifactService``.

``pip install 'threadline[adk]'``; replace ``DatabaseSessionService(db_url)`` with
``ThreadlineSessionService(url)`` (any threadline URL, or an open threadline ``Store``).

How ADK's model maps onto threadline (docs: README "Google ADK"):

* **Apps** are threadline apps: ``app_name`` is the threadline ``app``.
* **Sessions** are keyed by ``(app, user, id)`` in ADK, by ``(app, id)`` in threadline, so the
  threadline session id is ``"<user>/<id>"`` (``%`` and ``/`` in the user id percent-encoded:
  the mapping is one-to-one) and the session is owned by the ADK user (``user_id=""`` is a
  user like any other, as in ADK: since threadline user ids are never empty, it is owned by
  the reserved ``"__threadline__:adk:empty-user"``, and that name as an ADK user id is refused
  with ``InvalidArgumentError``; every other user id is its own owner). The ADK id, the creation
  time (a float) and a marker live in the session's registry metadata under ``"adk"``; sessions
  of the app without that marker (written through threadline's own API) are not listed.
* **Events** are messages: the event's content becomes the message parts
  (``threadline.formats.from_genai``, so threadline's search, history and compaction see the
  text, tool calls and files) and the rest of the event (its pydantic JSON: actions and
  ``state_delta``, ids, usage, grounding, ``timestamp`` ...; ``None`` fields whose default is
  ``None`` left out) is kept in ``metadata["adk"]["event"]``; reading puts both back, so an
  event round-trips exactly. The
  message also carries ``metadata.invocationId``, ``author`` and ``branch`` (threadline's own
  names) and its ``createdAt`` is the event's timestamp. Messages appended to the session by
  other threadline code are read back as events too (content converted with ``to_genai``).
* **State**: ``app:`` and ``user:`` keys are threadline's app- and user-scoped state, other keys
  the session's; ``temp:`` keys live only in the session object (ADK's rule, threadline's too).
  Deltas are applied in the same transaction as the event's message. ADK stores ``None`` as a
  value (it does not delete the key); threadline's ``None`` deletes, so ``None`` is stored as
  ``{"__adk_none__": true}`` and read back as ``None``. Keys under threadline's internal
  prefix (``__threadline__:``) and ``__adk_last_update__`` are the adapter's own: a delta or
  initial state naming one is refused (``InvalidArgumentError``) before anything is applied.
* ``last_update_time`` is the timestamp of the session's last event (its creation time while it
  has none). ``list_sessions`` orders by it, then user, then id (ADK's order). It reads the
  sessions with ``Store.list_session_states`` (one query per 250 sessions); the exact
  float is kept, with the head id it belongs to, in threadline-internal state
  (``__threadline__:adk``: written in each event's transaction, shown by no state read, ADK's
  or threadline's, and refused by threadline's public state writes), so no session's last
  event is read unless messages were written around this service. Sessions written before
  that kept it as the plain session key ``__adk_last_update__``: it is read the same, never
  shown, and deleted by the session's next event.
* ``append_event`` is one store call (one transaction): the message, its state delta and the
  bookkeeping, on condition that the head is still the one the session object was read at
  (``append_messages(if_head=...)``). So it raises ``StaleSessionError`` when another writer,
  in any process, appended since (as ``DatabaseSessionService``), ``SessionNotFoundError``
  when the session is gone, and ignores an equal re-delivery of an event already stored (as
  ``InMemorySessionService``).

Every storage call runs in a worker thread of the loop's default executor
(``asyncio.to_thread``, as every ``threadline.aio`` call on a store): the event loop never
blocks on the database. The adapter starts no thread of its own and leaves the process's
garbage collector alone.

**ADK's own servers** (``adk web``, ``adk api_server``) run on threadline through ADK's
service registry: a one-line ``services.py`` in the agents directory (the directory given to
``adk``), ``import threadline.integrations.adk_services``, registers the ``threadline`` schemes
(:func:`register_services`), then ``--session_service_uri threadline:///adk.db`` (SQLite,
relative to the working directory; ``threadline:////abs/adk.db`` absolute),
``threadline+postgresql://...``, and the same for ``--memory_service_uri`` and
``--artifact_service_uri``.

The code lives by concern in private modules: ``_adk_events`` (events <-> messages, pure),
``_adk_mapping`` (ids, owners, state values, pure), ``_adk_sessions`` (the session service),
``_adk_memory`` (the memory service), ``_adk_artifacts`` (the artifact service, on the
store's versioned stored files: ``Store.put_artifact``), ``_adk_registry`` (the URI schemes);
this module is their public home.

>>> import asyncio
>>> service = ThreadlineSessionService(":memory:")
>>> session = asyncio.run(service.create_session(app_name="app", user_id="u1", session_id="s1"))
>>> session.id, session.user_id, service.store.get_session("app", "u1/s1").user_id
('s1', 'u1', 'u1')
"""

from __future__ import annotations

from typing import Any

from threadline.integrations._adk_artifacts import ThreadlineArtifactService
from threadline.integrations._adk_events import event_to_message, message_to_event
from threadline.integrations._adk_mapping import threadline_session_id
from threadline.integrations._adk_memory import ThreadlineMemoryService
from threadline.integrations._adk_registry import register
from threadline.integrations._adk_sessions import ThreadlineSessionService

__all__ = [
    "ThreadlineArtifactService",
    "ThreadlineMemoryService",
    "ThreadlineSessionService",
    "event_to_message",
    "message_to_event",
    "register_services",
    "threadline_session_id",
]


def register_services(registry: Any = None) -> None:
    """Register threadline's URI schemes (``threadline``, ``threadline+postgresql``,
    ``threadline+postgres``, ``threadline+sqlite``) for ADK's session, memory and artifact
    services on ``registry`` (default: ADK's own, ``get_service_registry()``, which ``adk web``
    and ``adk api_server`` build their services from). Idempotent. A ``services.py`` in the
    agents directory that imports ``threadline.integrations.adk_services`` calls it.

    >>> from google.adk.cli.service_registry import ServiceRegistry
    >>> registry = ServiceRegistry()
    >>> register_services(registry)
    >>> service = registry.create_session_service("threadline:///adk.db", agents_dir=".")
    >>> type(service).__name__, service.store
    ('ThreadlineSessionService', LazyStore('sqlite:///adk.db', not opened))
    """
    # Looked up when ADK builds the artifact service: the class is this module's once it exists.
    register(registry, lambda: globals().get("ThreadlineArtifactService"))
