"""One agent turn over a session: ``Runner`` (async twin: ``threadline.aio.AsyncRunner``).

A run loads the session (a new one with a UUID id when none is named), runs the
``before_run`` hook, builds the context — the frozen system prompt, the history windowed by
``runs`` and by ``max_context_tokens`` (which the system prompt, the new input and the history
share; oldest history first out) —, hands what fell out of the window to ``memory`` (a compact
function: it becomes a summary overlay, nothing is deleted) or ``on_overflow``, calls the model,
executes the threadline tools it calls and calls it again (up to ``max_steps``), runs
``after_run``, then commits once: the input and every produced message (each tagged with the
run's ``metadata.invocationId``), the block and entry edits its tools made (held back until
then), the hooks' state and a new session's registry row, in one transaction. A model, tool or
hook that raises leaves the store as it was. After the commit: the ``memory`` overlay,
automatic compaction, writes to custom block providers (best-effort) and the prompt refresh.

The model is a function ``model(system, messages, tools)`` returning a string, a message or a
list of messages (OpenAI Chat messages too); ``tools`` is the session's
:class:`~threadline.tools.Toolset` (``tools.to_openai()`` for an OpenAI client).

>>> from threadline import Runner, SessionManager
>>> def model(system, messages, tools):
...     return f"You said: {messages[-1]['parts'][0]['text']}"
>>> runner = Runner(SessionManager(":memory:"), model)
>>> result = runner.run("Hello", session_id="chat-1")
>>> result.output["parts"][0]["text"], len(result.messages)
('You said: Hello', 2)
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from threadline._context_view import ContextView, PromptBlock, context_view
from threadline._run_turn import RunContext, Turn, TurnResult
from threadline._settings import async_compactor, returns_coroutine
from threadline.errors import CompactionError, InvalidArgumentError, ThreadlineError
from threadline.manager import SessionManager
from threadline.session import Session
from threadline.tools import Toolset
from threadline.types import Message

__all__ = ["ContextView", "Hooks", "PromptBlock", "RunContext", "Runner", "TurnResult"]


#: What a model function is: ``model(system, messages, tools)``.
Model = Callable[[str, list[Message], Toolset], Any]


@dataclass
class Hooks:
    """Functions called around every run with a :class:`RunContext` (RadarOS ``beforeRun`` /
    ``afterRun``); the async runner also accepts ``async def`` hooks.

    >>> Hooks(before_run=lambda ctx: ctx.set_state("seen", True)).after_run is None
    True
    """

    before_run: Callable[[RunContext], Any] | None = None
    after_run: Callable[[RunContext], Any] | None = None


def _sync_call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if close is not None:
            close()
        raise ThreadlineError("this function is async: use threadline.aio.AsyncRunner")
    return result


class Runner:
    """Runs agent turns over a :class:`~threadline.SessionManager` or one
    :class:`~threadline.Session` (module docstring).

    ``runs``: how many past runs the model sees; ``max_context_tokens``: the budget the system
    prompt, the input and the history share (counted with the session's ``token_counter``,
    else the heuristic of ``threadline.tokens``); ``max_steps``: model calls per run;
    ``memory``: a compact function (``create_compact_function``) that summarises what fell out
    of the window into an overlay; ``hooks``: :class:`Hooks`; ``read_only_scopes``: block
    scopes the run's memory tools may not write (a service acting for one user passes
    ``("app",)``). :meth:`context` shows what a run would send, without running one.

    >>> from threadline import Session
    >>> runner = Runner(Session.create(":memory:"), lambda system, messages, tools: "Hi!")
    >>> runner.run("Hello").output["parts"][0]["text"]
    'Hi!'
    """

    _async = False  # whether async model, hooks and memory are accepted (AsyncRunner)

    def __init__(
        self,
        target: SessionManager | Session,
        model: Model,
        *,
        runs: int | None = None,
        max_context_tokens: int | None = None,
        max_steps: int = 8,
        memory: Callable[..., Any] | None = None,
        hooks: Hooks | None = None,
        read_only_scopes: tuple[str, ...] = (),
    ) -> None:
        if not isinstance(target, (SessionManager, Session)):
            raise InvalidArgumentError("Runner needs a SessionManager or a Session")
        for name, value in (("runs", runs), ("max_context_tokens", max_context_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):  # fmt: skip
                raise InvalidArgumentError(f"{name} must be a non-negative int or None")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InvalidArgumentError("max_steps must be a positive int")
        scopes = ("session", "user", "app")
        if not isinstance(read_only_scopes, (tuple, list)) or any(
            scope not in scopes for scope in read_only_scopes
        ):
            raise InvalidArgumentError(f"read_only_scopes must be a tuple of {', '.join(scopes)}")
        if not self._async:  # refused now, not at the first run that reaches them
            hooks_ = hooks or Hooks()
            for name, fn in (("model", model), ("before_run", hooks_.before_run),
                             ("after_run", hooks_.after_run)):  # fmt: skip
                if fn is not None and returns_coroutine(fn):
                    raise InvalidArgumentError(f"{name} is async: use threadline.aio.AsyncRunner")
            if memory is not None and async_compactor(memory) is not None:
                raise CompactionError("memory is async: use threadline.aio.AsyncRunner")
        self.target = target
        self.model = model
        self.runs = runs
        self.max_context_tokens = max_context_tokens
        self.max_steps = max_steps
        self.memory = memory
        self.hooks = hooks or Hooks()
        self.read_only_scopes = tuple(read_only_scopes)
        self._on_overflow: Callable[[list[Message]], Any] | None = None

    def on_overflow(self, handler: Callable[[list[Message]], Any]) -> Self:
        """Call ``handler(messages)`` with what fell out of the window, every run it happens.

        >>> from threadline import Session
        >>> r = Runner(Session.create(":memory:"), lambda s, m, t: "ok").on_overflow(print)
        >>> r.max_steps
        8
        """
        self._on_overflow = handler
        return self

    def session_for(self, session_id: str | None, user_id: str | None) -> Session:
        """The session a run uses: the named one, or a new UUID-named one.

        >>> from threadline import SessionManager
        >>> r = Runner(SessionManager(":memory:"), lambda s, m, t: "ok")
        >>> len(r.session_for(None, None).session_id)
        32
        """
        sid = session_id if session_id is not None else uuid.uuid4().hex
        if isinstance(self.target, SessionManager):
            return self.target.get_session(sid, user_id=user_id)
        session = self.target
        if session_id is not None and session_id != session.session_id:
            session = session.for_session(session_id)
        if user_id is not None and user_id != session.user_id:
            session = session.for_user(user_id)
        return session

    def context(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None = None,
        user_input: Any = None,
    ) -> ContextView:
        """What a run would send the model now, built by the run's own steps and no model
        call: the frozen system prompt block by block, the history window (``runs``,
        ``max_context_tokens``), what falls out of it and the token counts (the session's
        ``token_counter``). ``user_input``: count the input a run would take too (it shares
        the budget). Nothing is stored.

        >>> from threadline import SessionManager
        >>> manager = SessionManager(":memory:").with_context("soul", provider="Be brief.")
        >>> runner = Runner(manager, lambda s, m, t: "Sure.", max_context_tokens=60)
        >>> for text in ("one", "two", "three"):
        ...     _ = runner.run(text, session_id="s")
        >>> view = runner.context("s")
        >>> [b.label for b in view.blocks], len(view.messages), len(view.dropped)
        (['soul'], 4, 2)
        >>> view.total_tokens <= view.max_context_tokens
        True
        """
        return context_view(self, self.session_for(session_id, user_id), user_input)

    def run(
        self, user_input: Any, *, session_id: str | None = None, user_id: str | None = None
    ) -> TurnResult:
        """One run (module docstring); returns its :class:`TurnResult`.

        >>> from threadline import SessionManager
        >>> runner = Runner(SessionManager(":memory:"), lambda s, m, t: f"{len(m)} messages")
        >>> _ = runner.run("one", session_id="s")
        >>> runner.run("two", session_id="s").output["parts"][0]["text"]
        '3 messages'
        """
        turn = Turn(self, self.session_for(session_id, user_id), user_input)
        turn.load_state()
        if self.hooks.before_run is not None:
            _sync_call(self.hooks.before_run, turn.context)
        turn.start()
        if self.memory is not None and turn.needs_memory():
            plan, covered = turn.memory_input()
            turn.apply_memory(plan, _sync_call(turn.call_memory, covered))
        if turn.overflow and self._on_overflow is not None:
            _sync_call(self._on_overflow, list(turn.overflow))
        for _ in range(self.max_steps):
            calls = turn.take(_sync_call(self.model, turn.system, turn.messages(), turn.tools))
            if not calls:
                break
            for part in calls:
                turn.answer(part, turn.tools.execute(turn.tool_name(part), part.get("input")))
        else:  # the last allowed model call still called a tool
            turn.stop_reason = "max_steps"
        if self.hooks.after_run is not None:
            _sync_call(self.hooks.after_run, turn.context)
        result = turn.commit()
        turn.after_commit()
        return result
