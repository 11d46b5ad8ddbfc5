"""The hint's latency through the API.

Its own redis-server and gunicorn (the request group's settings, rate limiting off);
games of deals 0, 1, ... of each variant followed by hints over HTTP, one request at a
time on one keep-alive connection; every ``GET /v1/games/<id>/hint`` is timed by the
client.  Target: p90 at most 300 ms, max at most 1 s.  How strong the hints are (the
hint bot against the solver's verdict and the random bot) is measured by ``python -m
bench solver``.

The figures go to stdout and to the "Hint latency" section of ``bench/RESULTS.md``
(replaced on every run, the rest of the file kept).

    python -m bench hints [--hints N] [--variant ID ...] [--output PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.http.client import Client
from bench.procs import WorkerWatch
from bench.sections import write_section
from service.engine import variants
from service.engine.hints import DEFAULT_BUDGET

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- bench hints: begin -->", "<!-- bench hints: end -->"
HOST = "127.0.0.1"
P90_TARGET_MS, MAX_TARGET_MS = 300.0, 1000.0


# --- latency through the API -----------------------------------------------------------------
def _call(client: Client, method: str, path: str, body: dict | None = None,
          headers: dict | None = None) -> tuple[int, dict]:
    """``client.request`` with the answer's JSON body (``{}`` when empty)."""
    status, _headers, payload = client.request(method, path, body, headers)
    return status, json.loads(payload) if payload else {}


@contextlib.contextmanager
def _serve(workdir: Path):
    """A redis-server and gunicorn (production config, rate limiting off) on free ports;
    yields the gunicorn port."""
    from devtools.launch import start_gunicorn, stop_gunicorn
    from devtools.redis_server import RedisServer, free_port

    redis_server = RedisServer(workdir / "redis", appendonly=False)
    metrics = workdir / "prometheus"
    metrics.mkdir()
    port = free_port(HOST)
    env = dict(os.environ, HOST=HOST, PORT=str(port), REDIS_URL="",
               RATELIMIT_ENABLED="false", PROMETHEUS_MULTIPROC_DIR=str(metrics))
    log_path = workdir / "gunicorn.log"
    redis_server.start()
    try:
        env["REDIS_URL"] = redis_server.url
        with open(log_path, "wb") as log:
            process = start_gunicorn(env, output=log)
            try:
                _wait_for(port, process, log_path)
                yield port
            finally:
                stop_gunicorn(process)
    finally:
        redis_server.stop()


def _wait_for(port: int, process, log_path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited: {log_path.read_text()[-2000:]}")
        try:
            with Client(port) as client:
                if _call(client, "GET", "/healthz")[0] == 200:
                    return
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not answer within {timeout:g} s")
        time.sleep(0.2)


def latency(per_variant: int, variant_ids: list[str]) -> dict[str, list[float]]:
    """Seconds of every ``GET .../hint``: ``per_variant`` hints per variant, over games
    of deals 0, 1, ... followed by hints through the API."""
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-hints-") as tmp, \
            _serve(Path(tmp)) as port, Client(port) as client:
        for variant_id in variant_ids:
            taken = times[variant_id] = []
            seed = 0
            while len(taken) < per_variant:
                status, body = _call(client, "POST", "/v1/games",
                                              {"variant": variant_id, "seed": seed})
                if status != 201:
                    raise RuntimeError(f"POST /v1/games answered {status}: {body}")
                game, token = body["game"]["id"], body["player_token"]
                auth = {"Authorization": f"Bearer {token}"}
                status = "playing"
                while status == "playing" and len(taken) < per_variant:
                    started = time.perf_counter()
                    code, answer = _call(client, "GET", f"/v1/games/{game}/hint")
                    taken.append(time.perf_counter() - started)
                    if code != 200:
                        raise RuntimeError(f"GET .../hint answered {code}: {answer}")
                    move = answer["move"] or {"type": "resign"}
                    move = {k: v for k, v in move.items() if k != "card"}
                    code, answer = _call(client, "POST", f"/v1/games/{game}/moves",
                                                  move, auth)
                    if code != 200:
                        raise RuntimeError(f"a hinted move answered {code}: {answer}")
                    status = answer["game"]["status"]
                seed += 1
    return times


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_table(times: dict[str, list[float]]) -> list[str]:
    lines = ["| variant | hints timed | p50 ms | p90 ms | max ms |", "|---|---:|---:|---:|---:|"]
    every = [t for taken in times.values() for t in taken]
    for name, taken in [*times.items(), ("all", every)]:
        if taken:
            lines.append(f"| {name} | {len(taken)} | {_quantile(taken, 0.5) * 1000:.0f} | "
                         f"{_quantile(taken, 0.9) * 1000:.0f} | {max(taken) * 1000:.0f} |")
    return lines


# --- the command ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    known = [v.id for v in variants()]
    parser = argparse.ArgumentParser(prog="python -m bench hints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--hints", type=int, default=150,
                        help="hints timed through the API per variant (default 150)")
    parser.add_argument("--variant", action="append", choices=known,
                        help="only this variant (repeatable; default all)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown file whose hint latency section is written "
                             "(default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if args.hints < 1:
        parser.error("--hints must be positive")
    chosen = args.variant or known
    command = shlex.join(["python", "-m", "bench", "hints", *(argv or [])])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Latency: {args.hints} hints per variant through gunicorn ...", flush=True)
    started = time.perf_counter()
    with WorkerWatch() as watch:
        times = latency(args.hints, chosen)
    every = [t for taken in times.values() for t in taken]
    p90, top = _quantile(every, 0.9) * 1000, max(every) * 1000
    latency_lines = latency_table(times)
    goals = [f"| hint p90 ≤ {P90_TARGET_MS:.0f} ms | {p90:.0f} ms | "
             f"{'yes' if p90 <= P90_TARGET_MS else 'NO'} |",
             f"| hint max ≤ {MAX_TARGET_MS:.0f} ms | {top:.0f} ms | "
             f"{'yes' if top <= MAX_TARGET_MS else 'NO'} |"]
    lines = [
        "## Hint latency through the API",
        "",
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC (load average "
        f"before {load}).  Its own redis-server and gunicorn (the request group's settings, "
        "rate limiting off); games of deals 0, 1, ... of each variant followed by hints "
        "over HTTP, one request at a time on one keep-alive connection; every `GET "
        "/v1/games/<id>/hint` timed by the client.  The hint's budget: "
        f"{DEFAULT_BUDGET.samples} sampled deals × {DEFAULT_BUDGET.positions} positions, "
        f"at most {DEFAULT_BUDGET.seconds:g} s.  The benchmark starts no solver's worker.  "
        f"{watch.summary()}",
        "",
        *latency_lines,
        "",
        "| target | measured | met |",
        "|---|---:|---|",
        *goals,
    ]
    print("\n".join(latency_lines + [""] + goals))
    write_section(args.output, BEGIN, END, "\n".join(lines))
    print(f"\nwrote the hint latency section of {args.output} "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
