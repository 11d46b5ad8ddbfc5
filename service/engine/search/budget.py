"""What one search may spend: positions and seconds, read on the budgets' clock."""

from __future__ import annotations

import time
from collections.abc import Callable

#: The clock a budget in seconds is read on unless its search is given another: the wall
#: clock (a request waits for the search).
WALL_CLOCK = time.perf_counter
#: The process's CPU time: the solver's worker and the benchmark give it to their
#: searches, so that a search gets its seconds of one core however busy the machine is.
CPU_CLOCK = time.process_time


class Budget:
    """The positions and the time one search may still use.

    A search calls :meth:`spend` once per position it expands; it answers False once
    the budget is exhausted (the clock is read every 256 positions only).
    """

    __slots__ = ("max_positions", "clock", "deadline", "searched", "out")

    def __init__(self, max_positions: int, max_seconds: float,
                 clock: Callable[[], float] = WALL_CLOCK):
        self.max_positions = max_positions
        self.clock = clock
        self.deadline = clock() + max_seconds
        self.searched = 0
        self.out = False

    def spend(self) -> bool:
        self.searched += 1
        if self.searched >= self.max_positions or (
                not self.searched & 255 and self.clock() >= self.deadline):
            self.out = True
        return not self.out
