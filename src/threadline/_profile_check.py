"""What a profile document may hold: its validation, pure (no I/O).

:func:`check_document` turns a JSON object into the normalised parts of a
:class:`threadline.Profile`, or raises ``InvalidArgumentError`` naming the path of the first
wrong value (``blocks[2].scope``). :func:`check_for_tenant` adds the rules of a profile
written over HTTP (api.md clarification 27): model endpoints only from the operator's
allowlist, no filesystem path.

>>> parts = check_document({"blocks": [{"label": "memory", "max_tokens": 500}]})
>>> parts["blocks"][0]
{'label': 'memory', 'kind': 'writable', 'scope': 'session', 'max_tokens': 500}
>>> check_document({"blocks": [{"label": "memory", "scope": "team"}]})  # doctest: +ELLIPSIS
Traceback (most recent call last):
threadline.errors.InvalidArgumentError: blocks[0].scope must be one of session, user, ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from threadline.errors import InvalidArgumentError

__all__ = [
    "BLOCK_KINDS",
    "FORMAT",
    "check_document",
    "check_for_tenant",
    "check_spec",
]

FORMAT = 1
"""The profile document's format version (``"format"``)."""

BLOCK_KINDS = ("writable", "readonly", "skill", "search", "history", "code")
_SCOPES = ("session", "user", "app")
_PROVIDES = ("writable", "readonly", "skill", "search")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# tiktoken's encodings: another name would only fail later, in every process reading it.
TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base", "o200k_harmony", "p50k_base", "p50k_edit",
                      "r50k_base", "gpt2")  # fmt: skip
_COUNTER = re.compile(rf"^(default|tiktoken:({'|'.join(TIKTOKEN_ENCODINGS)}))$")

# Keys each block kind may hold besides label, kind, description and max_tokens.
_BLOCK_KEYS: dict[str, tuple[str, ...]] = {
    "writable": ("scope", "initial"),
    "readonly": ("text",),
    "skill": ("skills_dir", "store"),
    "search": ("store",),
    "history": ("history",),
    "code": ("scope", "provides"),
}
_COMPACTION_KEYS = (
    "after_tokens",
    "min_messages",
    "keep",
    "tail_token_budget",
    "protect_head",
    "min_tail_messages",
    "summarizer",
)
_TOP_KEYS = (
    "format",
    "version",
    "updated_at",
    "blocks",
    "compaction",
    "size_policy",
    "runner",
    "model",
    "token_counter",
    "cached_prompt",
)


def _fail(path: str, message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"{path} {message}")


def _object(value: object, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"must be a JSON object, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str) or key not in allowed:
            where = f"{path}.{key}" if path != "profile" else str(key)
            raise InvalidArgumentError(f"{where} is not a known key (known: {', '.join(allowed)})")
    return dict(value)


def _text(value: object, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        kind = "a string" if empty else "a non-empty string"
        raise _fail(path, f"must be {kind}, got {value!r}")
    return value


def _int(value: object, path: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(path, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _choice(value: object, path: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise _fail(path, f"must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


def check_spec(value: object, path: str, *, code: bool = True) -> dict[str, Any]:
    """A named summarizer or model: ``{"type": "extractive"}`` (summarizers only),
    ``{"type": "openai", "base_url", "model", "api_key_env"}``, or ``{"type": "code"}`` for
    one that exists only as Python code in some process.

    >>> check_spec({"type": "openai", "base_url": "http://llm:8000/v1", "model": "m",
    ...             "api_key_env": "LLM_KEY"}, "model")["model"]
    'm'
    >>> check_spec({"type": "openai", "base_url": "ftp://x"}, "model")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: model.base_url must be an http(s) URL, got 'ftp://x'
    """
    if not isinstance(value, Mapping):
        raise _fail(path, f"must be a JSON object, got {type(value).__name__}")
    kinds = ("extractive", "openai", "code") if code else ("openai",)
    kind = _choice(value.get("type"), f"{path}.type", kinds)
    if kind == "extractive":
        _object(value, path, ("type",))
        return {"type": kind}
    if kind == "code":
        spec = _object(value, path, ("type", "name"))
        if "name" in spec:
            _text(spec["name"], f"{path}.name")
        return spec
    spec = _object(value, path, ("type", "base_url", "model", "api_key_env"))
    url = _text(spec.get("base_url"), f"{path}.base_url", empty=False)
    if not re.match(r"^https?://[^\s/]+", url):
        raise _fail(f"{path}.base_url", f"must be an http(s) URL, got {url!r}")
    _text(spec.get("model"), f"{path}.model", empty=False)
    env = spec.get("api_key_env")
    if env is not None and not (isinstance(env, str) and _ENV_NAME.match(env)):
        raise _fail(f"{path}.api_key_env", f"must name an environment variable, got {env!r}")
    return {"type": kind, "base_url": url, "model": spec["model"], "api_key_env": env}


def _block(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"must be a JSON object, got {type(value).__name__}")
    kind = _choice(value.get("kind", "writable"), f"{path}.kind", BLOCK_KINDS)
    raw = _object(value, path, ("label", "kind", "description", "max_tokens", *_BLOCK_KEYS[kind]))
    block: dict[str, Any] = {"label": _text(raw.get("label"), f"{path}.label", empty=False)}
    block["kind"] = kind
    if raw.get("description") is not None:
        block["description"] = _text(raw["description"], f"{path}.description")
    if "scope" in _BLOCK_KEYS[kind]:
        block["scope"] = _choice(raw.get("scope", "session"), f"{path}.scope", _SCOPES)
    if raw.get("max_tokens") is not None:
        block["max_tokens"] = _int(raw["max_tokens"], f"{path}.max_tokens", minimum=1)
    checks: dict[str, Callable[[object, str], Any]] = {
        "initial": _text,
        "text": _text,
        "skills_dir": lambda v, p: _text(v, p, empty=False),
        "store": _bool,
        "history": lambda v, p: _choice(v, p, ("user", "app")),
        "provides": lambda v, p: _choice(v, p, _PROVIDES),
    }
    for key in _BLOCK_KEYS[kind]:
        if key != "scope" and raw.get(key) is not None:
            block[key] = checks[key](raw[key], f"{path}.{key}")
    if kind == "readonly" and "text" not in block:
        raise _fail(f"{path}.text", "is required for a readonly block")
    if kind == "skill" and ("skills_dir" in block) == bool(block.get("store")):
        raise _fail(path, "needs exactly one of skills_dir or store: true (a skill block)")
    if kind == "history":
        block.setdefault("history", "user")
    if kind == "code":
        block.setdefault("provides", "writable")
    return block


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, f"must be true or false, got {value!r}")
    return value


def _optional_int(value: object, path: str, minimum: int) -> int | None:
    return None if value is None else _int(value, path, minimum=minimum)


def _compaction(value: object) -> dict[str, Any]:
    raw = _object(value, "compaction", _COMPACTION_KEYS)
    out: dict[str, Any] = {}
    minimums = {"after_tokens": 1, "min_messages": 1, "keep": 0, "tail_token_budget": 0,
                "protect_head": 0, "min_tail_messages": 0}  # fmt: skip
    for key, minimum in minimums.items():
        if raw.get(key) is not None:
            out[key] = _int(raw[key], f"compaction.{key}", minimum=minimum)
    if ("min_messages" in out) != ("keep" in out):
        raise _fail("compaction", "needs both min_messages and keep, or neither")
    if "keep" in out and out["keep"] >= out["min_messages"]:
        raise _fail("compaction.keep", f"must be below min_messages ({out['min_messages']})")
    out["summarizer"] = check_spec(raw.get("summarizer", {"type": "extractive"}),
                                   "compaction.summarizer")  # fmt: skip
    return out


def _runner(value: object) -> dict[str, Any]:
    raw = _object(value, "runner", ("runs", "max_context_tokens", "max_steps"))
    out: dict[str, Any] = {
        "runs": _optional_int(raw.get("runs"), "runner.runs", 0),
        "max_context_tokens": _optional_int(
            raw.get("max_context_tokens"), "runner.max_context_tokens", 0
        ),
    }
    out["max_steps"] = _int(raw.get("max_steps", 8), "runner.max_steps", minimum=1)
    return out


def _model(value: object) -> dict[str, Any]:
    return check_spec(value, "model", code=False)


def check_document(document: object) -> dict[str, Any]:
    """The profile's parts, normalised (module docstring); ``version`` and ``updated_at``
    are the store's and pass through unchecked here.

    >>> check_document({"format": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: format must be 1 (this threadline reads ...), got 2
    """
    raw = _object(document, "profile", _TOP_KEYS)
    if raw.get("format", FORMAT) != FORMAT:
        raise _fail(
            "format",
            f"must be {FORMAT} (this threadline reads profile format {FORMAT}), "
            f"got {raw['format']!r}",
        )
    blocks_raw = raw.get("blocks", [])
    if not isinstance(blocks_raw, list):
        raise _fail("blocks", f"must be a list, got {type(blocks_raw).__name__}")
    blocks = [_block(item, f"blocks[{i}]") for i, item in enumerate(blocks_raw)]
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        if block["label"] in seen:
            raise _fail(f"blocks[{i}].label", f"{block['label']!r} is used twice")
        seen.add(block["label"])
    size = raw.get("size_policy")
    if size is not None:
        size = _object(size, "size_policy", ("policy", "max_message_bytes"))
        if size.get("policy") is not None:
            _choice(size["policy"], "size_policy.policy", ("attach", "truncate", "error"))
        if size.get("max_message_bytes") is not None:
            _int(size["max_message_bytes"], "size_policy.max_message_bytes", minimum=1)
        size = {k: v for k, v in size.items() if v is not None}
    counter = raw.get("token_counter")
    if counter is not None and not (isinstance(counter, str) and _COUNTER.fullmatch(counter)):
        names = ", ".join(TIKTOKEN_ENCODINGS)
        raise _fail(
            "token_counter",
            f'must be "default" or "tiktoken:<encoding>" ({names}), got {counter!r}',
        )
    return {
        "blocks": tuple(blocks),
        "compaction": None if raw.get("compaction") is None else _compaction(raw["compaction"]),
        "size_policy": size or None,
        "runner": _runner(raw.get("runner", {})),
        "model": None if raw.get("model") is None else _model(raw["model"]),
        "token_counter": counter,
        "cached_prompt": _bool(raw.get("cached_prompt", False), "cached_prompt"),
    }


def _specs(parts: Mapping[str, Any]) -> dict[str, Any]:
    compaction = parts.get("compaction") or {}
    return {"model": parts.get("model"), "compaction.summarizer": compaction.get("summarizer")}


def check_for_tenant(
    parts: Mapping[str, Any],
    allowed_models: Mapping[str, tuple[str, str | None]],
    current: Mapping[str, Any] | None = None,
) -> None:
    """Refuse what a tenant may not set over HTTP: a model or summarizer endpoint outside
    ``allowed_models`` (``name -> (base_url, api_key_env)``, from ``serve --allow-model``)
    and a filesystem path (``skills_dir``). What ``current`` (the stored profile's parts,
    written by the operator) already holds stays allowed, unchanged, so a document read
    from ``GET /v1/profile`` can be edited and written back.

    >>> parts = check_document({"model": {"type": "openai", "base_url": "http://evil.test/v1",
    ...                                   "model": "m", "api_key_env": "AWS_SECRET"}})
    >>> check_for_tenant(parts, {"local": ("http://llm:8000/v1", "LLM_KEY")})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: model names an endpoint the operator did not allow ...
    """
    pairs = set(allowed_models.values())
    before = _specs(current or {})
    for path, spec in _specs(parts).items():
        if spec is None or spec["type"] in ("extractive", "code") or spec == before[path]:
            continue
        if (spec["base_url"], spec.get("api_key_env")) not in pairs:
            names = ", ".join(sorted(allowed_models)) or "none"
            raise _fail(
                path,
                f"names an endpoint the operator did not allow (allowed: {names}); ask the "
                "operator to run serve --allow-model NAME=base_url,env",
            )
    kept = {
        (b["label"], b["skills_dir"])
        for b in (current or {}).get("blocks", ())
        if "skills_dir" in b
    }
    for i, block in enumerate(parts.get("blocks", ())):
        if "skills_dir" in block and (block["label"], block["skills_dir"]) not in kept:
            raise _fail(
                f"blocks[{i}].skills_dir",
                "is a server path: set skills directories with serve --config or the library",
            )
