"""The HTTP service (``threadline serve``): sessions, messages, search, memory, state and
events of a store over HTTP, with API keys bound to an app (and optionally a user).

Needs the ``server`` extra (FastAPI, uvicorn). See docs/server.md.

>>> import threadline
>>> from threadline.server import create_app, create_key
>>> store = threadline.connect(":memory:")
>>> key = create_key(store, "travel")
>>> from fastapi.testclient import TestClient
>>> with TestClient(create_app(store), headers={"Authorization": f"Bearer {key}"}) as http:
...     hello = {"role": "user", "content": "Hi"}
...     http.post("/v1/sessions/chat-1/messages", json=hello).status_code
...     [m["parts"] for m in http.get("/v1/sessions/chat-1/messages").json()["messages"]]
201
[[{'type': 'text', 'text': 'Hi'}]]
"""

from __future__ import annotations

from threadline.server._app import create_app
from threadline.server._keys import create_key, key_id_of, list_keys, revoke_key
from threadline.server._serve import serve

__all__ = ["create_app", "create_key", "key_id_of", "list_keys", "revoke_key", "serve"]
