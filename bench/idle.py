"""``python -m bench idle``: the CPU an idle ``make run`` uses, nobody calling it.

It starts ``python -m devtools.devserver`` (what ``make run`` runs: Redis, the solver's
worker, the events group and the request group) on a free port, its Redis data in
``--data`` (default: a new temporary directory), waits until it answers ``GET /healthz``
and the worker has started, lets it settle ``--settle`` seconds, then reads the CPU
time (user + system, Linux ``/proc``) of every process of its tree every 5 s for
``--minutes`` minutes, and stops it.  It does that ``--runs`` times on the same data:
the first run of a new directory starts with empty pools (the worker fills them), the
next ones with the pools the earlier runs left (a restart: the pools full, or a pool
that keeps missing).  For each run it reports the pools' sizes before and after, the
worker's pool searches (from its log) and the CPU seconds of each part, and their sum
as a share of one core; the table goes to standard output and to ``bench/RESULTS.md``.

    python -m bench idle [--minutes 10] [--runs 2] [--settle 10] [--data DIR]
                         [--output PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import redis
import requests

from bench.procs import TreeCpu
from bench.sections import write_section
from bench.solver import source_commit
from devtools.launch import ROOT
from devtools.processes import cmdline
from devtools.redis_server import free_port
from service.engine import variants
from service.storage import keys

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- bench idle: begin -->", "<!-- bench idle: end -->"
PARTS = ("devserver", "redis-server", "worker", "request group", "events group")
SAMPLE_SECONDS = 5.0


def part_of(pid: int) -> str:
    """Which part of ``make run`` a child of the devserver is, by its command line."""
    argv = " ".join(cmdline(pid))
    if "redis-server" in argv:
        return "redis-server"
    if "service.solver.worker" in argv:
        return "worker"
    if "service.runtime.events_group" in argv:
        return "events group"
    if "service.runtime.request_group" in argv:
        return "request group"
    return "other"


def _log_lines(path: Path, offset: int) -> list[dict]:
    found = []
    with open(path, "rb") as log:
        log.seek(offset)
        for line in log.read().decode(errors="replace").splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    found.append(json.loads(line))
    return found


def _wait(what: str, predicate, process: subprocess.Popen, log: Path, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while not predicate():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"bench idle: {what} failed:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def one_run(data: Path, minutes: float, settle: float, log: Path) -> dict:
    """Start the devserver on ``data``, measure it idle, stop it: the run's figures."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    env.update(PORT=str(port), REDIS_DATA_DIR=str(data / "redis"),
               SECRET_KEY_FILE=str(data / "secret-key"))
    with open(log, "ab") as sink:
        offset = log.stat().st_size
        process = subprocess.Popen([sys.executable, "-m", "devtools.devserver"], cwd=ROOT,
                                   env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait("the devserver's start", lambda: _answers(f"http://127.0.0.1:{port}/healthz"),
              process, log)
        _wait("the worker's start", lambda: any(
            line.get("message") == "worker started" for line in _log_lines(log, offset)),
            process, log)
        url = next(line.split(" at ", 1)[1].split()[0] for line in
                   log.read_text().splitlines()[::-1] if "redis-server pid" in line)
        time.sleep(settle)
        client = redis.Redis.from_url(url)
        names = [variant.id for variant in variants()]
        pools_before = {name: client.scard(keys.pool(name)) for name in names}
        tree = TreeCpu(process.pid, part_of, root_name="devserver")
        searched_from = log.stat().st_size
        tree.sample()
        deadline = time.monotonic() + minutes * 60
        while time.monotonic() < deadline:
            time.sleep(min(SAMPLE_SECONDS, max(0.0, deadline - time.monotonic())))
            tree.sample()
        pools_after = {name: client.scard(keys.pool(name)) for name in names}
        client.close()
        searches = [line for line in _log_lines(log, searched_from)
                    if line.get("message") == "pool search"]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"seconds": tree.seconds, "cpu": tree.by_part(), "before": pools_before,
            "after": pools_after, "searches": len(searches),
            "found": sum(bool(line.get("found")) for line in searches),
            "settings": {name: os.environ[name] for name in sorted(os.environ)
                         if name.startswith(("WORKER_", "WINNABLE_"))}}


def _pools(sizes: dict[str, int]) -> str:
    return ", ".join(f"{name} {size}" for name, size in sizes.items())


def table(runs: list[dict], command: str, load: tuple[float, ...]) -> list[str]:
    settings = runs[0]["settings"] if runs else {}
    lines = [
        "## Idle CPU of `make run`",
        "",
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC (commit "
        f"{source_commit('service')}, {os.cpu_count()} "
        f"cores, load average before {' '.join(f'{x:.2f}' for x in load)}; settings from "
        f"the environment: {', '.join(f'{k}={v}' for k, v in settings.items()) or 'none'}, "
        "the rest the defaults).  Nothing called the service.  CPU seconds (user + system, "
        "from `/proc`) of every process of the tree, by part; the last column is their sum "
        "over the wall-clock time of the run, as a share of one core.  Each run restarts "
        "the service on the Redis data of the runs before it (pools: seeds in each pool "
        "at the start and at the end of the run).",
        "",
        "| run | minutes | pools at the start | pools at the end | pool searches (won) | "
        + " | ".join(PARTS) + " | total | share of a core |",
        "|---:|---:|---|---|---:|" + "---:|" * len(PARTS) + "---:|---:|",
    ]
    for number, run in enumerate(runs, start=1):
        total = sum(run["cpu"].values())
        lines.append(
            f"| {number} | {run['seconds'] / 60:.1f} | {_pools(run['before'])} | "
            f"{_pools(run['after'])} | {run['searches']} ({run['found']}) | "
            + " | ".join(f"{run['cpu'].get(part, 0.0):.2f}" for part in PARTS)
            + f" | {total:.2f} | {total / max(run['seconds'], 1e-9):.2%} |")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench idle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="minutes measured per run (default 10)")
    parser.add_argument("--runs", type=int, default=2, help="runs on the same data (default 2)")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds between the start and the measurement (default 10)")
    parser.add_argument("--data", type=Path,
                        help="the directory of the Redis data (default: a new temporary one)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "bench", "idle", *argv])
    load = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as scratch:
        data = (args.data or Path(scratch)).resolve()
        data.mkdir(parents=True, exist_ok=True)
        log = data / "devserver.log"
        print(f"the devserver's output: {log}", file=sys.stderr, flush=True)
        for number in range(1, args.runs + 1):
            print(f"run {number}: {args.minutes:g} minutes ...", file=sys.stderr, flush=True)
            runs.append(one_run(data, args.minutes, args.settle, log))
            lines = table(runs, command, load)
            print("\n".join(lines[-1:]), file=sys.stderr, flush=True)
    lines = table(runs, command, load)
    print("\n".join(lines))
    write_section(args.output, BEGIN, END, "\n".join(lines))
    return 0
