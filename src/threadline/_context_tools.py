"""The memory tools a session's context blocks call for: ``set_context``, ``load_context``,
``unload_context`` and ``search_context``, over a :class:`ToolHost` (a ``Session``).

Re-exported by :mod:`threadline.tools`, the public home of these names.

>>> import threadline
>>> list(build_context_tools(threadline.Session.create(":memory:").with_context("memory")))
['set_context']
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from threadline._toolset import NO_RESULTS, Tool, Toolset, checked_tool, object_schema
from threadline.context.render import usage_percent
from threadline.errors import ReadOnlyBlockError
from threadline.types import ContextBlock


class ToolHost(Protocol):
    """What the context tools need from a session (``Session`` implements it).

    >>> import threadline
    >>> host: ToolHost = threadline.Session.create(":memory:").with_context("memory")
    >>> tools = build_context_tools(host)
    >>> tools.execute("set_context", {"label": "memory", "content": "likes tea"})
    'Written to memory. Usage: 3 tokens'
    """

    def get_context_blocks(self) -> list[ContextBlock]:
        """Every block, in registration order.

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> [(b.label, b.writable) for b in host.get_context_blocks()]
        [('memory', True)]
        """
        ...

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (``set_context`` with ``action="replace"``).

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> host.replace_context_block("memory", "likes tea").content
        'likes tea'
        """
        ...

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Append to a writable block (``set_context`` with ``action="append"``).

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> _ = host.append_context_block("memory", "likes tea")
        >>> host.append_context_block("memory", "lives in Oslo").content
        'likes tea\\nlives in Oslo'
        """
        ...

    def write_context_entry(
        self, label: str, content: str, *, title: str | None = None, description: str | None = None
    ) -> str:
        """Store one entry of a skill or search block; return its key.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        'pirate'
        """
        ...

    def load_context_entry(self, label: str, key: str) -> str | None:
        """A skill document (``load_context``), or ``None``; it then counts as loaded.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> host.load_context_entry("skills", key), host.loaded_skills
        ('Talk like a pirate.', {'skills:pirate'})
        """
        ...

    def search_context_block(self, label: str, query: str) -> str | None:
        """Search a searchable block (``search_context``); ``None`` when nothing matches.

        >>> import threadline
        >>> from threadline.context import StoreSearchProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "notes", provider=StoreSearchProvider(store))
        >>> _ = host.write_context_entry("notes", "The user drinks green tea.", title="tea")
        >>> print(host.search_context_block("notes", "tea"))
        [tea]
        The user drinks green tea.
        """
        ...

    def unload_skill(self, label: str, key: str) -> bool:
        """Unload a loaded skill (``unload_context``); ``False`` if it was not loaded.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> _ = host.load_context_entry("skills", key)
        >>> host.unload_skill("skills", key), host.unload_skill("skills", key)
        (True, False)
        """
        ...

    @property
    def loaded_skills(self) -> set[str]:
        """Skills currently loaded, as ``"label:key"``.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> host.loaded_skills
        set()
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> _ = host.load_context_entry("skills", key)
        >>> host.loaded_skills
        {'skills:pirate'}
        """
        ...


def _kind_name(block: ContextBlock) -> str:
    if block.is_skill:
        return "skill collection, keyed entries"
    if block.is_searchable:
        return "searchable, keyed entries"
    return "writable"


def _usage(block: ContextBlock) -> str:
    if block.max_tokens is None:
        return f"Usage: {block.tokens} tokens"
    percent = usage_percent(block.tokens, block.max_tokens)
    return f"Usage: {percent}% ({block.tokens}/{block.max_tokens} tokens)"


def _find(host: ToolHost, label: str) -> ContextBlock | None:
    return next((b for b in host.get_context_blocks() if b.label == label), None)


def _set_context_description(writable: Sequence[ContextBlock]) -> str:
    lines = [
        "Save information in one of your context blocks. Writes are durable: they persist "
        "across turns and sessions and show in your system prompt from its next refresh.",
        "",
        "Writable blocks:",
        *(
            f'- "{b.label}" ({_kind_name(b)}): {b.description or "no description"}'
            for b in writable
        ),
        "",
        'action: "replace" (default) overwrites a block; "append" adds the content on a new '
        "line. Keep blocks within their token limits.",
    ]
    if any(b.is_skill or b.is_searchable for b in writable):
        lines += [
            "",
            "Keyed blocks store one entry per write. Pass metadata: { title, description } to "
            "name the entry (the same title updates the same entry; without a title the key "
            "is derived from the content) and to describe it in a skill listing.",
        ]
    return "\n".join(lines)


def _set_context_tool(
    host: ToolHost, writable: Sequence[ContextBlock], refused: Collection[str]
) -> Tool:
    properties: dict[str, Any] = {
        "label": {
            "type": "string",
            "enum": [b.label for b in writable],
            "description": "Label of the block to write.",
        },
        "content": {"type": "string", "description": "Text to write."},
        "action": {
            "type": "string",
            "enum": ["replace", "append"],
            "default": "replace",
            "description": "replace (default) or append; ignored for keyed blocks.",
        },
    }
    if any(b.is_skill or b.is_searchable for b in writable):
        properties["metadata"] = {
            "type": "object",
            "description": "For keyed (skill or searchable) blocks only.",
            "properties": {
                "title": {"type": "string", "description": "Entry title; decides its key."},
                "description": {"type": "string", "description": "One-line summary."},
            },
            "additionalProperties": False,
        }

    def run(args: dict[str, Any]) -> str:
        label, content = args["label"], args["content"]
        action = args.get("action") or "replace"
        if action not in ("replace", "append"):
            return f'Error: unknown action "{action}"; use "replace" or "append"'
        block = _find(host, label)
        if block is None:
            return f'Error: block "{label}" not found'
        if block.scope in refused:
            return f'Error: block "{label}" is shared by the whole app: not writable here'
        if not block.writable:
            return f'Error: block "{label}" is readonly'
        if block.is_skill or block.is_searchable:
            meta = args.get("metadata") or {}
            key = host.write_context_entry(
                label, content, title=meta.get("title"), description=meta.get("description")
            )
            return f'Indexed "{key}" in {label}.'
        write = host.append_context_block if action == "append" else host.replace_context_block
        try:
            updated = write(label, content)
        except ReadOnlyBlockError:
            return f'Error: block "{label}" is readonly'
        return f"Written to {label}. {_usage(updated)}"

    schema = object_schema(properties, ["label", "content"])
    return checked_tool("set_context", _set_context_description(writable), schema, run)


def _label_key_schema(labels: list[str], what: str) -> dict[str, Any]:
    return object_schema(
        {
            "label": {"type": "string", "enum": labels, "description": f"Label of the {what}."},
            "key": {"type": "string", "description": "Key of the document, as listed."},
        },
        ["label", "key"],
    )


def _skill_tools(host: ToolHost, skills: list[str]) -> list[Tool]:
    def not_skill(label: str) -> str:
        return f'Error: "{label}" is not a skill block. Skill blocks: {", ".join(skills)}'

    def load(args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        if label not in skills:
            return not_skill(label)
        content = host.load_context_entry(label, key)
        return content if content is not None else f"Not found: {key}"

    def unload(args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        if label not in skills:
            return not_skill(label)
        if host.unload_skill(label, key):
            return f'Unloaded "{key}" from {label}. Context reclaimed.'
        return f'Skill "{key}" is not currently loaded in "{label}".'

    loaded = sorted(host.loaded_skills)
    status = (
        f" Currently loaded: {', '.join(loaded)}." if loaded else " No skills currently loaded."
    )
    listing = ", ".join(f'"{label}"' for label in skills)
    return [
        checked_tool(
            "load_context",
            "Load the full text of a document from a skill block (skill blocks list their "
            f"documents as `- key: description`). Skill blocks: {listing}. Unload it with "
            "unload_context once you no longer need it.",
            _label_key_schema(skills, "skill block"),
            load,
        ),
        checked_tool(
            "unload_context",
            "Unload a skill document loaded earlier with load_context, freeing context space; "
            f"it can be loaded again later.{status}",
            _label_key_schema(skills, "skill block"),
            unload,
        ),
    ]


def _search_tool(host: ToolHost, searchable: Sequence[ContextBlock]) -> Tool:
    labels = [b.label for b in searchable]

    def run(args: dict[str, Any]) -> str:
        label, query = args["label"], args["query"]
        if label not in labels:
            return f'Error: "{label}" is not searchable. Searchable blocks: {", ".join(labels)}'
        return host.search_context_block(label, query) or NO_RESULTS

    listing = "\n".join(f'- "{b.label}": {b.description or "no description"}' for b in searchable)
    schema = object_schema(
        {
            "label": {"type": "string", "enum": labels, "description": "Block to search."},
            "query": {"type": "string", "description": "Words or a quoted phrase to find."},
        },
        ["label", "query"],
    )
    description = f"Search a searchable context block for matching entries.\n{listing}"
    return checked_tool("search_context", description, schema, run)


def build_context_tools(host: ToolHost, *, read_only_scopes: Collection[str] = ()) -> Toolset:
    """The memory tools the host's blocks call for, computed now.

    ``set_context`` if any block is writable, ``load_context``/``unload_context`` if any is a
    skill block, ``search_context`` if any is searchable. Blocks whose scope is in
    ``read_only_scopes`` are not offered for writing, and a write naming one is refused (a
    service acting for one user passes ``("app",)``: what every user sees stays the
    operator's).

    >>> import threadline
    >>> session = threadline.Session.create(":memory:").with_context("memory")
    >>> list(build_context_tools(session))
    ['set_context']
    >>> shared = session.with_context("rules", scope="app")
    >>> list(build_context_tools(shared, read_only_scopes=("app",))["set_context"].parameters
    ...      ["properties"]["label"]["enum"])
    ['memory']
    """
    blocks = host.get_context_blocks()
    tools: list[Tool] = []
    writable = [b for b in blocks if b.writable and b.scope not in read_only_scopes]
    if writable:
        tools.append(_set_context_tool(host, writable, frozenset(read_only_scopes)))
    skills = [b.label for b in blocks if b.is_skill]
    if skills:
        tools.extend(_skill_tools(host, skills))
    searchable = [b for b in blocks if b.is_searchable]
    if searchable:
        tools.append(_search_tool(host, searchable))
    return Toolset(tools)
