"""The ``threadline`` command: ``demo``, ``history``, ``search`` and ``sessions``.

``history``, ``search`` and ``sessions`` only read: they open a SQLite store read-only, so
they never write to the file (nor create it when the path is wrong) and need no write access.

``threadline demo`` runs a scripted conversation on embedded SQLite — a regenerated answer
(a branch), a checkout back to the first branch, a search, memory blocks edited through a tool
call, two users, scoped state and a fork — and prints the conversation tree.

>>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import threadline
from threadline.messages import assistant, text_of, tool_call, user
from threadline.session import Session

if TYPE_CHECKING:
    from rich.console import Console
    from rich.tree import Tree

__all__ = ["main"]

_POSTGRES_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``threadline`` command; returns the exit code.

    >>> main(["demo", "--db", "/tmp/threadline-demo.db"])  # doctest: +SKIP
    0
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except (threadline.ThreadlineError, ValueError) as exc:  # bad input: a message, no traceback
        print(f"threadline: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadline", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=threadline.__version__)
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="run a scripted conversation and print its tree")
    demo.add_argument("--db", help="SQLite file to use (default: a new temporary file)")
    demo.set_defaults(run=_demo)
    for name, helptext, runner in (
        ("history", "print a session's message tree", _history),
        ("search", "full-text search over an app's sessions", _search),
        ("sessions", "list an app's sessions, newest first", _sessions),
    ):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("store", help="store URL or SQLite path")
        cmd.add_argument("--app", default="default", help="app name (default: default)")
        if name == "history":
            cmd.add_argument("session_id")
        if name == "search":
            cmd.add_argument("query")
            cmd.add_argument("--user", default=None, help="only this user's sessions")
        if name == "sessions":
            cmd.add_argument("--user", default=None, help="only this user's sessions")
            cmd.add_argument("--limit", type=int, default=20)
        cmd.set_defaults(run=runner)
    return parser


def _console() -> Console:
    from rich.console import Console

    return Console()


def _demo(args: argparse.Namespace) -> int:
    console = _console()
    path = args.db or str(Path(tempfile.mkdtemp(prefix="threadline-")) / "demo.db")
    console.rule("[bold]threadline demo")
    console.print(f"Embedded SQLite store: [cyan]{path}[/]")
    with threadline.connect(path) as store:
        manager = (
            threadline.SessionManager(store, app_name="demo")
            .with_context("soul", provider="You are a concise travel assistant.")
            .with_context("memory", description="Facts about the user", max_tokens=200)
            .with_context("profile", description="Shared across the user's chats", scope="user")
            .with_searchable_history("history")
        )
        _demo_branches(console, manager)
        _demo_memory(console, manager)
        _demo_users_and_fork(console, manager)
        _demo_compaction(console, store)
    console.rule("[bold green]done")
    return 0


def _demo_branches(console: Console, manager: threadline.SessionManager) -> None:
    manager.create("Trip to Lisbon", session_id="trip", user_id="ana")
    trip = manager.get_session("trip")
    trip.append_message(user("I want to visit Lisbon in May. Where should I stay?", id="u1"))
    trip.append_message(assistant("Alfama is charming: steep streets and fado bars.", id="a1"))
    # Regenerate the answer: a second child of u1 is a branch; the head moves to it.
    trip.append_message(
        assistant("Try Príncipe Real: quiet, leafy, near the nightlife.", id="a2"), "u1"
    )
    trip.append_message(user("Is it walkable to the river?", id="u2"))
    trip.append_message(assistant("Yes, about 20 minutes downhill to Cais do Sodré.", id="a3"))
    console.print("\n[bold]1. A regenerated answer is a branch[/] (● marks the head path)")
    console.print(_tree(trip))
    trip.checkout("a1")
    console.print("\n[bold]2. checkout('a1') moves the head back to the first answer[/]")
    console.print(_tree(trip))
    console.print("History now:", [text_of(m)[:28] for m in trip.get_history()])
    console.print("\n[bold]3. search('walk river')[/] (stemmed: 'walkable' matches 'walk')")
    for hit in trip.search("walk river"):
        console.print(f"  \\[{hit.role}] {_short(hit.content)}  (score {hit.score:.2f})")


def _demo_memory(console: Console, manager: threadline.SessionManager) -> None:
    trip = manager.get_session("trip")
    prompt = trip.freeze_system_prompt()
    tools = trip.tools()
    console.print("\n[bold]4. Memory blocks render into a frozen system prompt[/]")
    console.print(prompt, markup=False, highlight=False)
    args = {"label": "memory", "content": "Ana travels in May; prefers quiet areas."}
    result = tools.execute("set_context", args)
    trip.append_message(tool_call("set_context", args, result))
    console.print(f"\n[bold]5. The model calls set_context[/] → {result!r}")
    same = trip.freeze_system_prompt() == prompt
    console.print(f"Frozen prompt unchanged mid-turn: [green]{same}[/]; after refresh:")
    console.print(trip.refresh_system_prompt().split("\n\n")[1], markup=False, highlight=False)


def _demo_users_and_fork(console: Console, manager: threadline.SessionManager) -> None:
    manager.update_state("trip", {"user:home": "Porto", "app:season": "spring", "budget": 900})
    manager.create("Weekend in Madrid", session_id="madrid", user_id="ben")
    manager.append("madrid", user("Tapas recommendations near Sol?"))
    manager.update_state("madrid", {"user:home": "Valencia", "temp:draft": "not stored"})
    console.print("\n[bold]6. Two users, scoped state[/]")
    for sid in ("trip", "madrid"):
        console.print(f"  {sid}: {manager.get_state(sid)}")
    fork = manager.fork("trip", "a1", name="Lisbon, Alfama plan")
    console.print(
        f"\n[bold]7. fork('trip', 'a1')[/] → new session {fork.id[:8]}… with "
        f"{manager.get_message_count(fork.id)} messages"
    )
    manager.add_usage("trip", 1200, 350, 0.0042)
    console.print("\n[bold]8. Sessions, newest first[/]")
    for info in manager.list().sessions:
        console.print(
            f"  {info.id[:8]:<8}  user={info.user_id}  {info.name!r}  "
            f"messages={info.message_count}  tokens={info.input_tokens}/{info.output_tokens}"
        )
    hits = manager.search("Lisbon", user_id="ana")
    console.print(f"\n[bold]9. Cross-session search 'Lisbon' for user ana[/]: {len(hits)} hit(s)")


def _demo_compaction(console: Console, store: threadline.Store) -> None:
    from threadline.summarizers import extractive

    session = (
        Session(store, session_id="long-chat", app_name="demo")
        .on_compaction(threadline.create_compact_function(extractive(), tail_token_budget=60))
        .compact_after(150)
    )
    topics = ["flights", "hotels", "museums", "trams", "food", "fado", "beaches", "day trips"]
    for topic in topics:
        session.append_message(user(f"Tell me about {topic} in Lisbon. Any tips?"))
        session.append_message(assistant(f"For {topic}: book early, ask locals, check prices."))
    history = session.get_history()
    console.print(
        f"\n[bold]10. Automatic compaction[/] (threshold 150 tokens): {len(topics) * 2} stored "
        f"messages read back as {len(history)}; {len(session.get_compactions())} overlay(s)"
    )
    summary = next(m for m in history if m["id"].startswith("compaction_"))
    console.print(_short(text_of(summary), 110), highlight=False)


def _tree(session: Session) -> Tree:
    """A rich Tree of the whole message tree of a session, head path highlighted."""
    from rich.tree import Tree

    head_path = set(m["id"] for m in session.get_history())
    head = session.get_latest_leaf()
    root_tree = Tree(f"[bold]{session.session_id}[/]")
    path = session.get_history()
    roots = [path[0]] if path else []

    def add(parent: Tree, message: dict[str, Any]) -> None:
        marker = "●" if message["id"] in head_path else "○"
        tail = "  [yellow]← head[/]" if head and message["id"] == head["id"] else ""
        label = f"{marker} {message['id']} [dim]{message['role']}[/] {_short(text_of(message))}"
        node = parent.add(label + tail)
        for child in session.get_branches(message["id"]):
            add(node, child)

    for root in roots:
        add(root_tree, root)
    return root_tree


def _short(text: str, width: int = 60) -> str:
    from rich.markup import escape

    text = " ".join(text.split())
    return escape(text if len(text) <= width else text[: width - 1] + "…")


def _open_for_reading(url: str) -> threadline.Store:
    """Open ``url`` for a command that only reads: SQLite read-only (the file is not written,
    nor created when missing); PostgreSQL as usual (use a read-only role for that)."""
    if _POSTGRES_URL.match(url):
        return threadline.connect(url)
    return threadline.connect(url, read_only=True)


def _history(args: argparse.Namespace) -> int:
    with _open_for_reading(args.store) as store:
        session = Session(store, session_id=args.session_id, app_name=args.app)
        _console().print(_tree(session))
    return 0


def _search(args: argparse.Namespace) -> int:
    with _open_for_reading(args.store) as store:
        manager = threadline.SessionManager(store, app_name=args.app)
        console = _console()
        for hit in manager.search(args.query, user_id=args.user):
            console.print(f"{hit.session_id}  \\[{hit.role}] {_short(hit.content, 100)}")
    return 0


def _sessions(args: argparse.Namespace) -> int:
    with _open_for_reading(args.store) as store:
        page = threadline.SessionManager(store, app_name=args.app).list(
            user_id=args.user, limit=args.limit
        )
        console = _console()
        for info in page.sessions:
            console.print(
                f"{info.id}  {info.updated_at:%Y-%m-%d %H:%M}  {info.name or ''}  "
                f"({info.message_count} messages)"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
