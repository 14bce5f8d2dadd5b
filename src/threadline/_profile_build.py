"""Between a profile's parts and a manager's settings: what a builder declared, as profile
parts (:func:`parts_of`), and the settings a stored profile describes (:func:`settings_of`),
with the builder's own calls laid over them (:func:`overlay`).

>>> from threadline._settings import SessionSettings
>>> from threadline.context import ContextConfig
>>> declared = SessionSettings()
>>> declared.add_context(ContextConfig("memory", max_tokens=500, scope="user"))
>>> parts_of(declared, history=type(None))["blocks"]
[{'label': 'memory', 'kind': 'writable', 'scope': 'user', 'max_tokens': 500}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from threadline._settings import SessionSettings
from threadline.compaction.function import CompactFunction, create_compact_function
from threadline.context import (
    ContextConfig,
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
    provider_kind,
)
from threadline.context.providers import as_provider
from threadline.errors import ThreadlineError
from threadline.store.base import Store
from threadline.summarizers import NamedSummarizer, named
from threadline.tokens import default_token_counter, tiktoken_counter

__all__ = ["ProvidedByCode", "counter_named", "overlay", "parts_of", "settings_of"]

# create_compact_function's own defaults: a profile names only what differs from them.
_FUNCTION_DEFAULTS = {"protect_head": 3, "tail_token_budget": 20_000, "min_tail_messages": 2}


class ProvidedByCode:
    """A block the profile lists as ``{"kind": "code"}``: its provider is Python code in some
    other process. Here it reads the block's stored text, if any, and cannot be written.

    >>> import threadline
    >>> block = ProvidedByCode(threadline.connect(":memory:"), "session", "writable")
    >>> view = block.for_session("default", "s1", None)
    >>> view.init("notes"); view.get() is None
    True
    """

    provided_by_code = True

    def __init__(self, store: Store, scope: Any, provides: str, reader: Any = None) -> None:
        self.store, self.scope, self.provides, self._reader = store, scope, provides, reader

    def for_session(self, app_name: str, session_id: str, user_id: str | None) -> ProvidedByCode:
        """A view bound to one session (the stored text of a writable one, by scope)."""
        if self.provides != "writable" or (self.scope == "user" and not user_id):
            return self
        reader = StoreContextProvider(
            self.store, app_name=app_name, scope=self.scope, session_id=session_id,
            user_id=user_id,
        )  # fmt: skip
        return ProvidedByCode(self.store, self.scope, self.provides, reader)

    def init(self, label: str) -> None:
        """Adopt the block's label (the stored text is keyed by it)."""
        if self._reader is not None:
            self._reader.init(label)

    def get(self) -> str | None:
        """The stored text, or ``None``."""
        return None if self._reader is None else self._reader.get()


def counter_named(name: str | None) -> Callable[..., int] | None:
    """The token counter a profile names: ``"default"`` (the heuristic) or
    ``"tiktoken:<encoding>"`` (needs ``tiktoken``); ``None`` for none.

    >>> counter_named("default") is default_token_counter
    True
    """
    if name is None:
        return None
    if name == "default":
        return default_token_counter
    try:
        return tiktoken_counter(name.split(":", 1)[1])
    except Exception as exc:  # not installed, or its encoding files unreachable here
        raise ThreadlineError(
            f"token_counter {name!r} cannot be used in this process: {exc}"
        ) from exc


def _block_of(config: ContextConfig, history: type) -> dict[str, Any]:
    block: dict[str, Any] = {"label": config.label}
    provider = config.provider
    extra: dict[str, Any]
    if provider is None:
        extra = {"kind": "writable", "scope": config.scope}
        if config.initial is not None:
            extra["initial"] = config.initial
    elif isinstance(provider, (str, StaticContext)):
        text = provider if isinstance(provider, str) else provider.get()
        extra = {"kind": "readonly", "text": text or ""}
    elif isinstance(provider, DirectorySkillProvider):
        extra = {"kind": "skill", "skills_dir": str(provider.path)}
    elif isinstance(provider, StoreSkillProvider):
        extra = {"kind": "skill", "store": True}
    elif isinstance(provider, StoreSearchProvider):
        extra = {"kind": "search", "store": True}
    elif isinstance(provider, history):
        extra = {"kind": "history", "history": getattr(provider, "_scope", "user")}
    elif isinstance(provider, ProvidedByCode):
        extra = {"kind": "code", "scope": provider.scope, "provides": provider.provides}
    else:
        provides = provider_kind(as_provider(provider))
        extra = {"kind": "code", "scope": config.scope, "provides": provides}
    block["kind"] = extra.pop("kind")
    if config.description is not None:
        block["description"] = config.description
    if "scope" in extra:
        block["scope"] = extra.pop("scope")
    if config.max_tokens is not None:
        block["max_tokens"] = config.max_tokens
    block.update(extra)
    return block


