"""wrk, the load generator: finding it, one measured run of an endpoint (:class:`Bench`)
and what it counted (:class:`Run`).

wrk is not installed by the benchmark: it is Debian's package ``wrk`` (``apt-get install
wrk``, docs/performance.md), or any build of https://github.com/wg/wrk on ``PATH``.
``wrk.lua`` beside this module makes the requests and prints the counts.
"""

from __future__ import annotations

import json
import shlex
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.machine import children_cpu, machine_busy

if TYPE_CHECKING:
    from bench.http.service import Service

LUA = Path(__file__).with_name("wrk.lua")


class Unavailable(RuntimeError):
    """The benchmark cannot run here (no wrk, no redis-server)."""


def find_wrk() -> str:
    """The path of wrk; :class:`Unavailable`, saying what to install, when it is missing."""
    found = shutil.which("wrk")
    if found is None:
        raise Unavailable("wrk is not installed: install Debian's package "
                          "(`sudo apt-get install -y wrk`) or a build of "
                          "https://github.com/wg/wrk on PATH")
    return found


def wrk_version(wrk: str) -> str:
    done = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).splitlines()
    return first[0].split(" Copyright")[0] if first else "?"



@dataclass
class Run:
    """One endpoint under load for one duration."""

    key: str
    label: str
    requests: int = 0
    seconds: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    errors: int = 0
    detail: str = ""
    worker_cpu_us: float = 0.0  # gunicorn CPU per request
    redis_cpu_us: float = 0.0  # Redis CPU per request
    wrk_cpu_us: float = 0.0  # the load generator's CPU per request
    others: float = 0.0  # cores kept busy by other processes of the machine meanwhile

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


@dataclass
class Bench:
    wrk: str
    threads: int
    connections: int
    duration: int
    warmup: int
    workdir: Path
    rounds: int = 1
    timeout: str = "5s"

    def run(self, service: Service, key: str, label: str, mode: str, data: Path,
            expected: int, *, prepare=None, seconds: int | None = None) -> Run:
        """A warm-up run (discarded), then the measured one; ``prepare()`` writes the data
        file before each."""
        if self.warmup > 0:
            if prepare is not None:
                prepare()
            self._wrk(service, mode, data, expected, self.warmup)
        if prepare is not None:
            prepare()
        cpu_before, busy_before, wrk_before = service.cpu(), machine_busy(), children_cpu()
        raw = self._wrk(service, mode, data, expected, seconds or self.duration)
        cpu_after, busy_after, wrk_after = service.cpu(), machine_busy(), children_cpu()
        per_request = 1e6 / max(1, raw["requests"])
        worker_cpu = (cpu_after[0] - cpu_before[0]) * per_request
        redis_cpu = (cpu_after[1] - cpu_before[1]) * per_request
        wrk_cpu = wrk_after - wrk_before
        ours = cpu_after[0] - cpu_before[0] + cpu_after[1] - cpu_before[1] + wrk_cpu
        seconds = max(1e-9, raw["duration_us"] / 1e6)
        others = max(0.0, busy_after - busy_before - ours) / seconds
        errors = (raw["connect"] + raw["read"] + raw["write"] + raw["timeout"] + raw["bad"]
                  + raw["exhausted"])
        details = []
        if raw["statuses"]:
            details.append(f"statuses {raw['statuses']}")
        for name in ("connect", "read", "write", "timeout"):
            if raw[name]:
                details.append(f"{raw[name]} {name} errors")
        if raw["exhausted"]:
            details.append(f"{raw['exhausted']} requests past the end of the walks")
        return Run(key, label, raw["requests"], raw["duration_us"] / 1e6, raw["p50_us"] / 1e3,
                   raw["p90_us"] / 1e3, raw["p99_us"] / 1e3, raw["max_us"] / 1e3, errors,
                   "; ".join(details), worker_cpu, redis_cpu, wrk_cpu * per_request, others)

    def _wrk(self, service: Service, mode: str, data: Path, expected: int,
             seconds: int) -> dict:
        command = [self.wrk, f"-t{self.threads}", f"-c{self.connections}",
                   f"-d{seconds}s", "--timeout", self.timeout, "-s", str(LUA), service.base,
                   "--", mode, str(data), str(expected)]
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=seconds + 60)
        for line in done.stdout.splitlines():
            if line.startswith("BENCH_RESULT "):
                return json.loads(line.split(" ", 1)[1])
        raise RuntimeError(f"wrk failed ({done.returncode}): {shlex.join(command)}\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def round_seconds(args) -> int:
    """Seconds of measurement per endpoint and round: ``--duration`` over the rounds."""
    return max(1, round(args.duration / args.rounds))


def combined(runs: list[Run]) -> Run:
    """The rounds of one endpoint as one run: requests, time, errors and CPU over all of
    them; p50, p90 and p99 the median of the rounds' (wrk reports percentiles, not the
    latencies); the maximum the largest."""
    first = runs[0]
    requests = sum(r.requests for r in runs)
    seconds = sum(r.seconds for r in runs)

    def per_request(name: str) -> float:
        return sum(getattr(r, name) * r.requests for r in runs) / max(1, requests)

    return Run(first.key, first.label, requests, seconds,
               statistics.median(r.p50_ms for r in runs),
               statistics.median(r.p90_ms for r in runs),
               statistics.median(r.p99_ms for r in runs),
               max(r.max_ms for r in runs), sum(r.errors for r in runs),
               "; ".join(r.detail for r in runs if r.detail),
               per_request("worker_cpu_us"), per_request("redis_cpu_us"),
               per_request("wrk_cpu_us"),
               sum(r.others * r.seconds for r in runs) / max(1e-9, seconds))
