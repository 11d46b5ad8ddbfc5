"""Requests through the app in the order they arrived: a request process lets at most
``REQUEST_SLOTS`` of its requests run the app at once, and the others wait their turn
first come, first served (:class:`RequestSlots`).

A process runs Python on one thread at a time, and which of its waiting threads runs
next is left to the interpreter and the kernel: with 8 requests in a process, one may
lose that race again and again while the others pass it, and such requests make the
slowest percent (docs/performance.md, "The tail").  In turn, each waits for those that
arrived before it and no others.  A request that has waited ``REQUEST_SLOT_WAIT_SECONDS``
goes in anyway: a turn held that long means its holder waits on something (Redis lost,
a failover under way) rather than works, and the others are not held up behind it.

Only the app's call is in turn: a streamed answer (an events stream, an export) is
written after its slot is given back, and so is every answer's writing to the socket.
A request with a body goes in without a turn: the app reads the body as it comes, at
its client's pace, and a slow one would hold the turn up.  A view about to compute for
long (a hint's search) gives its turn back first (``LEAVE_TURN``, a callable in the
environ), and goes on without one."""

from __future__ import annotations

import threading
import time
from collections import deque

from service.observability import metrics
from service.observability.telemetry import ARRIVED, LEAVE_TURN


class RequestSlots:
    """A WSGI layer around the app: at most ``slots`` requests in it at once, the
    others let in first come, first served; one that waited ``max_wait`` seconds goes in
    without a slot (counted in ``patience_request_slot_waits_given_up_total``), and one
    with a body without waiting."""

    def __init__(self, wsgi_app, slots: int, max_wait: float):
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.wsgi_app = wsgi_app
        self.slots = slots
        self.max_wait = max_wait
        self._lock = threading.Lock()
        self._free = slots
        self._waiting: deque[threading.Lock] = deque()  # a lock per waiter, held until its turn

    def __call__(self, environ, start_response):
        environ[ARRIVED] = time.perf_counter()  # the request log's time counts the wait
        held = [not _has_body(environ) and self._enter()]

        def leave_turn():
            if held[0]:
                held[0] = False
                self._leave()

        environ[LEAVE_TURN] = leave_turn
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            leave_turn()

    def _enter(self) -> bool:
        """Wait for a slot: True once one is this request's, False when it goes in
        without one (it waited ``max_wait``)."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return True
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        if turn.acquire(timeout=self.max_wait):
            return True  # the slot of the request that left (:meth:`_leave`)
        with self._lock:
            try:
                self._waiting.remove(turn)
            except ValueError:
                return True  # handed its slot as the wait ran out: it holds it
        metrics.SLOT_WAITS_GIVEN_UP.inc()
        return False

    def _leave(self) -> None:
        """Give the slot to the first waiter, or back."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._free += 1

    def state(self) -> tuple[int, int]:
        """(free slots, waiting requests) now."""
        with self._lock:
            return self._free, len(self._waiting)


def _has_body(environ) -> bool:
    """Whether the request says it sends a body (a length other than 0, or chunks)."""
    return environ.get("CONTENT_LENGTH", "") not in ("", "0") \
        or "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
