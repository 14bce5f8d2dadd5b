"""The studio on a big session: first paint in Chromium of a 100,000-message, 200-branch session.

Run:  python benchmarks/studio.py               (100,000 messages, 200 branches)
      python benchmarks/studio.py --quick       (20,000 messages, 50 branches)
      THREADLINE_CHROMIUM=/path/to/chromium  (default: /usr/bin/chromium)

The session is written with the store's bulk append (``store.append_messages`` in batches of
10,000, one transaction each) into a fresh SQLite file; ``threadline serve`` runs it in its own
process (a real uvicorn); Playwright drives Chromium. "First paint" is the page's own clock
(``performance.now()``, from navigation start) at the first animation frame after the head's
card is in the DOM — the key is already in the tab's session storage, so no prompt. Each
opening is a fresh tab; the median of ``--runs`` is reported with the cards in the DOM, the
requests the page made and the bytes it read from /v1. Target (issue 25): ≤ 1,000 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import threadline
from threadline.server import create_key

APP = "bench"
SID = "big"
BATCH = 10_000


def message(i: int, text: str) -> dict[str, Any]:
    role = "user" if i % 2 else "assistant"
    return {"id": f"m{i}", "role": role, "parts": [{"type": "text", "text": text}]}


def generate(url: str, count: int, branches: int) -> tuple[str, float]:
    """Write the session (a main line of ``count - 2 * branches`` messages and ``branches``
    two-message branches off random points of it); the head is the main line's leaf."""
    words = ["the", "trip", "hotel", "beach", "museum", "train", "dinner", "quiet", "street"]
    rng = random.Random(25)
    main = count - 2 * branches
    started = time.perf_counter()
    store = threadline.connect(url)
    try:
        for start in range(1, main + 1, BATCH):
            batch = [
                message(i, f"{i}: " + " ".join(rng.choices(words, k=rng.randint(8, 40))))
                for i in range(start, min(main, start + BATCH - 1) + 1)
            ]
            store.append_messages(APP, SID, batch, None if start == 1 else f"m{start - 1}")
        for b in range(branches):
            fork = f"m{rng.randint(1, main - 1)}"
            twig = [
                {"id": f"b{b}-1", "role": "assistant", "parts": [{"type": "text", "text": "alt"}]},
                {"id": f"b{b}-2", "role": "user", "parts": [{"type": "text", "text": "more"}]},
            ]
            store.append_messages(APP, SID, twig, fork)
        store.session(APP, SID).set_head(f"m{main}")
    finally:
        store.close()
    return f"m{main}", time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "threadline", "serve", "--db", url, "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                return process, base
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def first_paint(browser: Any, base: str, key: str, head: str) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.add_init_script(f"sessionStorage.setItem('threadline.apiKey', {key!r})")
    page = context.new_page()
    sizes: list[int] = []
    page.on("response", lambda r: sizes.append(int(r.headers.get("content-length") or 0))
            if "/v1/" in r.url else None)  # fmt: skip
    try:
        page.goto(f"{base}/ui/#/s/{SID}")
        page.wait_for_selector(f'li.node[data-id="{head}"]', timeout=60_000)
        painted = page.evaluate(
            "new Promise((ok) => requestAnimationFrame(() => ok(performance.now())))"
        )
        cards = page.locator("#main li.node").count()
        return {
            "ms": float(painted),
            "cards": cards,
            "requests": len(sizes),
            "kb": sum(sizes) / 1024,
        }
    finally:
        context.close()


def whole_tree(base: str, key: str) -> float:
    """Seconds to read every page of GET .../tree, what the viewer did before paging (its
    drawing came on top of that)."""
    started = time.perf_counter()
    after: int | None = 0
    while after is not None:
        request = urllib.request.Request(
            f"{base}/v1/sessions/{SID}/tree?limit=1000&attachments=ref&after_seq={after}",
            headers={"Authorization": f"Bearer {key}"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            after = json.loads(response.read())["next_after_seq"]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--messages", type=int)
    parser.add_argument("--branches", type=int)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    count = args.messages or (20_000 if args.quick else 100_000)
    branches = args.branches or (50 if args.quick else 200)
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("THREADLINE_CHROMIUM", "/usr/bin/chromium")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp, 'studio.db').as_posix()}"
        head, took = generate(url, count, branches)
        key = create_key(url, APP)
        process, base = serve(url, Path(tmp, "serve.log"))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=["--no-sandbox", "--headless", "--disable-gpu"]
                )
                first_paint(browser, base, key, head)  # warm-up: caches, the server's first reads
                runs = [first_paint(browser, base, key, head) for _ in range(args.runs)]
                browser.close()
            whole = whole_tree(base, key)
        finally:
            process.terminate()
            process.wait(timeout=15)
    ms = statistics.median(r["ms"] for r in runs)
    print(f"generated {count:,} messages / {branches} branches in {took:.1f} s (bulk append)")
    print()
    print(
        f"| messages | branches | first paint (median of {len(runs)}) | worst | cards in DOM ",
        end="",
    )
    print("| /v1 requests | /v1 KiB | whole tree read (the old viewer's first step) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {count:,} | {branches} | {ms:,.0f} ms | {max(r['ms'] for r in runs):,.0f} ms "
        f"| {runs[0]['cards']:.0f} | {runs[0]['requests']:.0f} | {runs[0]['kb']:,.1f} "
        f"| {whole * 1000:,.0f} ms |"
    )
    print()
    print("target: first paint <= 1,000 ms:", "met" if ms <= 1000 else "NOT met")


if __name__ == "__main__":
    main()
