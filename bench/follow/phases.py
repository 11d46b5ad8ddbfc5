"""A measured phase: one run of the closed-loop player and the cores each part of the
machine kept busy meanwhile (from /proc)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from bench.machine import machine_busy
from devtools.processes import cpu_seconds


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (nan without values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]



@dataclass
class Phase:
    """One closed-loop run of moves and the CPU each part of the machine used meanwhile."""

    name: str
    moves: int = 0
    seconds: float = 0.0
    p99_ms: float = 0.0
    cpu: dict = field(default_factory=dict)  # part -> cores kept busy

    @property
    def rate(self) -> float:
        return self.moves / self.seconds if self.seconds else 0.0

    @property
    def cpu_per_move_us(self) -> float:
        """CPU of the request group and Redis per move answered (µs): what a move costs
        the server, whatever else the machine does meanwhile."""
        cores = self.cpu.get("request group", 0.0) + self.cpu.get("redis", 0.0)
        return cores * 1e6 / self.rate if self.rate else float("nan")


def measured(name: str, parts: dict[str, list[int]], run) -> Phase:
    """Run ``run()`` (a coroutine function answering closed_loop's tuple) and account
    for the CPU of ``parts`` (name -> pids), this process (the players) and the rest."""
    before = {part: cpu_seconds(pids) for part, pids in parts.items()}
    mine = time.process_time()
    busy = machine_busy()
    started = time.monotonic()
    moves, seconds, latencies = asyncio.run(run())
    wall = time.monotonic() - started
    phase = Phase(name, moves, seconds, percentile(latencies, 0.99))
    for part, pids in parts.items():
        phase.cpu[part] = (cpu_seconds(pids) - before[part]) / wall
    phase.cpu["players"] = (time.process_time() - mine) / wall
    phase.cpu["other processes"] = max(
        0.0, (machine_busy() - busy) / wall - sum(phase.cpu.values()))
    print(f"{name}: {phase.rate:,.0f} moves/s (p99 {phase.p99_ms:.1f} ms); cores: "
          + ", ".join(f"{part} {value:.2f}" for part, value in phase.cpu.items()),
          flush=True)
    return phase

