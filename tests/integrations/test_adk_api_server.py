"""ADK's own server (``adk api_server``, google-adk 2.13.0) runs on threadline: a one-line
``services.py`` in the agents directory registers the ``threadline`` schemes, a turn runs over
ADK's HTTP API with a scripted offline model, and threadline reads what ADK stored."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import threadline.integrations.adk as adk
from threadline.errors import InvalidArgumentError
from threadline.integrations.adk import ThreadlineMemoryService, ThreadlineSessionService
from threadline.manager import SessionManager
from threadline.store import connect

ROOT = Path(__file__).resolve().parents[2]
ADK = Path(sys.executable).with_name("adk")
APP, USER, SESSION = "notes_agent", "ada", "s1"
HAS_ARTIFACTS = hasattr(adk, "ThreadlineArtifactService")

AGENT = '''
from collections.abc import AsyncGenerator

from google.adk.agents import Agent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types


async def save_note(text: str, tool_context: ToolContext) -> dict[str, object]:
    """Save a note as the artifact note.txt, and put the session in memory."""
    version = await tool_context.save_artifact(
        "note.txt", types.Part.from_bytes(data=text.encode(), mime_type="text/plain")
    )
    return {"saved": "note.txt", "version": version}


class ScriptedModel(BaseLlm):
    """Offline: calls save_note with the user's text, then answers once the tool returned."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        part = (llm_request.contents[-1].parts or [types.Part()])[0]
        if part.function_response is not None:
            version = (part.function_response.response or {}).get("version")
            parts = [types.Part(text=f"Saved your note (version {version}).")]
        else:
            call = types.FunctionCall(name="save_note", args={"text": part.text or ""})
            parts = [types.Part(function_call=call)]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


async def remember(callback_context) -> None:
    await callback_context.add_session_to_memory()


root_agent = Agent(
    name="notes_agent",
    model=ScriptedModel(model="scripted"),
    instruction="Save what the user says.",
    tools=[save_note],
    after_agent_callback=remember,
)
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def agents_dir(tmp: Path) -> Path:
    agents = tmp / "agents"
    (agents / APP).mkdir(parents=True)
    # The whole registration, as the docs give it.
    (agents / "services.py").write_text("import threadline.integrations.adk_services\n")
    (agents / APP / "__init__.py").write_text("from . import agent\n")
    (agents / APP / "agent.py").write_text(textwrap.dedent(AGENT))
    return agents


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite-file"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def api_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A running ``adk api_server`` on threadline, and the store URL it writes to."""
    if request.param == "sqlite":
        db = str(tmp_path / "adk.db")
        uri = f"threadline:///{Path(db).as_posix()}"  # four slashes: an absolute path
    else:
        db = request.getfixturevalue("pg_dsn")  # a fresh schema
        uri = f"threadline+{db}"
    with adk_server(tmp_path, "api_server", uri) as url:
        yield url, db


