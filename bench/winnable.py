"""``python -m bench winnable``: how long ``POST /v1/games`` with ``"winnable": true``
takes, from a filled pool and from an empty one (the creation's own search).

It starts its own Redis, the solver's worker (``python -m service.solver.worker``, with a whole
core for its share) and gunicorn (the request group's settings, rate limits off) on free
ports, waits until the worker has filled a pool of ``--pool`` seeds for each variant
asked for (``--fill-seconds`` at most), then creates ``--games`` winnable games per
variant one after another over HTTP and reports the latency (median, p90, max). Then it
stops the worker, empties the pools and does the same again: each creation searches
itself (``WINNABLE_SEARCH_SECONDS``), and the share answered 422 ``no_winnable_deal`` is
reported too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis
import requests

from bench.procs import WorkerWatch
from devtools.launch import start_gunicorn, start_worker, stop_gunicorn
from devtools.redis_server import RedisServer, free_port
from service.engine import variants as registered_variants
from service.storage import keys


def _quantiles(times: list[float]) -> str:
    if not times:
        return "– | – | –"
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * len(ordered) + 0.5)) - 1)]
    return (f"{statistics.median(ordered) * 1000:,.0f} ms | {p90 * 1000:,.0f} ms | "
            f"{ordered[-1] * 1000:,.0f} ms")


def _create(base: str, variant: str) -> tuple[int, float]:
    started = time.perf_counter()
    response = requests.post(f"{base}/v1/games", json={"variant": variant, "winnable": True},
                             timeout=30)
    return response.status_code, time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench winnable", description=__doc__)
    parser.add_argument("--variants", default=",".join(v.id for v in registered_variants()))
    parser.add_argument("--pool", type=int, default=10, help="seeds per pool")
    parser.add_argument("--games", type=int, default=10, help="creations per variant and case")
    parser.add_argument("--fill-seconds", type=float, default=120,
                        help="how long to wait for the pools at most")
    args = parser.parse_args(argv)
    variants = [name.strip() for name in args.variants.split(",") if name.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-winnable-") as scratch:
        server = RedisServer(Path(scratch) / "redis").start()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = dict(os.environ, REDIS_URL=server.url, HOST="127.0.0.1", PORT=str(port),
                   RATELIMIT_ENABLED="false", LOG_LEVEL="WARNING",
                   WINNABLE_POOL=",".join(f"{name}={args.pool}" for name in variants))
        # The pools are filled with a whole core (no rest: the fill is not measured).
        worker = start_worker(dict(env, WORKER_CPU_SHARE="1"))
        gunicorn = start_gunicorn(env, output=subprocess.DEVNULL)
        client = redis.Redis.from_url(server.url)
        rows = []
        try:
            started = time.monotonic()
            while True:
                sizes = {name: client.scard(keys.pool(name)) for name in variants}
                if all(size >= args.pool for size in sizes.values()):
                    break
                if time.monotonic() - started > args.fill_seconds:
                    print(f"pools after {args.fill_seconds:.0f} s: {sizes}", file=sys.stderr)
                    break
                time.sleep(1)
            fill = time.monotonic() - started
            while True:
                try:
                    if requests.get(f"{base}/healthz", timeout=1).ok:
                        break
                except requests.RequestException:
                    time.sleep(0.2)
            stop_gunicorn(worker)  # nothing refills the pools from here on
            with WorkerWatch() as watch:
                for case in ("pool", "search"):
                    for name in variants:
                        if case == "search":
                            client.delete(keys.pool(name))
                        times, refused = [], 0
                        for _ in range(args.games):
                            status, seconds = _create(base, name)
                            if status == 201:
                                times.append(seconds)
                            elif status == 422:
                                refused += 1
                                times.append(seconds)
                            else:
                                raise SystemExit(f"POST /v1/games answered {status}")
                        rows.append((case, name, len(times), refused, _quantiles(times)))
        finally:
            stop_gunicorn(worker)
            stop_gunicorn(gunicorn)
            client.close()
            server.stop()
    print(f"pools of {args.pool} filled in {fill:.0f} s; {args.games} creations per row, "
          f"one at a time, on {os.cpu_count()} cores; the benchmark's worker filled the "
          f"pools, then was stopped before the creations were timed.  {watch.summary()}\n")
    print("| seed from | variant | creations | 422 no_winnable_deal | median | p90 | max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case, name, count, refused, quantiles in rows:
        where = "the pool" if case == "pool" else "the creation's search (pool empty)"
        print(f"| {where} | {name} | {count} | {refused} | {quantiles} |")
    return 0
