"""The ADK adapter's internal bookkeeping is invisible through the HTTP API too: a session
written by ``ThreadlineSessionService`` shows only ADK's own state keys in ``GET .../state``
and in ``GET /v1/export``, and ``PATCH .../state`` may not write a reserved key (a real
server process on a SQLite file and on PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import uuid

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from served import Server

from threadline.integrations.adk import ThreadlineSessionService


async def _adk_session(db: str, app: str, user: str) -> str:
    service = ThreadlineSessionService(db)
    try:
        session = await service.create_session(app_name=app, user_id=user, state={"k": 1})
        delta = EventActions(state_delta={"step": 2, "user:lang": "nb"})
        await service.append_event(session, Event(author="user", actions=delta))
        return f"{user}%2F{session.id}"  # the threadline id "<user>/<id>", URL-encoded
    finally:
        await service.close()


def test_state_and_export_of_an_adk_session_show_only_adks_keys(server: Server) -> None:
    app = f"adk-{uuid.uuid4().hex[:8]}"
    path = asyncio.run(_adk_session(server.db, app, "u1"))
    with server.client(server.key(app)) as http:
        state = http.get(f"/v1/sessions/{path}/state")
        assert state.status_code == 200
        assert state.json()["state"] == {"k": 1, "step": 2, "user:lang": "nb"}
        refused = http.patch(f"/v1/sessions/{path}/state", json={"__threadline__:adk": None})
        assert refused.status_code in (400, 422), refused.text
        exported = http.get("/v1/export", params={"session_id": path.replace("%2F", "/")})
        assert exported.status_code == 200
        (record,) = [json.loads(line) for line in exported.text.splitlines()]
        assert record["state"] == {"k": 1, "step": 2}
        assert "__threadline__" not in exported.text and "__adk_last_update__" not in exported.text
