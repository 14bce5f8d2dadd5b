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

import copy
import inspect
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Self

from threadline._run_edits import RunEdits
from threadline._session_compaction import check_compact_result, overlay_ends
from threadline._settings import async_compactor, returns_coroutine
from threadline._state import split_delta, validate_delta
from threadline._turns import as_messages, check_same_ids, context_window, fixed_cost, pending_calls
from threadline.compaction.overlays import apply_overlays
from threadline.errors import CompactionError, InvalidArgumentError, ThreadlineError
from threadline.manager import SessionManager
from threadline.messages import is_overlay_id, normalize_message
from threadline.session import Session
from threadline.tools import Toolset, build_context_tools
from threadline.types import Compaction, Message

__all__ = ["Hooks", "RunContext", "Runner", "TurnResult"]

logger = logging.getLogger("threadline.runner")

#: What a model function is: ``model(system, messages, tools)``.
Model = Callable[[str, list[Message], Toolset], Any]


@dataclass
class TurnResult:
    """What a run produced: the final assistant message, every message appended (the input
    first), the session id, the messages that fell out of the context window, and why the
    run stopped: ``"done"`` (the model answered without calling a threadline tool) or
    ``"max_steps"`` (its ``max_steps``-th call still called one; those calls were executed,
    their results stored, and the model not called again).

    >>> result = TurnResult(output=None, messages=[], session_id="s")
    >>> result.overflow, result.stop_reason
    ([], 'done')
    """

    output: Message | None
    messages: list[Message]
    session_id: str
    overflow: list[Message] = field(default_factory=list)
    stop_reason: Literal["done", "max_steps"] = "done"


class RunContext:
    """What a hook sees: the session id, user, the input message, and state it may read and
    change (changes are committed with the run's messages, in its one transaction).

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
    """The I/O-free steps of one run, shared by the sync and async runners; the storage steps
    (``load_state``, ``start``, ``commit``, ``after_commit``) run in one thread each."""

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
        self.edits = RunEdits(session)
        self.tools: Toolset = Toolset([])
        self.stop_reason: Literal["done", "max_steps"] = "done"
        self.overlay: tuple[str, str, str] | None = None  # memory's summary: (from, to, text)
        self.stored: list[Message] = []

    # -- before the model: storage reads, and the memory summary ---------------------------------
    def load_state(self) -> None:
        self._state = dict(self.session.state)

    def start(self) -> None:
        # The prompt as freezing would make it, saved (if cached) only by the commit's refresh.
        self.system = self.session._current_prompt()
        self.tools = build_context_tools(self.edits)
        self._window(self.session.get_history())

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
        """Show the model the summary in place of what fell out; it is stored after the
        commit (``after_commit``), as an overlay."""
        result = check_compact_result(result)
        ends = overlay_ends(plan, result)
        if result is None or ends is None:
            return
        self.overlay = (*ends, result.summary)
        newest = datetime.max.replace(tzinfo=UTC)  # shown over every stored overlay
        pending = Compaction(uuid.uuid4().hex, result.summary, *ends, newest)
        fell_out = self.overflow
        self._window(apply_overlays(plan.raw_path, [*plan.compactions, pending]))
        self.overflow = fell_out

    def _window(self, history: list[Message]) -> None:
        runner = self.runner
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
        # Copies of the run's own messages: a model that edits what it is given changes
        # nothing the run stores.
        return [*self.history, *copy.deepcopy([self.user, *self.produced])]

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

    # -- the commit, and what follows it -------------------------------------------------------
    def commit(self) -> TurnResult:
        """Store the run in one transaction (module docstring); nothing of it if one step
        fails. Without a threadline store (a custom ``SessionProvider``) the steps run one by
        one: no transaction spans them."""
        session = self.session
        sent = [self.user, *self.produced]
        delta = validate_delta(self.context.delta)  # a bad value fails before any write
        stored_delta, temp = split_delta(delta)
        if stored_delta and session.store is None:
            session._require_store("state")  # raises before the messages are appended

        def write() -> list[Message]:
            stored = session._backend.append_messages(sent)
            check_same_ids(sent, stored)
            session._note_skill_loads(stored)  # before the edits: one may unload them
            self.edits.replay_stored()
            if stored_delta:  # validated and split above: straight to the store
                session._store_handle("state").update_state(stored_delta)
            return stored

        transaction = getattr(session.store, "transaction", None)
        try:
            with self.edits.commit_lock():
                self.stored = transaction(write) if transaction is not None else write()
        except BaseException:
            self.edits.rolled_back()
            raise
        session._temp_apply(temp)
        return TurnResult(
            output=next((m for m in reversed(self.stored) if m["role"] == "assistant"), None),
            messages=self.stored,
            session_id=session.session_id,
            overflow=self.overflow,
            stop_reason=self.stop_reason,
        )

    def after_commit(self) -> None:
        """What follows the commit and never undoes it: custom providers' writes, the memory
        overlay, automatic compaction (errors reported, as for any append), the prompt."""
        session = self.session
        self.edits.replay_custom()
        if self.overlay is not None:
            first_id, to_id, summary = self.overlay
            try:
                session._backend.add_compaction(summary, first_id, to_id)
            except Exception as exc:  # the path changed meanwhile: the run stays stored
                session._report_compaction_error(exc)
        session._after_append()
        try:
            session.refresh_system_prompt()
        except Exception:  # a provider failing to render: the stored run is still the result
            logger.warning("the prompt could not be refreshed after a run", exc_info=True)


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
        else:  # the last allowed model call still called a tool
            turn.stop_reason = "max_steps"
        if self.hooks.after_run is not None:
            _sync_call(self.hooks.after_run, turn.context)
        result = turn.commit()
        turn.after_commit()
        return result