def _compaction_of(settings: SessionSettings) -> dict[str, Any] | None:
    fn = settings.compact_fn
    if fn is None and settings.compact_threshold is None and settings.compact_min_messages is None:
        return None
    out: dict[str, Any] = {}
    if settings.compact_threshold is not None:
        out["after_tokens"] = settings.compact_threshold
    if settings.compact_min_messages is not None:
        out["min_messages"] = settings.compact_min_messages
        out["keep"] = settings.compact_keep
    summarize = getattr(fn, "summarize", None)
    if isinstance(fn, CompactFunction) and isinstance(summarize, NamedSummarizer):
        for key, default in _FUNCTION_DEFAULTS.items():
            if getattr(fn, key) != default:
                out[key] = getattr(fn, key)
        out["summarizer"] = dict(summarize.spec)
    else:
        out["summarizer"] = {"type": "code"}
    return out


def parts_of(settings: SessionSettings, *, history: type) -> dict[str, Any]:
    """What ``settings`` declare, as profile parts (``history`` is the class of the
    manager's history search block). Providers that exist only as code become
    ``{"kind": "code"}`` entries, a compaction without a named summarizer
    ``{"type": "code"}``.
    """
    size: dict[str, Any] = {}
    if settings.size_policy is not None:
        size["policy"] = settings.size_policy
    if settings.max_message_bytes is not None:
        size["max_message_bytes"] = settings.max_message_bytes
    counter = settings.token_counter
    return {
        "blocks": [_block_of(config, history) for config in settings.context],
        "compaction": _compaction_of(settings),
        "size_policy": size or None,
        "token_counter": "default" if counter is default_token_counter else None,
        "cached_prompt": settings.cached_prompt and settings.prompt_cache is None,
    }


def _config_of(
    block: Mapping[str, Any], store: Store, history: Callable[[str], Any]
) -> ContextConfig:
    kind = block["kind"]
    provider: Any = None
    if kind == "readonly":
        provider = StaticContext(block["text"])
    elif kind == "skill":
        skills = block.get("skills_dir")
        provider = DirectorySkillProvider(skills) if skills else StoreSkillProvider(store)
    elif kind == "search":
        provider = StoreSearchProvider(store)
    elif kind == "history":
        provider = history(block["history"])
    elif kind == "code":
        provider = ProvidedByCode(store, block.get("scope", "session"), block["provides"])
    return ContextConfig(
        block["label"],
        block.get("description"),
        block.get("max_tokens"),
        provider,
        block.get("scope", "session"),
        block.get("initial"),
    )


def settings_of(
    parts: Mapping[str, Any], store: Store, *, history: Callable[[str], Any]
) -> SessionSettings:
    """The settings a profile's parts describe, for a manager over ``store``
    (``history(scope)`` builds the manager's history search block)."""
    settings = SessionSettings()
    for block in parts.get("blocks", ()):
        settings.add_context(_config_of(block, store, history))
    compaction = parts.get("compaction")
    counter = counter_named(parts.get("token_counter"))
    if compaction is not None:
        spec = compaction["summarizer"]
        if spec["type"] != "code":  # else no process but the one with the code compacts
            options = {k: compaction.get(k, v) for k, v in _FUNCTION_DEFAULTS.items()}
            settings.compact_fn = create_compact_function(
                named(spec), token_counter=counter, **options
            )
        if "after_tokens" in compaction:
            settings.compact_after(compaction["after_tokens"], counter)
        if "min_messages" in compaction:
            settings.compact_when(compaction["min_messages"], compaction["keep"])
    settings.token_counter = counter
    size = parts.get("size_policy") or {}
    given: frozenset[str] = getattr(store, "size_options", frozenset())  # connect()'s win
    settings.limit_size(
        None if "size_policy" in given else size.get("policy"),
        None if "max_message_bytes" in given else size.get("max_message_bytes"),
    )
    code = any(block["kind"] == "code" for block in parts.get("blocks", ()))
    # A process lacking a code-provided block would persist a prompt without its content.
    settings.cached_prompt = bool(parts.get("cached_prompt")) and not code
    return settings


def overlay(base: SessionSettings, declared: SessionSettings) -> SessionSettings:
    """``base`` (a profile's settings) with what the builder ``declared`` laid over it: a
    declared block replaces the profile's block of the same label, and every compaction,
    size or prompt setting the builder made wins.

    >>> base, mine = SessionSettings(), SessionSettings()
    >>> base.add_context(ContextConfig("memory", max_tokens=100))
    >>> mine.add_context(ContextConfig("memory", max_tokens=900))
    >>> [c.max_tokens for c in overlay(base, mine).context]
    [900]
    """
    out = base.copy()
    labels = [config.label for config in out.context]
    for config in declared.context:
        if config.label in labels:  # in the profile's place, so the prompt keeps its order
            out.context[labels.index(config.label)] = config
        else:
            out.context.append(config)
    if declared.cached_prompt:
        out.cached_prompt, out.prompt_cache = True, declared.prompt_cache
    if declared.compact_fn is not None:
        out.compact_fn = declared.compact_fn
    if declared.compact_threshold is not None:
        out.compact_threshold = declared.compact_threshold
        out.token_counter = declared.token_counter
    if declared.compact_min_messages is not None:
        out.compact_min_messages = declared.compact_min_messages
        out.compact_keep = declared.compact_keep
    if declared.error_handler is not None:
        out.error_handler = declared.error_handler
    if declared.size_policy is not None:
        out.size_policy = declared.size_policy
    if declared.max_message_bytes is not None:
        out.max_message_bytes = declared.max_message_bytes
    return out
