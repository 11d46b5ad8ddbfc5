"""The connections each request process holds, shared by the processes of the request
group so that a new connection goes to one of those that hold fewest
(``ACCEPT_BALANCE``, :class:`~service.runtime.request_process.RequestProcess`).

Every process of the group accepts from the same listening socket, and a kept-alive
connection stays with the process that accepted it.  Left to the kernel's wake-ups, the
process that happens to be awake accepts a burst of new connections alone: 32
connections opened at once were held 3/4/8/17 by four processes, and the process with
17 answers each of them at a quarter of the rate the others do (one thread at a time
runs Python), which is the slowest percent of the requests (docs/performance.md,
"The tail").

The counts live in anonymous shared memory (``mmap``, no file) made by the arbiter
before it starts any process;
the arbiter gives each process a slot when it forks it (``pre_fork``) and frees it when
the process exits (``child_exit``), so a process killed outright leaves no count behind.
A process writes its own slot only; a count read while another process writes it is at
worst one connection old."""

from __future__ import annotations

import mmap

#: A slot no process holds.
FREE = -1


class ConnectionShares:
    """Per slot, the connections its process holds (:data:`FREE`: no process)."""

    def __init__(self, slots: int):
        # Anonymous shared memory (no file): the processes forked after share it.
        self._memory = mmap.mmap(-1, 4 * slots)
        self.counts = memoryview(self._memory).cast("i")
        for slot in range(slots):
            self.counts[slot] = FREE

    def claim(self, taken: set[int]) -> int | None:
        """A slot for a new process (the arbiter, before it forks): the first not in
        ``taken`` (the live processes'), free until the process publishes its count from
        its main loop (a process still loading the app is left out); None when every
        slot is taken (the process then accepts as gunicorn does)."""
        for slot in range(len(self.counts)):
            if slot not in taken:
                self.counts[slot] = FREE
                return slot
        return None

    def free(self, slot: int | None) -> None:
        """The slot of a process that stopped accepting or exited."""
        if slot is not None:
            self.counts[slot] = FREE

    def publish(self, slot: int | None, held: int) -> None:
        if slot is not None:
            self.counts[slot] = held

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections another accepting process holds (None: no other)."""
        others = [held for number, held in enumerate(self.counts)
                  if number != slot and held != FREE]
        return min(others) if others else None
