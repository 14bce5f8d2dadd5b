"""Built-in context providers.

* :class:`StaticContext` / :class:`CallableContext` — read-only text.
* :class:`StoreContextProvider` — writable text kept in the store (the auto-wired default).
* :class:`StoreSearchProvider` — keyed entries, full-text searchable, kept in the store.
* :class:`StoreSkillProvider` — keyed documents loaded on demand, kept in the store.
* :class:`DirectorySkillProvider` — one Markdown file per skill, read-only.

>>> StaticContext("You are helpful.").get()
'You are helpful.'
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Self

from threadline.context.kinds import call_provider, has_method
from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.store._generation import takes_generation

if TYPE_CHECKING:
    from threadline.store.base import Entry, OwnerKind, Store

__all__ = [
    "CallableContext",
    "DirectorySkillProvider",
    "StaticContext",
    "StoreContextProvider",
    "StoreSearchProvider",
    "StoreSkillProvider",
    "as_provider",
]

SCOPES = ("session", "user", "app")
SEARCH_LIMIT = 10
"""How many entries :meth:`StoreSearchProvider.search` returns at most."""


class StaticContext:
    """Read-only block with fixed text.

    >>> StaticContext("Be brief.").get()
    'Be brief.'
    """

    def __init__(self, text: str) -> None:
        self.text = text

    def get(self) -> str | None:
        """Return the text.

        >>> StaticContext("You are helpful.").get()
        'You are helpful.'
        """
        return self.text

    def __repr__(self) -> str:
        return f"StaticContext({self.text!r})"


class CallableContext:
    """Read-only block whose text comes from a zero-argument function, called on every read.

    >>> CallableContext(lambda: "today is Monday").get()
    'today is Monday'
    """

    def __init__(self, fn: Callable[[], str | None]) -> None:
        self.fn = fn

    def get(self) -> str | None:
        """Call the function (again on every read).

        >>> import itertools
        >>> reads = itertools.count(1)
        >>> ctx = CallableContext(lambda: f"read {next(reads)} times")
        >>> ctx.get(), ctx.get()
        ('read 1 times', 'read 2 times')
        """
        result: str | None = call_provider(self, "fn")
        return result


def as_provider(value: object) -> object:
    """Return ``value`` as a provider: an object with ``get()`` unchanged; a string or a
    zero-argument callable wrapped read-only; anything else raises ``InvalidArgumentError``.

    >>> as_provider("You are helpful.").get()
    'You are helpful.'
    """
    if isinstance(value, str):
        return StaticContext(value)
    if has_method(value, "get") and not isinstance(value, Mapping):
        return value
    if callable(value):
        return CallableContext(value)
    raise InvalidArgumentError(
        "a context provider must have a get() method, or be a string or a zero-argument "
        f"callable; got {type(value).__name__}"
    )


def _need_label(label: str | None, source: object) -> str:
    if label is None:
        raise ThreadlineError(
            f"{type(source).__name__} has no label: pass label=... or register it as a "
            "context block (the session calls init(label))"
        )
    return label


class StoreContextProvider:
    """Writable block stored in a :class:`~threadline.store.Store`, keyed by scope.

    ``scope="session"`` keeps one text per session, ``"user"`` one per user of the app (shared
    by the user's sessions), ``"app"`` one for the whole app. The label comes from
    ``init(label)`` when not given. ``initial`` is what the block reads as until it is first
    written (a profile's ``initial`` text); nothing is stored for it.

    >>> import threadline
    >>> p = StoreContextProvider(threadline.connect(":memory:"), session_id="s1", label="memory")
    >>> p.set("likes tea"); p.get()
    'likes tea'
    >>> StoreContextProvider(threadline.connect(":memory:"), label="m", initial="None yet.").get()
    'None yet.'
    """

    def __init__(
        self,
        store: Store,
        *,
        app_name: str = "default",
        scope: OwnerKind = "session",
        session_id: str | None = None,
        user_id: str | None = None,
        label: str | None = None,
        generation: Callable[[], int | None] | None = None,
        initial: str | None = None,
    ) -> None:
        if scope not in SCOPES:
            raise InvalidArgumentError(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        if scope == "user" and not user_id:
            raise InvalidArgumentError(
                "a scope='user' block needs a user id: call for_user(...) on the session "
                "(or pass user_id=...)"
            )
        self.store = store
        self.app_name = app_name
        self.scope: OwnerKind = scope
        self.session_id = session_id or "default"
        self.user_id = user_id
        self.label = label
        # The generation the owning Session is bound to (a session-scoped block is that
        # creation's: once it is deleted, reads and writes raise SessionNotFoundError).
        self._generation = generation if scope == "session" else None
        self._checks: bool | None = None
        self.initial = initial

    def _expect(self) -> dict[str, int]:
        """``generation=`` for the store call, when bound and the store takes it."""
        if self._generation is None:
            return {}
        generation = self._generation()
        if generation is None:
            return {}
        if self._checks is None:
            self._checks = takes_generation(self.store.get_block)
        return {"generation": generation} if self._checks else {}

    @property
    def owner_id(self) -> str:
        """Session id, user id or ``""`` (app scope): whose text this is.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> StoreContextProvider(store, session_id="s1").owner_id
        's1'
        >>> StoreContextProvider(store, scope="user", user_id="u1").owner_id
        'u1'
        >>> StoreContextProvider(store, scope="app").owner_id
        ''
        """
        if self.scope == "session":
            return self.session_id
        if self.scope == "user":
            return self.user_id or ""
        return ""

    def init(self, label: str) -> None:
        """Adopt the block label unless one was given to the constructor.

        >>> import threadline
        >>> p = StoreContextProvider(threadline.connect(":memory:"))
        >>> p.init("memory"); p.init("other"); p.label
        'memory'
        """
        if self.label is None:
            self.label = label

    def get(self) -> str | None:
        """The stored text, or ``None`` if never written.

        >>> import threadline
        >>> StoreContextProvider(threadline.connect(":memory:"), label="memory").get() is None
        True
        """
        label = _need_label(self.label, self)
        stored = self.store.get_block(
            self.app_name, self.scope, self.owner_id, label, **self._expect()
        )
        return self.initial if stored is None else stored

    def set(self, content: str) -> None:
        """Replace the stored text.

        >>> import threadline
        >>> p = StoreContextProvider(threadline.connect(":memory:"), label="memory")
        >>> p.set("likes tea"); p.set("likes coffee"); p.get()
        'likes coffee'
        """
        label = _need_label(self.label, self)
        self.store.set_block(
            self.app_name,
            self.scope,
            self.owner_id,
            label,
            content,
            user_id=self.user_id,
            **self._expect(),
        )

    def __repr__(self) -> str:
        return f"StoreContextProvider(scope={self.scope!r}, label={self.label!r})"


class _StoreEntries:
    """Shared plumbing of the store-backed keyed providers: entries per (app, label).

    Without an explicit ``app_name`` each session that registers the provider reads and
    writes the entries of its own app (``for_session`` gives it a view bound to that app), so
    ``StoreSearchProvider(store)`` shared by managers of apps "x" and "y" never serves one
    app's entries to the other; used on its own it uses app ``"default"``.
    """

    def __init__(self, store: Store, *, app_name: str | None = None, label: str | None = None):
        self.store = store
        self._app_name = app_name
        self.label = label

    @property
    def app_name(self) -> str:
        """The app whose entries this provider reads and writes."""
        return self._app_name or "default"

    def for_session(self, app_name: str, session_id: str, user_id: str | None) -> Self:
        """A copy bound to ``app_name`` (unless this provider was given an app)."""
        view = copy.copy(self)
        if view._app_name is None:
            view._app_name = app_name
        return view

    def init(self, label: str) -> None:
        """Adopt the block label unless one was given to the constructor."""
        if self.label is None:
            self.label = label

    def _label(self) -> str:
        return _need_label(self.label, self)


class StoreSearchProvider(_StoreEntries):
    """Search block: keyed entries indexed for full-text search, shared per (app, label).

    >>> import threadline
    >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
    >>> p.set("tea", "The user drinks green tea."); p.get()
    '1 entries indexed.'
    """

    def get(self) -> str | None:
        """``N entries indexed.``, or ``None`` when there are none.

        >>> import threadline
        >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
        >>> p.get() is None
        True
        >>> p.set("tea", "Green tea."); p.set("cake", "Lemon cake."); p.get()
        '2 entries indexed.'
        """
        count = self.store.count_entries(self.app_name, self._label())
        return f"{count} entries indexed." if count else None

    def search(self, query: str) -> str | None:
        """Best 10 entries as ``[key]\\ncontent`` separated by blank lines; ``None`` if none.

        >>> import threadline
        >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
        >>> p.set("tea", "The user drinks green tea."); print(p.search("tea"))
        [tea]
        The user drinks green tea.
        >>> p.search("coffee") is None
        True
        """
        hits = self.store.search_entries(self.app_name, self._label(), query, SEARCH_LIMIT)
        if not hits:
            return None
        return "\n\n".join(f"[{e.key}]\n{e.content}" for e in hits[:SEARCH_LIMIT])

    def set(self, key: str, content: str) -> None:
        """Insert or replace the entry ``key``.

        >>> import threadline
        >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
        >>> p.set("tea", "Green tea."); p.set("tea", "Black tea."); print(p.search("tea"))
        [tea]
        Black tea.
        """
        self.store.put_entry(self.app_name, self._label(), key, content)

    def __repr__(self) -> str:
        return f"StoreSearchProvider(app_name={self._app_name!r}, label={self.label!r})"


def _listing(items: Iterable[tuple[str, str | None]]) -> str | None:
    lines = [f"- {key}: {desc}" if desc else f"- {key}" for key, desc in items]
    return "\n".join(lines) if lines else None


class StoreSkillProvider(_StoreEntries):
    """Skill block: keyed documents in the store, listed in the prompt, loaded on demand.

    >>> import threadline
    >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
    >>> p.set("pirate", "Talk like a pirate.", "Pirate voice"); p.get()
    '- pirate: Pirate voice'
    """

    def get(self) -> str | None:
        """One ``- key: description`` line per skill (``- key`` without one), by key.

        >>> import threadline
        >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
        >>> p.set("pirate", "Talk like a pirate.", "Pirate voice"); p.set("haiku", "5-7-5.")
        >>> print(p.get())
        - haiku
        - pirate: Pirate voice
        """
        entries: list[Entry] = self.store.list_entries(self.app_name, self._label())
        return _listing((e.key, e.description) for e in entries)

    def load(self, key: str) -> str | None:
        """The document stored under ``key``, or ``None``.

        >>> import threadline
        >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
        >>> p.set("pirate", "Talk like a pirate."); p.load("pirate"), p.load("ninja")
        ('Talk like a pirate.', None)
        """
        entry = self.store.get_entry(self.app_name, self._label(), key)
        return entry.content if entry is not None else None

    def set(self, key: str, content: str, description: str | None = None) -> None:
        """Insert or replace the skill ``key``.

        >>> import threadline
        >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
        >>> p.set("pirate", "Arr.", "Pirate voice"); p.set("pirate", "Arrr!", "Pirate talk")
        >>> p.get(), p.load("pirate")
        ('- pirate: Pirate talk', 'Arrr!')
        """
        self.store.put_entry(self.app_name, self._label(), key, content, description)

    def __repr__(self) -> str:
        return f"StoreSkillProvider(app_name={self._app_name!r}, label={self.label!r})"


_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = ("---", "...")


def _split_front_matter(text: str) -> tuple[list[str], str]:
    """Return (front-matter lines, body). No front matter → ([], text)."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return [], text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FENCE:
            body = "".join(lines[i + 1 :]).lstrip("\r\n")
            return [line.rstrip("\r\n") for line in lines[1:i]], body
    return [], text  # an unclosed fence is ordinary text


def _front_matter_description(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        name, sep, value = line.partition(":")
        if not sep or name.strip() != "description":
            continue
        value = value.strip()
        if value in ("", ">", "|", ">-", "|-"):  # YAML block scalar: indented lines follow
            more = [ln.strip() for ln in lines[i + 1 :] if ln[:1] in (" ", "\t")]
            value = " ".join(more)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        return value or None
    return None


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        match = _HEADING.match(line)
        if match and match.group(1).strip():
            return match.group(1).strip()
    return None


class DirectorySkillProvider:
    """Read-only skill block over a directory: each ``*.md`` file is one skill.

    The key is the file stem; ``load`` returns the file without its front matter; the
    description is the front matter's ``description:`` or else the first heading's text.
    ``keys`` restricts the skills offered to those stems.

    >>> DirectorySkillProvider("skills/", keys=["pirate"]).keys
    frozenset({'pirate'})
    """

    def __init__(self, path: str | os.PathLike[str], keys: Iterable[str] | None = None) -> None:
        if isinstance(keys, str):
            raise InvalidArgumentError("keys must be a collection of skill names, not a string")
        self.path = Path(path)
        self.keys = frozenset(keys) if keys is not None else None

    def _files(self) -> dict[str, Path]:
        if not self.path.is_dir():
            raise ThreadlineError(f"skill directory {str(self.path)!r} does not exist")
        found = sorted(p for p in self.path.glob("*.md") if p.is_file())
        return {p.stem: p for p in found if self.keys is None or p.stem in self.keys}

    @staticmethod
    def _read(path: Path) -> tuple[str | None, str]:
        """(description, body) of one skill file."""
        meta, body = _split_front_matter(path.read_text(encoding="utf-8"))
        return _front_matter_description(meta) or _first_heading(body), body

    def get(self) -> str | None:
        """One ``- key: description`` line per skill file, by key; ``None`` if none.

        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = pathlib.Path(folder, "pirate.md").write_text("# Pirate voice\\nSay arr.\\n")
        ...     print(DirectorySkillProvider(folder).get())
        - pirate: Pirate voice
        """
        files = self._files()
        return _listing((key, self._read(path)[0]) for key, path in sorted(files.items()))

    def load(self, key: str) -> str | None:
        """The skill's text without front matter, or ``None`` for an unknown key.

        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     text = "---\\ndescription: Pirate voice\\n---\\nSay arr.\\n"
        ...     _ = pathlib.Path(folder, "pirate.md").write_text(text)
        ...     skills = DirectorySkillProvider(folder)
        ...     skills.load("pirate"), skills.load("ninja")
        ('Say arr.\\n', None)
        """
        path = self._files().get(key)  # only listed stems: a key can never name another path
        return self._read(path)[1] if path is not None else None

    def __repr__(self) -> str:
        return f"DirectorySkillProvider({str(self.path)!r})"
