"""``threadline profile show|set``: an app's stored profile (docs/profiles.md)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import typer

from threadline.cli._common import (
    AppOption,
    CliError,
    DbOption,
    JsonOption,
    console,
    emit_json,
    open_store,
    pick_app,
    positionals,
)
from threadline.profile import Profile

profile = typer.Typer(
    name="profile",
    help="An app's profile: its memory blocks, compaction, model (kept in the store).",
    no_args_is_help=True,
    add_completion=False,
)


def read_document(path: str) -> dict[str, Any]:
    """The profile document in ``path``: ``.toml`` or JSON (``-`` reads JSON from stdin).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
    ...     _ = f.write('[[blocks]]\\nlabel = "memory"\\nscope = "user"\\n')
    >>> read_document(f.name)["blocks"]
    [{'label': 'memory', 'scope': 'user'}]
    >>> os.unlink(f.name)
    """
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    try:
        document = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"{path} is not valid {'TOML' if path.endswith('.toml') else 'JSON'}: "
                       f"{exc}") from None  # fmt: skip
    if not isinstance(document, dict):
        raise CliError(f"{path} must hold a profile object, got {type(document).__name__}")
    return document


def _describe(found: Profile) -> list[str]:
    lines = [f"version {found.version}" + (f", written {found.updated_at:%Y-%m-%d %H:%M:%S} UTC"
                                            if found.updated_at else "")]  # fmt: skip
    for block in found.blocks:
        extra = ", ".join(
            f"{k}={v}" for k, v in block.items() if k not in ("label", "kind", "text", "initial")
        )
        lines.append(
            f"  block {block['label']!r}: {block['kind']}" + (f" ({extra})" if extra else "")
        )
    if found.compaction is not None:
        spec = found.compaction["summarizer"]
        rest = {k: v for k, v in found.compaction.items() if k != "summarizer"}
        lines.append(f"  compaction: summarizer {spec['type']}" + (f", {rest}" if rest else ""))
    if found.model is not None:
        lines.append(f"  model: {found.model['model']} at {found.model['base_url']}")
    runner = {k: v for k, v in found.runner.items() if v is not None}
    lines.append(f"  runner: {runner}")
    return lines


def show_profile(
    ctx: typer.Context, db: DbOption = None, app: AppOption = None, as_json: JsonOption = False
) -> None:
    """Show the app's stored profile (--json: the document itself, as GET /v1/profile)."""
    url, _ = positionals(ctx.args, [], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        found = Profile.load(store, app)
    if found is None:
        if as_json:
            emit_json({"version": 0, **Profile().to_dict()})
            return
        raise CliError(f"app {app!r} has no profile: write one with threadline profile set FILE")
    if as_json:
        emit_json({"version": found.version, **found.to_dict()})
        return
    console().print(f"profile of app {app!r}, " + "\n".join(_describe(found)), markup=False)


def set_profile(
    ctx: typer.Context, db: DbOption = None, app: AppOption = None, as_json: JsonOption = False
) -> None:
    """Write the app's profile from FILE (.json or .toml; - reads JSON from stdin); checked
    first, nothing written when it is wrong."""
    url, (path,) = positionals(ctx.args, ["FILE"], db)
    parsed = Profile.from_dict(read_document(path))
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        saved = parsed.save(store, app)
    if as_json:
        emit_json({"version": saved.version, **saved.to_dict()})
    else:
        console().print(f"profile of app {app!r} written: version {saved.version}", markup=False)
