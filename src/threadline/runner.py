"""One agent turn over a session: ``Runner`` (async twin: ``threadline.aio.AsyncRunner``).

A run loads the session (a new one with a UUID id when none is named), runs the
``before_run`` hook, builds the context — the frozen system prompt, the history windowed by
``runs`` and by ``max_context_tokens`` (which the system prompt, the new input and the history
share; oldest history first out) —, hands what fell out of the window to ``memory`` (a compact
function: it becomes a summary overlay, nothing is deleted) or ``on_overflow``, calls the model,
executes the threadline tools it calls and calls it again (up to ``max_steps``), then appends
the input and every produced message in one transaction, each tagged with the run's
``metadata.invocationId``, runs ``after_run``, commits the hooks' state, refreshes the prompt.
A model that raises leaves nothing of the run stored.

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
from dataclasses import dataclass, field
from typing import Any, Self

from threadline._settings import async_compactor, returns_coroutine
from threadline._turns import as_messages, context_window, fixed_cost, pending_calls
from threadline.errors import CompactionError, InvalidArgumentError, ThreadlineError
from threadline.manager import SessionManager
from threadline.messages import is_overlay_id, normalize_message
from threadline.session import Session, check_compact_result
from threadline.tools import Toolset
from threadline.types import Message

__all__ = ["Hooks", "RunContext", "Runner", "TurnResult"]

#: What a model function is: ``model(system, messages, tools)``.
Model = Callable[[str, list[Message], Toolset], Any]


@dataclass
class TurnResult:
    """What a run produced: the final assistant message, every message appended (the input
    first), the session id, and the messages that fell out of the context window.

    >>> TurnResult(output=None, messages=[], session_id="s").overflow
    []
    """

    output: Message | None
    messages: list[Message]
    session_id: str
    overflow: list[Message] = field(default_factory=list)


class RunContext:
    """What a hook sees: the session id, user, the input message, and state it may read and
    change (changes are committed after the run, in one write).

    >>> ctx = RunContext("s", None, {"role": "user", "parts": []}, lambda key: None)
    >>> ctx.set_state("visits", 1); ctx.get_state("visits")
    1
    """

    def __init__(
        self,
        session_id: str,
        user_id: str | None,
        input: Message,
        read_state: Callable[[str], Any],
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.input = input
        self.delta: dict[str, Any] = {}
        self._read_state = read_state

    def get_state(self, key: str, default: Any = None) -> Any:
        """The value of ``key``: this run's pending change first, else the stored state.

        >>> RunContext("s", None, {}, lambda key: "fr").get_state("lang")
        'fr'
        """
        value = self.delta[key] if key in self.delta else self._read_state(key)
        return default if value is None else value

    def set_state(self, key: str, value: Any) -> None:
        """Change ``key`` (``app:``/``user:``/``temp:`` scoping as in ``update_state``);
        stored after the run.

        >>> ctx = RunContext("s", None, {}, lambda key: None)
        >>> ctx.set_state("k", 2); ctx.delta
        {'k': 2}
        """
        self.delta[key] = value


@dataclass
class Hooks:
    """Functions called around every run with a :class:`RunContext` (RadarOS ``beforeRun`` /
    ``afterRun``); the async runner also accepts ``async def`` hooks.

    >>> Hooks(before_run=lambda ctx: ctx.set_state("seen", True)).after_run is None
    True
    """

    before_run: Callable[[RunContext], Any] | None = None
    after_run: Callable[[RunContext], Any] | None = None


class _Turn:
    """The I/O-free steps of one run, shared by the sync and async runners."""

    def __init__(self, runner: Runner, session: Session, user_input: Any) -> None:
        self.runner = runner
        self.session = session
        self.invocation_id = uuid.uuid4().hex
        text = user_input if isinstance(user_input, str) else None
        message = {"role": "user", "content": text} if text is not None else user_input
        self.user = _tag(normalize_message(message), self.invocation_id)
        if self.user["role"] != "user":
            raise InvalidArgumentError("a run's input must be a user message (or a string)")
        self._state: dict[str, Any] = {}
        self.context = RunContext(
            session.session_id, session.user_id, self.user, lambda key: self._state.get(key)
        )
        self.produced: list[Message] = []
        self.overflow: list[Message] = []  # what fell out of the window (summaries left out)
        self.dropped: list[Message] = []  # all before the window, summaries included
        self.system = ""
        self.history: list[Message] = []
        self.tools: Toolset = Toolset([])

    # -- before the model: storage reads, and the memory overlay ---------------------------------
    def load_state(self) -> None:
        self._state = dict(self.session.state)

    def start(self) -> None:
        self.system = self.session.freeze_system_prompt()
        self.tools = self.session.tools()
        self._window()

    def needs_memory(self) -> bool:
        return bool(self.overflow) and self.runner.memory is not None

    def memory_input(self) -> tuple[Any, list[Message]]:
        plan = self.session._compaction_input(None)
        # An earlier summary before the window goes along: the new one extends it.
        dropped = {m["id"] for m in self.dropped}
        return plan, [m for m in plan.history if m["id"] in dropped]

    def call_memory(self, covered: list[Message]) -> Any:
        """Call ``memory`` on what fell out (awaitable for an async one). The runner chose the
        range: a function taking a context is told so (``summarize_all``), and
        ``create_compact_function`` then summarises all of it instead of planning a tail."""
        memory = self.runner.memory
        assert memory is not None
        # create_compact_function around an async summariser: its acompact is the one to await
        memory = async_compactor(memory) or memory
        return self.session._invoke_compact_fn(memory, covered, True)

    def apply_memory(self, plan: Any, result: Any) -> None:
        if self.session._store_compaction(plan, check_compact_result(result)) is not None:
            fell_out = self.overflow
            self._window()  # the model now sees the summary in place of what fell out
            self.overflow = fell_out

    def _window(self) -> None:
        runner = self.runner
        history = self.session.get_history()
        window = context_window(
            history,
            runs=runner.runs,
            max_tokens=runner.max_context_tokens,
            fixed_tokens=fixed_cost(self.system, self.user),
        )
        self.history, self.dropped = window.kept, window.dropped
        self.overflow = [m for m in window.dropped if not is_overlay_id(m.get("id"))]

    # -- the model loop -----------------------------------------------------------------------
    def messages(self) -> list[Message]:
        return [*self.history, self.user, *self.produced]

    def take(self, output: Any) -> list[dict[str, Any]]:
        """Record the model's output; the threadline tool calls it makes, to execute."""
        produced = [_tag(m, self.invocation_id) for m in as_messages(output)]
        self.produced.extend(produced)
        names = list(self.tools)
        return [part for m in produced for part in pending_calls(m, names)]

    def tool_name(self, part: dict[str, Any]) -> str:
        kind = str(part.get("type", ""))
        return str(part.get("toolName")) if kind == "dynamic-tool" else kind.removeprefix("tool-")

    @staticmethod
    def answer(part: dict[str, Any], output: str) -> None:
        part["state"] = "output-available"
        part["output"] = output

    # -- after the model ------------------------------------------------------------------------
    def finish(self) -> TurnResult:
        session = self.session
        stored = session.append_messages([self.user, *self.produced])
        return TurnResult(
            output=next((m for m in reversed(stored) if m["role"] == "assistant"), None),
            messages=stored,
            session_id=session.session_id,
            overflow=self.overflow,
        )

    def commit(self) -> None:
        if self.context.delta:
            self.session.update_state(self.context.delta)
        self.session.refresh_system_prompt()


def _tag(message: Message, invocation_id: str) -> Message:
    metadata = dict(message.get("metadata") or {})
    metadata["invocationId"] = invocation_id
    return {**message, "metadata": metadata}


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
    prompt, the input and the history share (heuristic estimates, ``threadline.tokens``);
    ``max_steps``: model calls per run; ``memory``: a compact function
    (``create_compact_function``) that summarises what fell out of the window into an overlay;
    ``hooks``: :class:`Hooks`.

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
    ) -> None:
        if not isinstance(target, (SessionManager, Session)):
            raise InvalidArgumentError("Runner needs a SessionManager or a Session")
        for name, value in (("runs", runs), ("max_context_tokens", max_context_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):  # fmt: skip
                raise InvalidArgumentError(f"{name} must be a non-negative int or None")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InvalidArgumentError("max_steps must be a positive int")
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
        turn = _Turn(self, self.session_for(session_id, user_id), user_input)
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
        result = turn.finish()
        if self.hooks.after_run is not None:
            _sync_call(self.hooks.after_run, turn.context)
        turn.commit()
        return result
