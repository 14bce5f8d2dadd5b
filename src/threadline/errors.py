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
    """Base class of every threadline error."""


class InvalidMessageError(ThreadlineError, ValueError):
    """A message is not a valid UIMessage-shaped dict; nothing was stored."""


class InvalidArgumentError(ThreadlineError, ValueError):
    """An argument is out of range or inconsistent (bad overlay range, keyed write...)."""


class MessageNotFoundError(ThreadlineError, KeyError):
    """A message id is not in the session."""

    def __str__(self) -> str:  # KeyError would repr() the argument; keep the message readable
        return str(self.args[0]) if self.args else "message not found"


class SessionNotFoundError(ThreadlineError, KeyError):
    """A session id is not registered in this app."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class SessionExistsError(ThreadlineError):
    """A session with that id already exists in this app."""


class ReadOnlyBlockError(ThreadlineError):
    """A write was attempted on a read-only context block."""


class BlockTooLargeError(ThreadlineError):
    """A write would exceed the block's ``max_tokens``; the provider was left untouched."""


class BlockNotFoundError(ThreadlineError, KeyError):
    """No context block with that label is registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "block not found"


class CompactionError(ThreadlineError):
    """Compaction cannot run (for example, no compaction function is registered)."""


class StoreError(ThreadlineError):
    """A storage driver failed; ``operation`` names what threadline was doing."""

    def __init__(self, operation: str, cause: BaseException | None = None) -> None:
        self.operation = operation
        self.cause = cause
        detail = f": {cause}" if cause is not None else ""
        super().__init__(f"store operation {operation!r} failed{detail}")


__all__ = [
    "BlockNotFoundError",
    "BlockTooLargeError",
    "CompactionError",
    "InvalidArgumentError",
    "InvalidMessageError",
    "MessageNotFoundError",
    "ReadOnlyBlockError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StoreError",
    "ThreadlineError",
]
