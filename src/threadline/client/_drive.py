"""Running a plan (:mod:`threadline.client._plan`) over a transport, and the descriptors that
turn each plan into a blocking method (``Client``) or a coroutine method (``AsyncClient``)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar, overload

from threadline.client._plan import Plan
from threadline.client._wire import Call
from threadline.errors import ThreadlineError

P = ParamSpec("P")
R = TypeVar("R")


class _Done(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _step(plan: Plan[Any], result: Any, error: ThreadlineError | None) -> Call[Any]:
    """Feed the last answer (or error) into the plan; its next call, or ``_Done``."""
    try:
        return plan.throw(error) if error is not None else plan.send(result)
    except StopIteration as stop:
        raise _Done(stop.value) from None


def drive(plan: Plan[R], send: Callable[[Call[Any]], Any]) -> R:
    """Run a plan with a blocking ``send``."""
    result: Any = None
    error: ThreadlineError | None = None
    try:
        while True:
            call = _step(plan, result, error)
            try:
                result, error = send(call), None
            except ThreadlineError as exc:
                result, error = None, exc
    except _Done as done:
        return done.value  # type: ignore[no-any-return]


async def adrive(plan: Plan[R], send: Callable[[Call[Any]], Awaitable[Any]]) -> R:
    """Run a plan with an async ``send`` (the same steps as :func:`drive`)."""
    result: Any = None
    error: ThreadlineError | None = None
    try:
        while True:
            call = _step(plan, result, error)
            try:
                result, error = await send(call), None
            except ThreadlineError as exc:
                result, error = None, exc
    except _Done as done:
        return done.value  # type: ignore[no-any-return]


class _Method(Generic[P, R]):
    """A client method made from a plan method: its docstring and signature, run by the
    owner's ``_run`` on the plan method of the same name of the owner's ``_calls`` object.

    ``prototype`` is that plan method bound to any instance: it gives the name, the docs and,
    for type checkers, the arguments and the result. ``inspect.signature`` and
    ``typing.get_type_hints`` see the method as a plain one: on the class with ``self``
    (``RemoteSession.get_history``), bound without it, and the result ``R`` (not ``Plan[R]``).
    """

    def __init__(self, prototype: Callable[P, Plan[R]]) -> None:
        self.__name__ = prototype.__name__
        self.__doc__ = prototype.__doc__
        self.__wrapped__ = prototype  # its module's globals resolve the annotations
        signature = inspect.signature(prototype)
        result = signature.return_annotation  # "Plan[R]" (a string: postponed annotations)
        if isinstance(result, str) and result.startswith("Plan[") and result.endswith("]"):
            result = result[len("Plan[") : -1]  # the method returns (or its coroutine gives) R
        else:
            result = inspect.Signature.empty
        self._bound_signature = signature.replace(return_annotation=result)
        own = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self.__signature__ = self._bound_signature.replace(
            parameters=[own, *self._bound_signature.parameters.values()]
        )
        self.__annotations__ = {
            **{k: v for k, v in prototype.__annotations__.items() if k != "return"},
            **({} if result is inspect.Signature.empty else {"return": result}),
        }

    def __set_name__(self, owner: type, name: str) -> None:
        self.__qualname__ = f"{owner.__qualname__}.{name}"

    def _bound(self, obj: Any) -> Callable[..., Any]:
        raise NotImplementedError

    def __call__(self, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``RemoteSession.get_history(session, ...)``, as for any method looked up on its
        class."""
        return self._bound(obj)(*args, **kwargs)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        method = self._bound(obj)
        method.__name__ = self.__name__
        method.__qualname__ = self.__qualname__
        method.__doc__ = self.__doc__
        method.__wrapped__ = self.__wrapped__  # type: ignore[attr-defined]
        method.__signature__ = self._bound_signature  # type: ignore[attr-defined]
        method.__annotations__ = self.__annotations__
        return method


class Blocking(_Method[P, R]):
    """``client.name(...)`` runs the plan and returns its result."""

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Blocking[P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return super().__get__(obj, owner)

    def _bound(self, obj: Any) -> Callable[..., Any]:
        plan = getattr(obj._calls, self.__name__)

        def method(*args: Any, **kwargs: Any) -> Any:
            return obj._run(plan(*args, **kwargs))

        return method


class Awaiting(_Method[P, R]):
    """``await client.name(...)`` runs the plan and returns its result."""

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Awaiting[P, R]: ...

    @overload
    def __get__(
        self, obj: object, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return super().__get__(obj, owner)

    def _bound(self, obj: Any) -> Callable[..., Any]:
        plan = getattr(obj._calls, self.__name__)

        async def method(*args: Any, **kwargs: Any) -> Any:
            return await obj._run(plan(*args, **kwargs))

        return method
