"""uvicorn's HTTP/1.1 protocol (h11) with deadlines for slow clients.

uvicorn closes a keep-alive connection that stays silent after a response
(``timeout_keep_alive``), but nothing else: a connection that never completes a request
head (it sends nothing, or trickles a header line every few seconds, under h11's 16 KiB
head limit) or stops sending a body half-way is held open for ever, each one a socket and
memory, and enough of them exhaust the process's descriptors. Here:

* the request head must be complete within ``head_timeout`` seconds of the connection being
  ready for it (opened, or the previous response sent); otherwise the connection is closed
  (with a ``408`` if part of a head came);
* while a body is being read, ``body_timeout`` seconds without a byte close the connection
  (the app sees a disconnect).

The limits come from the environment :func:`~threadline.server.serve` sets
(:data:`ENV_HEAD_TIMEOUT`, :data:`ENV_BODY_TIMEOUT`), so every worker process has them.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

ENV_HEAD_TIMEOUT = "THREADLINE_SERVE_HEAD_TIMEOUT"
ENV_BODY_TIMEOUT = "THREADLINE_SERVE_BODY_TIMEOUT"
HEAD_TIMEOUT = 10.0
"""Default seconds a client has to send a whole request head."""
BODY_TIMEOUT = 30.0
"""Default seconds a request body may pause between two reads."""

_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 16\r\nconnection: close\r\n\r\nrequest timeout\n"
)


def _seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


class TimedH11Protocol(H11Protocol):
    """:class:`H11Protocol` that closes connections whose request head or body is too slow.

    >>> TimedH11Protocol.__mro__[1].__name__
    'H11Protocol'
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timeout = _seconds(ENV_HEAD_TIMEOUT, HEAD_TIMEOUT)
        self._body_timeout = _seconds(ENV_BODY_TIMEOUT, BODY_TIMEOUT)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.SEND_BODY:
            self._watch()  # body bytes came: the pause allowed starts again

    def handle_events(self) -> None:
        waiting_head = self.conn.their_state is h11.IDLE
        super().handle_events()
        if waiting_head and self.conn.their_state is not h11.IDLE:
            self._watch()  # the head is complete: from here the body's deadline, if any

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()  # kept alive: the next head has its deadline from now

    def _watch(self) -> None:
        """(Re)arm the deadline of what the connection waits for from the client."""
        self._cancel()
        if self.transport is None or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self._deadline = self.loop.call_later(self._head_timeout, self._expired)
        elif state is h11.SEND_BODY:
            self._deadline = self.loop.call_later(self._body_timeout, self._expired)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE and self.cycle is not None and not self.cycle.response_complete:
            return  # still answering the previous request: the head deadline starts after it
        if state is h11.IDLE and self.conn.trailing_data[0]:
            self.transport.write(_TIMEOUT_RESPONSE)  # part of a head came: say why
        if state in (h11.IDLE, h11.SEND_BODY):
            self.transport.close()
