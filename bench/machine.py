"""The machine the benchmarks run on: its CPU, file systems, load, and how busy its
cores have been (Linux /proc; the processes' own CPU time: :mod:`devtools.processes`)."""

from __future__ import annotations

import contextlib
import os
import platform
import resource
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def filesystem_of(path: Path) -> str:
    """The type of the file system holding ``path`` (ext4, tmpfs, ...), from /proc/mounts."""
    best, kind = "", "?"
    with contextlib.suppress(OSError):
        resolved = str(path.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and (resolved == fields[1]
                                    or resolved.startswith(fields[1].rstrip("/") + "/")) \
                    and len(fields[1]) >= len(best):
                best, kind = fields[1], fields[2]
    return kind


def load_average() -> str:
    with contextlib.suppress(OSError, AttributeError):
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    return "?"


def machine_busy() -> float:
    """CPU seconds every core of the machine has been busy so far (Linux /proc/stat)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle, iowait
        return (sum(fields[:8]) - idle) / _TICKS
    return 0.0


def children_cpu() -> float:
    """CPU seconds of the finished child processes of this one (each wrk run)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime

