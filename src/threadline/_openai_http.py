"""Calls to an OpenAI-compatible Chat Completions endpoint over plain HTTP (``urllib``), for
what a profile names as data: a ``model`` for turns started by the service, an ``openai``
summarizer. A spec is ``{"type": "openai", "base_url", "model", "api_key_env"}``: the key is
read from that environment variable at each call and sent as ``Authorization: Bearer``; it
never appears in an error. Public through ``threadline.summarizers.named`` and the service.

>>> spec = {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
...         "api_key_env": "THREADLINE_NO_SUCH_KEY"}
>>> openai_summarize(spec)("Summarise this.")
Traceback (most recent call last):
threadline.errors.InvalidArgumentError: the model endpoint's API key is read from ...KEY, ...
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from threadline._profile_check import check_spec as profile_spec
from threadline.errors import InvalidArgumentError, ModelError
from threadline.formats import to_openai_chat
from threadline.tools import Toolset
from threadline.types import Message

__all__ = ["chat", "check_spec", "openai_model", "openai_summarize"]

#: How much of an endpoint's error answer an error message quotes.
EXCERPT_CHARS = 300


def check_spec(spec: object, where: str = "model") -> dict[str, Any]:
    """``spec`` checked as an OpenAI-compatible endpoint (the profile's rule,
    ``threadline._profile_check.check_spec``); ``InvalidArgumentError`` naming ``where`` and
    the field otherwise (a ``{"type": "code"}`` model exists only in some process's code).

    >>> check_spec({"type": "openai", "base_url": "https://api.example/v1", "model": "m",
    ...             "api_key_env": "KEY"})["model"]
    'm'
    >>> check_spec({"type": "openai", "base_url": "file:///etc", "model": "m"})
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: model.base_url must be an http(s) URL, got 'file:///etc'
    """
    return profile_spec(spec, where, code=False)


def _api_key(env: str | None) -> str:
    if env is None:  # an endpoint that takes no key (a local server)
        return ""
    key = os.environ.get(env)
    if not key:
        raise InvalidArgumentError(
            f"the model endpoint's API key is read from the environment variable {env}, "
            "which is not set"
        )
    return key


def _excerpt(raw: bytes, key: str) -> str:
    text = raw[: EXCERPT_CHARS * 4].decode("utf-8", "replace")
    if key:
        text = text.replace(key, "***")
    text = " ".join(text.split())
    return text[:EXCERPT_CHARS] + ("..." if len(text) > EXCERPT_CHARS else "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: following one would send the key to wherever the endpoint points
    (a 3xx then surfaces as ``ModelError`` with its status)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def chat(
    base_url: str,
    model: str,
    api_key_env: str | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """POST ``{base_url}/chat/completions`` and return the first choice's message (an OpenAI
    Chat message dict). The key is read from the environment variable ``api_key_env`` (``None``:
    no key sent). ``InvalidArgumentError`` when that variable is not set or ``base_url`` is
    not http(s); :class:`~threadline.errors.ModelError` (with the HTTP
    status and the start of the answer, never the key) when the endpoint fails, cannot be
    reached or answers without a message.

    >>> import os; os.environ["THREADLINE_DOC_KEY"] = "sk-doc"
    >>> chat("http://127.0.0.1:9/v1", "m", "THREADLINE_DOC_KEY", [], timeout=2)
    Traceback (most recent call last):
    threadline.errors.ModelError: model endpoint http://127.0.0.1:9/v1/chat/... unreachable: ...
    """
    if not base_url.lower().startswith(("http://", "https://")):
        raise InvalidArgumentError("base_url must be an http(s) URL")
    key = _api_key(api_key_env)
    url = base_url.rstrip("/") + "/chat/completions"
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    if tools:
        body["tools"] = list(tools)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = _excerpt(exc.read() or b"", key)
        raise ModelError(
            f"model endpoint {url} answered HTTP {exc.code}: {detail}", status=exc.code
        ) from None
    except (urllib.error.URLError, OSError) as exc:  # refused, DNS, timed out, reset
        reason = getattr(exc, "reason", None) or exc
        raise ModelError(f"model endpoint {url} unreachable: {reason}") from None
    try:
        message = json.loads(raw)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        message = None
    if not isinstance(message, dict):
        raise ModelError(
            f"model endpoint {url} answered without choices[0].message: {_excerpt(raw, key)}",
            status=200,
        )
    return message


def openai_model(spec: Mapping[str, Any]) -> Callable[[str, list[Message], Toolset], Any]:
    """A :class:`~threadline.Runner` model function calling the endpoint ``spec`` names: the
    system prompt and the messages as OpenAI Chat messages, the toolset as OpenAI tools; it
    returns the reply message (the Runner takes OpenAI Chat messages).

    >>> model = openai_model({"type": "openai", "base_url": "http://127.0.0.1:9/v1",
    ...                       "model": "m", "api_key_env": "THREADLINE_NO_SUCH_KEY"})
    >>> callable(model)
    True
    """
    endpoint = check_spec(spec)

    def model(system: str, messages: list[Message], tools: Toolset) -> dict[str, Any]:
        sent = [{"role": "system", "content": system}] if system else []
        sent.extend(to_openai_chat(messages))
        return chat(
            endpoint["base_url"],
            endpoint["model"],
            endpoint["api_key_env"],
            sent,
            tools.to_openai() or None,
        )

    return model


def openai_summarize(spec: Mapping[str, Any]) -> Callable[[str], str]:
    """A ``summarize(prompt) -> str`` (for ``create_compact_function``) calling the endpoint
    ``spec`` names with the prompt as one user message; a reply without text is a
    :class:`~threadline.errors.ModelError`.

    >>> summarize = openai_summarize({"type": "openai", "base_url": "https://api.example/v1",
    ...                               "model": "m", "api_key_env": "KEY"})
    >>> callable(summarize)
    True
    """
    endpoint = check_spec(spec, "summarizer")

    def summarize(prompt: str) -> str:
        reply = chat(
            endpoint["base_url"],
            endpoint["model"],
            endpoint["api_key_env"],
            [{"role": "user", "content": prompt}],
        )
        content = reply.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ModelError(f"model endpoint {endpoint['base_url']} answered no summary text")
        return content

    return summarize
