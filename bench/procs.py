"""Processes and the CPU time they use, read from Linux ``/proc``: a process tree's CPU
by part (``python -m bench idle``), and whether the solver's worker ran while a
benchmark measured (:class:`WorkerWatch`, which every benchmark reports).  The
processes themselves are read by :mod:`devtools.processes`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from devtools.processes import cmdline, every_process

#: The command line of the solver's worker (``devtools.launch.WORKER_COMMAND``) ends so.
WORKER_ARGV = ("-m", "service.solver.worker")


def is_solver_worker(pid: int) -> bool:
    """Whether ``pid`` runs ``python -m service.solver.worker`` (here, or in a container)."""
    argv = cmdline(pid)
    return any(tuple(argv[i:i + 2]) == WORKER_ARGV for i in range(len(argv) - 1))


class TreeCpu:
    """The CPU seconds used by the process ``root`` and its descendants from the first
    :meth:`sample` to the last, by part: each child of ``root`` names a part
    (``classify(pid)`` of the child, its descendants counted with it), ``root`` itself
    is ``root_name``.  Sample often enough that few processes are born and gone between
    two samples (the CPU of those is missed); a process born after the first sample
    counts from zero."""

    def __init__(self, root: int, classify, root_name: str = "root"):
        self.root = root
        self.classify = classify
        self.root_name = root_name
        self.first: dict[tuple[int, int], float] | None = None
        self.last: dict[tuple[int, int], float] = {}
        self.part: dict[tuple[int, int], str] = {}
        self.wall: list[float] = []

    def sample(self) -> None:
        processes = every_process()
        children: dict[int, list[int]] = {}
        for info in processes.values():
            children.setdefault(info.ppid, []).append(info.pid)
        now: dict[tuple[int, int], float] = {}
        if self.root not in processes:
            return
        todo = [(self.root, self.root_name)]
        while todo:
            pid, name = todo.pop()
            info = processes[pid]
            key = (pid, info.started)
            now[key] = info.cpu
            if key not in self.part:
                self.part[key] = name
            for child in children.get(pid, ()):
                todo.append((child, self.classify(child) if pid == self.root else name))
        if self.first is None:
            self.first = dict(now)
        self.last.update(now)
        self.wall.append(time.monotonic())

    @property
    def seconds(self) -> float:
        """Wall-clock seconds from the first sample to the last."""
        return self.wall[-1] - self.wall[0] if len(self.wall) > 1 else 0.0

    def by_part(self) -> dict[str, float]:
        """CPU seconds used between the first and the last sample, by part."""
        used: dict[str, float] = {}
        for key, cpu in self.last.items():
            spent = cpu - (self.first or {}).get(key, 0.0)
            used[self.part[key]] = used.get(self.part[key], 0.0) + spent
        return used


@dataclass
class WorkerWatch:
    """Whether the solver's worker (any ``python -m service.solver.worker`` on this machine: the
    benchmark's own, ``make run``'s, a container's) ran while a benchmark measured, and
    the CPU it used meanwhile.  ``with WorkerWatch() as watch:`` around the measurement,
    then :meth:`summary`.  The workers are looked for as it starts and ends and every
    :attr:`every` seconds between (a thread of its own), so one started and stopped
    within the measurement is seen too, unless it lived less than that; one that ended
    counts its CPU up to the last look that saw it."""

    #: Each worker's CPU seconds (by pid and start) as it started, and at the last look
    #: that saw it.
    before: dict[tuple[int, int], float] = field(default_factory=dict)
    after: dict[tuple[int, int], float] = field(default_factory=dict)
    started: float = 0.0
    ended: float = 0.0
    every: float = 5.0

    @staticmethod
    def _workers() -> dict[tuple[int, int], float]:
        return {(info.pid, info.started): info.cpu for info in every_process().values()
                if is_solver_worker(info.pid)}

    def __enter__(self) -> WorkerWatch:
        self.before = self._workers()
        self.after = dict(self.before)
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._looking = threading.Thread(target=self._look, name="worker-watch", daemon=True)
        self._looking.start()
        return self

    def _look(self) -> None:
        while not self._stop.wait(self.every):
            self.after.update(self._workers())

    def __exit__(self, *_exc_info) -> None:
        self._stop.set()
        self._looking.join()
        self.after.update(self._workers())
        self.ended = time.monotonic()

    @property
    def cpu(self) -> float:
        """CPU seconds the workers used during the measurement."""
        return sum(cpu - self.before.get(key, 0.0) for key, cpu in self.after.items())

    @property
    def ran(self) -> bool:
        return bool(self.before or self.after)

    def summary(self, during: str = "the measurements") -> str:
        """One sentence for the report."""
        if not self.ran:
            return (f"The solver's worker did not run during {during} (no "
                    "`python -m service.solver.worker` process on the machine, looked for "
                    f"every {self.every:g} s).")
        seconds = max(self.ended - self.started, 1e-9)
        count = len(set(self.before) | set(self.after))
        return (f"The solver's worker ran during {during}: {count} "
                f"`python -m service.solver.worker` process{'es' if count > 1 else ''} on the "
                f"machine used {self.cpu:.1f} CPU s in {seconds:.0f} s "
                f"({self.cpu / seconds:.1%} of a core).")