@contextmanager
def adk_server(tmp: Path, command: str, uri: str) -> Iterator[str]:
    """Run ``adk <command>`` (in ``tmp``) on a fresh agents directory with threadline's
    ``services.py``, every service URI ``uri`` (artifacts in memory while this threadline has
    no artifact service); yield its base URL once it answers."""
    port = free_port()
    args = [str(ADK), command, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--session_service_uri", uri, "--memory_service_uri", uri]
    args += ["--artifact_service_uri", uri if HAS_ARTIFACTS else "memory://"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "GOOGLE_API_KEY": "",
    }
    log = tmp / f"adk-{command}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*args, str(agents_dir(tmp))],
            cwd=tmp,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/list-apps", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_a_turn_over_adk_api_server_is_stored_in_threadline(api_server: tuple[str, str]) -> None:
    url, db = api_server
    with httpx.Client(base_url=url, timeout=60) as http:
        assert http.get("/list-apps").json() == [APP]
        created = http.post(f"/apps/{APP}/users/{USER}/sessions/{SESSION}", json={})
        assert created.status_code == 200, created.text
        ran = http.post(
            "/run",
            json={
                "app_name": APP,
                "user_id": USER,
                "session_id": SESSION,
                "new_message": {"role": "user", "parts": [{"text": "buy oat milk"}]},
            },
        )
        assert ran.status_code == 200, ran.text
        events = ran.json()
        assert events[-1]["content"]["parts"][0]["text"] == "Saved your note (version 0)."
        # ADK reads the session back from threadline: the user's message, then the turn's events.
        read = http.get(f"/apps/{APP}/users/{USER}/sessions/{SESSION}").json()
        assert [e["id"] for e in read["events"]][1:] == [e["id"] for e in events]

    # threadline's own store holds the session, owned by the ADK user, with the turn's messages.
    store = connect(db)
    try:
        info = store.get_session(APP, f"{USER}/{SESSION}")
        assert info is not None and info.user_id == USER
        history = SessionManager(store, APP).get_history(f"{USER}/{SESSION}", limit=None)
        texts = [part.get("text") for message in history for part in message["parts"]]
        assert texts[0] == "buy oat milk"
        assert texts[-1] == "Saved your note (version 0)."
        assert [m["metadata"]["author"] for m in history] == ["user", APP, APP, APP]
    finally:
        store.close()

    # ... and the ADK adapters read the same session, events and memory from the file.
    async def read_back() -> None:
        sessions = ThreadlineSessionService(db)
        memory = ThreadlineMemoryService(db)
        try:
            session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
            assert session is not None
            calls = [e for e in session.events if e.get_function_calls()]
            assert [c.get_function_calls()[0].name for c in calls] == ["save_note"]
            assert session.events[0].content is not None
            assert session.events[0].content.parts is not None
            assert session.events[0].content.parts[0].text == "buy oat milk"
            found = await memory.search_memory(app_name=APP, user_id=USER, query="oat milk")
            assert any(
                "oat milk" in (p.text or "")
                for m in found.memories
                for p in (m.content.parts or [])
            )
        finally:
            await sessions.close()
            await memory.close()

    asyncio.run(read_back())


@pytest.mark.skipif(
    not HAS_ARTIFACTS,
    reason="threadline.integrations.adk has no ThreadlineArtifactService yet (branch 'artifacts')",
)
def test_the_artifact_the_agent_saved_is_read_through_threadline(
    api_server: tuple[str, str],
) -> None:
    url, db = api_server
    with httpx.Client(base_url=url, timeout=60) as http:
        http.post(f"/apps/{APP}/users/{USER}/sessions/{SESSION}", json={}).raise_for_status()
        message = {"role": "user", "parts": [{"text": "call the plumber"}]}
        body = {"app_name": APP, "user_id": USER, "session_id": SESSION, "new_message": message}
        http.post("/run", json=body).raise_for_status()
        listed = http.get(f"/apps/{APP}/users/{USER}/sessions/{SESSION}/artifacts")
        assert listed.json() == ["note.txt"]

    async def read_back() -> None:
        service = adk.ThreadlineArtifactService(db)
        part = await service.load_artifact(
            app_name=APP, user_id=USER, session_id=SESSION, filename="note.txt"
        )
        assert part is not None and part.inline_data is not None
        assert part.inline_data.data == b"call the plumber"
        await service.close()

    asyncio.run(read_back())


def test_the_schemes_map_to_threadline_urls_and_refuse_what_they_cannot_open() -> None:
    from google.adk.cli.service_registry import ServiceRegistry

    from threadline.integrations.adk import register_services

    registry = ServiceRegistry()
    register_services(registry)
    session = registry.create_session_service("threadline:///rel/adk.db", agents_dir="/x")
    assert isinstance(session, ThreadlineSessionService)
    assert repr(session.store) == "LazyStore('sqlite:///rel/adk.db', not opened)"
    pg = registry.create_memory_service("threadline+postgresql://u@db:5432/agents")
    assert isinstance(pg, ThreadlineMemoryService)
    assert "postgresql://u@db:5432/agents" in repr(pg.store)
    with pytest.raises(InvalidArgumentError, match="not a host"):
        registry.create_session_service("threadline://db.example/adk.db")
    with pytest.raises(InvalidArgumentError, match="pool_size"):
        registry.create_session_service("threadline:///adk.db", agents_dir="/x", pool_size=5)
    if HAS_ARTIFACTS:
        artifacts = registry.create_artifact_service("threadline:///adk.db", agents_dir="/x")
        assert type(artifacts).__name__ == "ThreadlineArtifactService"
    else:
        with pytest.raises(InvalidArgumentError, match="no ThreadlineArtifactService"):
            registry.create_artifact_service("threadline:///adk.db", agents_dir="/x")


def test_adk_web_takes_a_relative_threadline_path_from_its_working_directory(
    tmp_path: Path,
) -> None:
    """``adk web`` (the dev UI's server) builds its services the same way; a relative
    ``threadline:///adk.db`` is the file in the server's working directory."""
    with adk_server(tmp_path, "web", "threadline:///adk.db") as url:
        created = httpx.post(
            f"{url}/apps/{APP}/users/{USER}/sessions", json={"state": {"k": 1}}, timeout=60
        )
        assert created.status_code == 200, created.text
        session_id = created.json()["id"]
    store = connect(tmp_path / "adk.db")
    try:
        info = store.get_session(APP, f"{USER}/{session_id}")
        assert info is not None and info.user_id == USER
        assert store.get_state(APP, f"{USER}/{session_id}", USER) == {"k": 1}
    finally:
        store.close()
