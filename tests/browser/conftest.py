"""Browser tests of the web viewer: a real uvicorn process serving ``threadline.server`` over a
SQLite file prepared by ``viewer_data.populate``, driven by Playwright in a real Chromium.

Chromium is looked up in ``$THREADLINE_CHROMIUM``, then ``/usr/bin/chromium`` (Debian's package,
which ``scripts/test`` installs), ``chromium-browser``, ``google-chrome``. Without one — or without
the ``playwright`` package — the tests skip, saying why; with ``THREADLINE_REQUIRE_BROWSER=1``
(``scripts/test`` sets it once Chromium is there) that skip becomes a failure.

Screenshots go to ``$THREADLINE_ARTIFACTS/browser`` (default ``test-artifacts/browser`` at the
repository root, gitignored); each test prints the path of what it saved.
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
STATIC = ROOT / "src" / "threadline" / "server" / "static"
ORIGIN = "http://viewer.test"  # where the model page serves the static files (never fetched)
CHROMIUM_ARGS = [
    "--no-sandbox",  # needed as root; harmless otherwise
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _skip_or_fail(reason: str) -> Any:
    if os.environ.get("THREADLINE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (THREADLINE_REQUIRE_BROWSER=1)", pytrace=False)
    pytest.skip(reason)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable to drive, or None."""
    explicit = os.environ.get("THREADLINE_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.access(candidate, os.X_OK):
            return candidate
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium driven by Playwright, for one test module.

    Module scope, not session: Playwright's sync API runs an event loop on this thread while it
    is started, and later tests of the run call ``asyncio.run`` (which refuses to run inside
    a running loop), so it must be stopped when the browser tests are done.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the playwright package is not installed (pip install -e '.[dev]')")
    executable = find_chromium()
    if executable is None:
        _skip_or_fail("no Chromium found (apt-get install -y chromium, or set THREADLINE_CHROMIUM)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (created)."""
    base = Path(os.environ.get("THREADLINE_ARTIFACTS", ROOT / "test-artifacts"))
    target = base / "browser"
    target.mkdir(parents=True, exist_ok=True)
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A running ``uvicorn`` with the demo store; ``call`` speaks to its API with the key."""

    base: str
    key: str
    ids: dict[str, Any]
    process: subprocess.Popen[bytes]
    log: Path
    db: str = ""  # the store's URL (to make other keys)

    def call(self, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
        """``method /v1/path`` with the key; the decoded JSON body (None for 204)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}/v1/{path}", data=data, method=method)
        request.add_header("Authorization", f"Bearer {key or self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def head_id(self, session_id: str) -> str:
        """The id of the last message of the session's history (its head), read over HTTP."""
        result = self.call("GET", f"sessions/{session_id}/messages")
        messages = result["messages"] if isinstance(result, dict) else result
        head: str = messages[-1]["id"]
        return head


def _wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"uvicorn did not answer /healthz in 60 s:\n{log.read_text()}")


def _viewer_data() -> Any:
    sys.path.insert(0, str(HERE))
    try:
        import viewer_data
    finally:
        sys.path.remove(str(HERE))
    return viewer_data


@contextlib.contextmanager
def _serving(
    directory: Path, url: str, ids: dict[str, Any], env_extra: dict[str, str] | None = None
) -> Iterator[Server]:
    """uvicorn serving the store at ``url`` (viewer_app) on a free port, with an app key."""
    from threadline.server import create_key

    key = create_key(url, _viewer_data().APP)
    log = directory / "uvicorn.log"
    env = {**os.environ, "THREADLINE_VIEWER_DB": url, **(env_extra or {})}
    for _attempt in range(3):
        port = _free_port()
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "viewer_app:make_app",
                 "--app-dir", str(HERE), "--host", "127.0.0.1", "--port", str(port),
                 "--log-level", "warning"],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, process, log)
            break
        except RuntimeError:
            process.kill()
            process.wait()
            if "address already in use" not in log.read_text().lower() or _attempt == 2:
                raise
    try:
        yield Server(base, key, ids, process, log, url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """uvicorn serving the demo store on a free port (one per test module)."""
    directory = tmp_path_factory.mktemp("viewer")
    url = f"sqlite:///{(directory / 'viewer.db').as_posix()}"
    ids = _viewer_data().populate(url)
    with _serving(directory, url, ids) as running:
        yield running


LLM_KEY_ENV = "THREADLINE_TEST_LLM_KEY"


@pytest.fixture(scope="module")
def llm() -> Iterator[Any]:
    """A scripted OpenAI-compatible endpoint (tests/fixtures/fake_openai.py: a fake of the
    external LLM, never of threadline's storage); with no script it echoes the user."""
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    try:
        fake_openai = pytest.importorskip("fake_openai", reason="tests/fixtures/fake_openai.py")
    finally:
        sys.path.remove(str(ROOT / "tests" / "fixtures"))
    with fake_openai.FakeOpenAI() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory: pytest.TempPathFactory, llm: Any) -> Iterator[Server]:
    """The demo store whose app's stored profile names ``llm`` as its model (an operator's
    write, in Python), served like ``server``."""
    import threadline

    directory = tmp_path_factory.mktemp("chat")
    url = f"sqlite:///{(directory / 'viewer.db').as_posix()}"
    ids = _viewer_data().populate(url)
    store = threadline.connect(url)
    try:
        threadline.Profile(model=llm.spec(LLM_KEY_ENV)).save(store, _viewer_data().APP)
    finally:
        store.close()
    with _serving(directory, url, ids, {LLM_KEY_ENV: "sk-studio-test-0123"}) as running:
        yield running


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    """A fresh browser tab (its own session storage) that fails the test on a script error."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    # A refused request is logged by Chromium as "Failed to load resource" (tests cause 401s on
    # purpose); anything else logged as an error, and every uncaught exception, fails the test.
    tab.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    tab.set_default_timeout(15_000)
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture(scope="module")
def model_page(browser: Any) -> Iterator[Any]:
    """A page with the viewer's modules, served straight from the package (no server):
    ``window.tree`` (tree.js), ``window.render`` (conversation.js), ``window.md``
    (markdown.js)."""
    context = browser.new_context()

    def serve(route: Any) -> None:
        relative = route.request.url.removeprefix(f"{ORIGIN}/")
        target = (STATIC / relative).resolve()
        if not target.is_relative_to(STATIC) or not target.is_file():
            route.fulfill(status=404, body="not found")
            return
        kind = "text/javascript" if target.suffix == ".js" else mimetypes.guess_type(target.name)[0]
        route.fulfill(status=200, body=target.read_bytes(), content_type=kind or "text/plain")

    context.route(f"{ORIGIN}/**", serve)
    page = context.new_page()
    page.route(
        f"{ORIGIN}/",
        lambda route: route.fulfill(status=200, body="<!doctype html>", content_type="text/html"),
    )
    page.goto(f"{ORIGIN}/")
    page.evaluate(
        f"Promise.all([import('{ORIGIN}/js/tree.js'), import('{ORIGIN}/js/conversation.js'),"
        f" import('{ORIGIN}/js/markdown.js')]).then(([tree, render, md]) => {{"
        " window.tree = tree; window.render = render; window.md = md; })"
    )
    page.wait_for_function("window.tree && window.render && window.md")
    try:
        yield page
    finally:
        context.close()
