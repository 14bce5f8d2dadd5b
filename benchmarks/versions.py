"""Two versions of threadline side by side: is this change slower than an earlier commit?

Run:  python benchmarks/versions.py                 (against HEAD~1)
      python benchmarks/versions.py f519f87 --rounds 7

The other version is exported with ``git archive`` to a temporary directory. Each round runs
the same workloads once for each version, alternating which goes first, every run in a fresh
interpreter on a fresh SQLite file, so drift on a shared machine lands on both sides. Reports
the median of the rounds and new/old (above 1.10 is a regression beyond noise):
  append       1,000 appends of varied text, one call each (µs per append)
  history      get_history() of a 1,000-message session (ms)
  search       a two-word search over 5,000 messages in 50 sessions (ms per query)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKLOAD = r"""
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import threadline
from textgen import TextGen

gen = TextGen(seed=3)
texts = [gen.message() for _ in range(6_000)]
out = {}
with tempfile.TemporaryDirectory() as tmp:
    store = threadline.connect(os.path.join(tmp, "bench.db"))
    session = threadline.Session.create(store).for_session("one")
    start = time.perf_counter()
    for text in texts[:1000]:
        session.append_message({"role": "user", "content": text})
    out["append"] = (time.perf_counter() - start) / 1000 * 1e6
    session.get_history()
    start = time.perf_counter()
    for _ in range(20):
        session.get_history()
    out["history"] = (time.perf_counter() - start) / 20 * 1e3
    for i, text in enumerate(texts[1000:]):
        store.append_messages("default", f"s{i % 50}", [
            {"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": text}]}])
    queries = ["deployment failed", "billing review", "cache layer", "Maria scheduled"] * 10
    threadline.Session.create(store).search(queries[0])
    start = time.perf_counter()
    for query in queries:
        store.search_messages("default", query, limit=10)
    out["search"] = (time.perf_counter() - start) / len(queries) * 1e3
    store.close()
print(json.dumps(out))
"""


def _export(revision: str, target: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def _run(src: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(src), str(ROOT / "benchmarks")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revision", nargs="?", default="HEAD~1")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(args.revision, Path(tmp))
        new_src = ROOT / "src"
        old: list[dict[str, float]] = []
        new: list[dict[str, float]] = []
        for i in range(args.rounds):
            pair = [(old, old_src), (new, new_src)]
            for sink, src in pair if i % 2 == 0 else pair[::-1]:
                sink.append(_run(src))
    header = f"{'workload':<10} {args.revision:>14} {'working tree':>14}  new/old"
    print(f"{header}  ({args.rounds} rounds)")
    for key, unit in (("append", "µs"), ("history", "ms"), ("search", "ms")):
        a = statistics.median(r[key] for r in old)
        b = statistics.median(r[key] for r in new)
        print(f"{key:<10} {a:>11.2f} {unit} {b:>11.2f} {unit}  {b / a:7.2f}")


if __name__ == "__main__":
    main()
