"""``threadline demo``: a scripted conversation on embedded SQLite, printed as it goes.

A regenerated answer (a branch), a checkout back to the first branch, a search, memory
blocks edited through a tool call, two users, scoped state, a fork and an automatic
compaction — then how to look at the result (``show``, ``serve`` and the viewer).
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

import threadline
from threadline.cli._common import ENV_APP, CliError, JsonOption, console, emit_json, info_json
from threadline.cli._show import draw_tree
from threadline.messages import assistant, text_of, tool_call, user
from threadline.session import Session
from threadline.summarizers import named

__all__ = ["APP", "USER", "demo"]

APP = "demo"
USER = "ana"


def demo(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            show_default=False,
            help="SQLite file to write (default: a new file in a temporary directory).",
        ),
    ] = None,
    app: Annotated[
        str,
        typer.Option("--app", envvar=ENV_APP, show_envvar=True, help="The app to write."),
    ] = APP,
    user: Annotated[
        str, typer.Option("--user", help="The user owning the trip (a second user is added).")
    ] = USER,
    as_json: JsonOption = False,
) -> None:
    """Run a scripted conversation and print what happens. On embedded SQLite: branches,
    checkout, search, memory blocks, users, state, a fork and compaction."""
    for name, value in (("--app", app), ("--user", user)):
        if not value.strip():
            raise CliError(f"{name} must name something")
    path = db or str(Path(tempfile.mkdtemp(prefix="threadline-")) / "demo.db")
    if Path(path).exists():
        with threadline.connect(path, read_only=True) as existing:
            if existing.count_sessions(app):
                raise CliError(f"{path} already holds the demo (app {app!r}); pass a new --db")
    out = Console(quiet=True) if as_json else console()
    out.rule("[bold]threadline demo")
    where = f"[cyan]{escape(path)}[/] (app [cyan]{escape(app)}[/], user [cyan]{escape(user)}[/])"
    out.print(f"Embedded SQLite store: {where}")
    with threadline.connect(path) as store:
        manager = (
            threadline.SessionManager(store, app_name=app)
            .with_context("soul", provider="You are a concise travel assistant.")
            .with_context("memory", description="Facts about the user", max_tokens=200)
            .with_context("profile", description="Shared across the user's chats", scope="user")
            .with_searchable_history("history")
            .on_compaction(threadline.create_compact_function(named({"type": "extractive"})))
        )
        # Stored, so every other process (threadline serve, the CLI, the viewer) has the
        # same blocks and compaction without being told (docs/profiles.md).
        saved = manager.save_profile()
        out.print(
            f"Profile of app [cyan]{escape(app)}[/] saved (version {saved.version}): "
            f"{len(saved.blocks)} blocks, extractive compaction"
        )
        _branches(out, manager, store, user)
        _memory(out, manager)
        _users_and_fork(out, manager, user)
        _compaction(out, store, app, user)
        listed = manager.list().sessions
    if as_json:
        emit_json(
            {
                "db": path,
                "app": app,
                "user": user,
                "sessions": [info_json(i) for i in listed],
                "profile_version": saved.version,
                "next": _next_steps(path, app),
            }
        )
        return
    out.rule("[bold green]done")
    out.print("\n[bold]Look around:[/]")
    for command in _next_steps(path, app):
        out.print(f"  {command}", markup=False, soft_wrap=True)


def _next_steps(path: str, app: str) -> list[str]:
    name = shlex.quote(app)
    return [
        f"threadline sessions {path} --app {name}",
        f"threadline show {path} trip --app {name}",
        f"threadline keys create --db {path} --app {name}   # a key for the viewer",
        f"threadline serve --db {path}   # then open http://127.0.0.1:8000/ui",
    ]


def _tree(out: Console, store: threadline.Store, app: str, session_id: str) -> None:
    dump = store.dump_session(app, session_id)
    assert dump is not None
    for line in draw_tree(dump, out, full=False):
        out.print(line, soft_wrap=True)


def _branches(
    out: Console, manager: threadline.SessionManager, store: threadline.Store, user_id: str
) -> None:
    manager.create("Trip to Lisbon", session_id="trip", user_id=user_id)
    trip = manager.get_session("trip")
    trip.append_message(user("I want to visit Lisbon in May. Where should I stay?", id="u1"))
    trip.append_message(assistant("Alfama is charming: steep streets and fado bars.", id="a1"))
    # Regenerate the answer: a second child of u1 is a branch; the head moves to it.
    trip.append_message(
        assistant("Try Príncipe Real: quiet, leafy, near the nightlife.", id="a2"), "u1"
    )
    trip.append_message(user("Is it walkable to the river?", id="u2"))
    trip.append_message(assistant("Yes, about 20 minutes downhill to Cais do Sodré.", id="a3"))
    out.print("\n[bold]1. A regenerated answer is a branch[/] (● marks the head's path)")
    _tree(out, store, manager.app_name, "trip")
    trip.checkout("a1")
    out.print("\n[bold]2. checkout('a1') moves the head back to the first answer[/]")
    _tree(out, store, manager.app_name, "trip")
    out.print("History now:", [text_of(m)[:28] for m in trip.get_history()])
    out.print("\n[bold]3. search('walk river')[/] (stemmed: 'walkable' matches 'walk')")
    for hit in trip.search("walk river"):
        line = Text(f"  [{hit.role}] {hit.content}")
        line.append(f"  (score {hit.score:.2f})", style="dim")
        out.print(line)


def _memory(out: Console, manager: threadline.SessionManager) -> None:
    trip = manager.get_session("trip")
    prompt = trip.freeze_system_prompt()
    tools = trip.tools()
    out.print("\n[bold]4. Memory blocks render into a frozen system prompt[/]")
    out.print(prompt, markup=False)
    args = {"label": "memory", "content": "Ana travels in May; prefers quiet areas."}
    result = tools.execute("set_context", args)
    trip.append_message(tool_call("set_context", args, result))
    out.print(f"\n[bold]5. The model calls set_context[/] → {result!r}")
    same = trip.freeze_system_prompt() == prompt
    out.print(f"Frozen prompt unchanged mid-turn: [green]{same}[/]; after refresh:")
    out.print(trip.refresh_system_prompt().split("\n\n")[1], markup=False)


def _users_and_fork(out: Console, manager: threadline.SessionManager, user_id: str) -> None:
    manager.update_state("trip", {"user:home": "Porto", "app:season": "spring", "budget": 900})
    other = "ben" if user_id != "ben" else "bea"
    manager.create("Weekend in Madrid", session_id="madrid", user_id=other)
    manager.append("madrid", user("Tapas recommendations near Sol?"))
    manager.update_state("madrid", {"user:home": "Valencia", "temp:draft": "not stored"})
    out.print("\n[bold]6. Two users, scoped state[/]")
    for sid in ("trip", "madrid"):
        out.print(f"  {sid}: {manager.get_state(sid)}", markup=False)
    fork = manager.fork("trip", "a1", name="Lisbon, Alfama plan")
    out.print(
        f"\n[bold]7. fork('trip', 'a1')[/] → new session {fork.id[:8]}… with "
        f"{manager.get_message_count(fork.id)} messages"
    )
    manager.add_usage("trip", 1200, 350, 0.0042)
    out.print("\n[bold]8. Sessions, newest first[/]")
    for info in manager.list().sessions:
        out.print(
            f"  {info.id[:8]:<8}  user={info.user_id}  {info.name!r}  "
            f"messages={info.message_count}  tokens={info.input_tokens}/{info.output_tokens}",
            markup=False,
        )
    hits = manager.search("Lisbon", user_id=user_id)
    who = escape(user_id)
    out.print(f"\n[bold]9. Cross-session search 'Lisbon' for user {who}[/]: {len(hits)} hit(s)")


def _compaction(out: Console, store: threadline.Store, app: str, user_id: str) -> None:
    from threadline.summarizers import extractive

    session = (
        Session(store, session_id="long-chat", app_name=app, user_id=user_id)
        .on_compaction(threadline.create_compact_function(extractive(), tail_token_budget=60))
        .compact_after(150)
    )
    topics = ["flights", "hotels", "museums", "trams", "food", "fado", "beaches", "day trips"]
    for topic in topics:
        session.append_message(user(f"Tell me about {topic} in Lisbon. Any tips?"))
        session.append_message(assistant(f"For {topic}: book early, ask locals, check prices."))
    history = session.get_history()
    out.print(
        f"\n[bold]10. Automatic compaction[/] (threshold 150 tokens): {len(topics) * 2} stored "
        f"messages read back as {len(history)}; {len(session.get_compactions())} overlay(s)"
    )
    summary = next(m for m in history if m["id"].startswith("compaction_"))
    out.print(text_of(summary), markup=False)
