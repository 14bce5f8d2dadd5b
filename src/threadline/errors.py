"""Exception hierarchy: every error threadline raises on purpose derives from ThreadlineError.

Where a built-in base is the natural one (bad values, missing keys) the class also derives
from it, so ``except ValueError`` / ``except KeyError`` in user code keeps working.

>>> try:
...     raise MessageNotFoundError("m1")
... except KeyError as exc:
...     print(type(exc).__name__)
MessageNotFoundError
"""

from __future__ import annotations


class ThreadlineError(Exception):
    """Base class of every threadline error.

    >>> issubclass(StoreError, ThreadlineError), issubclass(BlockNotFoundError, ThreadlineError)
    (True, True)
    """


class InvalidMessageError(ThreadlineError, ValueError):
    """A message is not a valid UIMessage-shaped dict; nothing was stored.

    >>> import threadline
    >>> threadline.Session.create(":memory:").append_message("hi")
    Traceback (most recent call last):
    threadline.errors.InvalidMessageError: message must be a dict, got str
    """


class MessageTooLargeError(InvalidMessageError):
    """A message is over ``max_message_bytes`` (every size policy), or over the row limit with
    ``size_policy="error"``; nothing was stored.

    >>> import threadline
    >>> s = threadline.Session.create(threadline.connect(":memory:", max_message_bytes=1000))
    >>> s.for_session("s").append_message({"role": "user", "content": "x" * 2000})
    Traceback (most recent call last):
    threadline.errors.MessageTooLargeError: message is 2130 bytes; this store takes at most 1000
    """


class InvalidArgumentError(ThreadlineError, ValueError):
    """An argument is out of range or inconsistent (bad overlay range, keyed write...).

    >>> import threadline
    >>> threadline.Session.create(":memory:").get_history(limit=0)
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: limit must be between 1 and ...
    """


class AttachmentNotFoundError(InvalidArgumentError):
    """A well-formed attachment reference names nothing stored in this app.

    >>> import threadline
    >>> threadline.connect(":memory:").read_attachment("default", "sha256:" + "0" * 64)
    Traceback (most recent call last):
    threadline.errors.AttachmentNotFoundError: app 'default' has no attachment sha256:000000000000…
    """


class MessageNotFoundError(ThreadlineError, KeyError):
    """A message id is not in the session.

    >>> str(MessageNotFoundError("message 'm9' is not in this session"))
    "message 'm9' is not in this session"
    """

    def __str__(self) -> str:  # KeyError would repr() the argument; keep the message readable
        return str(self.args[0]) if self.args else "message not found"


class SessionNotFoundError(ThreadlineError, KeyError):
    """A session id is not registered in this app.

    >>> from threadline import SessionManager
    >>> SessionManager(":memory:").rename("nope", "New name")
    Traceback (most recent call last):
    threadline.errors.SessionNotFoundError: session 'nope' not found in app 'default'
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class SessionExistsError(ThreadlineError):
    """A session with that id already exists in this app.

    >>> from threadline import SessionManager
    >>> manager = SessionManager(":memory:")
    >>> _ = manager.create(session_id="s1")
    >>> manager.create(session_id="s1")
    Traceback (most recent call last):
    threadline.errors.SessionExistsError: session 's1' already exists in app 'default'
    """


class HeadMovedError(ThreadlineError):
    """A conditional append (``Store.append_messages(..., if_head=...)``) found the session's
    head elsewhere than the caller expected: another writer appended (or moved the head) since
    the caller read it. Nothing was written.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> store.append_messages("default", "s1", [{"id": "m2", "role": "user", "parts": []}],
    ...                       if_head=None)
    Traceback (most recent call last):
    threadline.errors.HeadMovedError: the head of session 's1' is 'm1', not None
    """


class ReadOnlyBlockError(ThreadlineError):
    """A write was attempted on a read-only context block.

    >>> from threadline.context import ContextBlocks, ContextConfig
    >>> ContextBlocks([ContextConfig("soul", provider="Be kind.")]).replace("soul", "Be rude.")
    Traceback (most recent call last):
    threadline.errors.ReadOnlyBlockError: block "soul" is readonly
    """


class BlockTooLargeError(ThreadlineError):
    """A write would exceed the block's ``max_tokens``; the provider was left untouched.

    >>> import threadline
    >>> s = threadline.Session.create(":memory:").with_context("memory", max_tokens=2)
    >>> s.replace_context_block("memory", "far too many words here")
    Traceback (most recent call last):
    threadline.errors.BlockTooLargeError: content of 7 tokens exceeds max_tokens (2) of block ...
    """


class BlockNotFoundError(ThreadlineError, KeyError):
    """No context block with that label is registered.

    >>> from threadline.context import ContextBlocks
    >>> ContextBlocks().replace("memory", "text")
    Traceback (most recent call last):
    threadline.errors.BlockNotFoundError: block "memory" not found
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "block not found"


class CompactionError(ThreadlineError):
    """Compaction cannot run (for example, no compaction function is registered).

    >>> import threadline
    >>> threadline.Session.create(":memory:").compact()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.CompactionError: no compaction function: give the app's profile ...
    """


class ModelError(ThreadlineError):
    """A model endpoint (an OpenAI-compatible ``/chat/completions``) failed or answered
    something unusable; ``status`` is its HTTP status (``None``: it was not reached). The
    message names the endpoint and quotes the start of its answer, never the API key.

    >>> err = ModelError("model endpoint answered HTTP 500: boom", status=500)
    >>> str(err), err.status
    ('model endpoint answered HTTP 500: boom', 500)
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StoreError(ThreadlineError):
    """A storage driver failed; ``operation`` names what threadline was doing.

    >>> err = StoreError("append", OSError("disk full"))
    >>> str(err), err.operation, type(err.cause).__name__
    ("store operation 'append' failed: disk full", 'append', 'OSError')
    """

    def __init__(self, operation: str, cause: BaseException | None = None) -> None:
        self.operation = operation
        self.cause = cause
        detail = f": {cause}" if cause is not None else ""
        super().__init__(f"store operation {operation!r} failed{detail}")


__all__ = [
    "AttachmentNotFoundError",
    "BlockNotFoundError",
    "BlockTooLargeError",
    "CompactionError",
    "HeadMovedError",
    "InvalidArgumentError",
    "InvalidMessageError",
    "MessageNotFoundError",
    "MessageTooLargeError",
    "ModelError",
    "ReadOnlyBlockError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StoreError",
    "ThreadlineError",
]
