"""What one search may spend: positions and seconds, read on the budgets' clock."""

from __future__ import annotations

import time

#: The clock every budget in seconds is read on (the searches' and the hints'): the wall
#: clock.  The benchmark switches its worker processes to their CPU time
#: (:func:`count_cpu_time`), so that a search gets its seconds of one core however busy
#: the machine is.
_clock = time.perf_counter


def now() -> float:
    """The budgets' clock, in seconds."""
    return _clock()


def count_cpu_time() -> None:
    """Read every budget of this process on its CPU time instead of the wall clock."""
    global _clock
    _clock = time.process_time


class Budget:
    """The positions and the time one search may still use.

    A search calls :meth:`spend` once per position it expands; it answers False once
    the budget is exhausted (the clock is read every 256 positions only).
    """

    __slots__ = ("max_positions", "deadline", "searched", "out")

    def __init__(self, max_positions: int, max_seconds: float):
        self.max_positions = max_positions
        self.deadline = now() + max_seconds
        self.searched = 0
        self.out = False

    def spend(self) -> bool:
        self.searched += 1
        if self.searched >= self.max_positions or (
                not self.searched & 255 and now() >= self.deadline):
            self.out = True
        return not self.out
