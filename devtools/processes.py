"""Child processes (Linux ``/proc``): started so that they die with their parent, then
found and measured.  The one reader of ``/proc`` for processes of the launchers
(:mod:`devtools.launch`, :mod:`devtools.redis_server`), the tests and the benchmarks."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_PRCTL = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        _PRCTL = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def die_with_parent():
    """A ``preexec_fn`` for ``subprocess.Popen`` that has the kernel send SIGTERM to the
    child when the thread that started it dies (Linux), so a crashed parent leaves no
    orphan; None where that is not supported."""
    return _die_with_parent if _PRCTL is not None else None


@dataclass(frozen=True, slots=True)
class Stat:
    """What ``/proc/<pid>/stat`` says of a process (or ``/proc/<pid>/task/<tid>/stat`` of
    one of its threads): its parent, the CPU seconds it has used (user + system), when it
    started (clock ticks since boot: with the pid, it tells a process from a later one
    that got the same pid) and its nice value."""

    pid: int
    ppid: int
    cpu: float
    started: int
    nice: int = 0


def stat(pid: int, path: str | None = None) -> Stat | None:
    """The :class:`Stat` of ``pid`` (read from ``path``, ``/proc/<pid>/stat`` unless
    given), None if it is gone."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        text = Path(path or f"/proc/{pid}/stat").read_text()
        fields = text.rsplit(")", 1)[1].split()
        return Stat(pid, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS,
                    int(fields[19]), int(fields[16]))
    return None


def threads(pid: int) -> dict[int, Stat]:
    """The :class:`Stat` of each thread of the process ``pid``, by thread id (Linux)."""
    found = {}
    with contextlib.suppress(OSError):
        for entry in os.listdir(f"/proc/{pid}/task"):
            if (info := stat(int(entry), f"/proc/{pid}/task/{entry}/stat")) is not None:
                found[info.pid] = info
    return found


def every_process() -> dict[int, Stat]:
    """The :class:`Stat` of every process of the machine, by pid."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := stat(int(entry))) is not None:
            found[info.pid] = info
    return found


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, sorted."""
    return sorted(info.pid for info in every_process().values() if info.ppid == pid)


def cmdline(pid: int) -> list[str]:
    """The command line of ``pid`` ([] if it is gone)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") \
            .rstrip("\0").split("\0")
    return []


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far together (a
    process gone counts nothing)."""
    return sum(info.cpu for pid in pids if (info := stat(pid)) is not None)


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) of the processes ``pids`` together, in KiB."""
    rss = pss = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss, pss
