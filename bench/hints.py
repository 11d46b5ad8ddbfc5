"""Hint bots against what the solver proves winnable, and the hint's latency over HTTP.

Per variant, on the deals ``--first`` .. ``--first + --seeds - 1``:

* the solver's verdict on the whole deal (stock order known): won, proved lost, or
  undecided within ``--solve-seconds``;
* three bots play each deal: the random bot (``random_playout``), the quick heuristic
  hint bot (``heuristic_hint``, today's rules of thumb) and the sampled hint bot (the
  hint ``GET .../hint`` gives: sampled deals searched by the solver).  A hint bot plays
  the hinted move, else the first legal deal, draw or refill; should a position come
  back, it plays the quick hint there (``hint_playout``) and the run counts it.

The targets, as a share of the deals the solver proves winnable: the sampled hint bot
wins at least 60 % of them in Salic Law and 50 % in the Clock; in Four Corners it brings
home at least 1.5 times the mean cards of the random bot.

Then (unless ``--latency-hints 0``) the hint's latency through the API: its own
redis-server and gunicorn (``gunicorn.conf.py`` as it is), games of every variant
followed by hints over HTTP, one request at a time; every ``GET .../hint`` is timed.
Target: p90 at most 300 ms, max at most 1 s.

The figures go to stdout and to the "Hints" section of ``bench/RESULTS.md`` (replaced on
every run, the rest of the file kept).  The deals are shared among ``--workers``
processes.  Most of the time goes to the solver's verdict on deals it cannot settle
(``--solve-seconds`` each) and to the Clock's sampled hints (a search on nearly every
move): on the shared 2-core machine of the README, 20 deals per variant took about a
quarter of an hour with 2 workers; the default 50 proportionally longer.

    python -m bench hints [--seeds N] [--first N] [--workers N] [--variant ID ...]
                          [--solve-seconds S] [--latency-hints N] [--output PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing import Pool
from pathlib import Path

from service.engine import MOVE, RESIGN, WON, Move, new_game, variants
from service.engine.help import DEFAULT_BUDGET, heuristic_hint, hint
from service.engine.playout import cards_home, random_playout
from service.engine.solver import LOST, UNDECIDED, solve

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- bench hints: begin -->", "<!-- bench hints: end -->"
HOST = "127.0.0.1"
BOTS = ("random", "quick", "sampled")
#: Share of the winnable deals the sampled hint bot must win.
WIN_TARGETS = {"salic-law": 0.60, "clock": 0.50}
#: Four Corners: mean cards home of the sampled hint bot over the random bot's.
CARDS_TARGETS = {"four-corners": 1.5}
P90_TARGET_MS, MAX_TARGET_MS = 300.0, 1000.0
_RESIGN = Move(RESIGN)


# --- one deal, in a worker -------------------------------------------------------------
@dataclass
class Played:
    won: bool
    home: int
    seconds: float
    repeats: int = 0
    hints: int = 0


def follow(variant_id: str, seed: int, advise, max_steps: int = 3000) -> Played:
    """Play deal ``seed`` by the hints of ``advise`` (the quick hint where a position
    comes back; see ``hint_playout``)."""
    started = time.process_time()
    state = new_game(variant_id, seed)
    seen: set = set()
    repeats = hints = 0
    while not state.is_over and hints < max_steps:
        key = (state.piles, state.turn)
        if key in seen:
            repeats += 1
            suggestion = heuristic_hint(state)
        else:
            suggestion = advise(state)
        seen.add(key)
        hints += 1
        if suggestion is not None:
            move = suggestion.move
        else:
            actions = [m for m in state.legal_moves() if m.type != MOVE]
            move = actions[0] if actions else _RESIGN
        state, _step = state.apply(move)
    return Played(state.status == WON, cards_home(state), time.process_time() - started,
                  repeats, hints)


def play_deal(job: tuple[str, int, float]) -> tuple[str, int, str, dict[str, Played]]:
    variant_id, seed, solve_seconds = job
    verdict = solve(variant_id, seed, max_seconds=solve_seconds).result
    started = time.process_time()
    final, _steps = random_playout(variant_id, seed, random.Random(seed))
    played = {"random": Played(final.status == WON, cards_home(final),
                               time.process_time() - started)}
    played["quick"] = follow(variant_id, seed, heuristic_hint)
    played["sampled"] = follow(variant_id, seed, hint)
    return variant_id, seed, verdict, played


# --- the table ---------------------------------------------------------------------------
@dataclass
class Row:
    variant: str
    verdicts: dict[int, str] = field(default_factory=dict)
    played: dict[str, dict[int, Played]] = field(default_factory=dict)

    @property
    def winnable(self) -> list[int]:
        return [seed for seed, verdict in self.verdicts.items() if verdict == WON]

    def count(self, verdict: str) -> int:
        return sum(v == verdict for v in self.verdicts.values())

    def wins(self, bot: str) -> int:
        return sum(p.won for p in self.played[bot].values())

    def wins_of_winnable(self, bot: str) -> int:
        return sum(self.played[bot][seed].won for seed in self.winnable)

    def share(self, bot: str) -> float | None:
        return self.wins_of_winnable(bot) / len(self.winnable) if self.winnable else None

    def home(self, bot: str) -> float:
        return statistics.mean(p.home for p in self.played[bot].values())


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share."""
    if not n:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def bots_table(rows: list[Row]) -> list[str]:
    lines = ["| variant | deals | solver: won / lost / undecided | bot | won | won of the "
             "winnable (95 % Wilson) | mean cards home | CPU s / deal | positions come back |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        deals = len(row.verdicts)
        verdicts = f"{row.count(WON)} / {row.count(LOST)} / {row.count(UNDECIDED)}"
        for bot in BOTS:
            share = row.share(bot)
            low, high = wilson(row.wins_of_winnable(bot), len(row.winnable))
            played = row.played[bot].values()
            seconds = statistics.mean(p.seconds for p in played)
            repeats = sum(p.repeats for p in played) if bot != "random" else "–"
            interval = "" if share is None else f" ({low:.0%}–{high:.0%})"
            lines.append(f"| {row.variant} | {deals} | {verdicts} | {bot} | {row.wins(bot)} | "
                         f"{row.wins_of_winnable(bot)} of {len(row.winnable)}: "
                         f"{_pct(share)}{interval} | {row.home(bot):.1f} | {seconds:.2f} | "
                         f"{repeats} |")
    return lines


def targets(rows: list[Row]) -> list[tuple[str, str, bool]]:
    found = []
    for row in rows:
        if row.variant in WIN_TARGETS:
            goal = WIN_TARGETS[row.variant]
            share = row.share("sampled")
            found.append((f"{row.variant}: sampled hint bot wins ≥ {goal:.0%} of the "
                          "winnable deals", _pct(share), share is not None and share >= goal))
        if row.variant in CARDS_TARGETS:
            goal = CARDS_TARGETS[row.variant]
            ratio = row.home("sampled") / max(row.home("random"), 1e-9)
            found.append((f"{row.variant}: sampled hint bot's mean cards home ≥ {goal:g} × "
                          "the random bot's", f"{ratio:.2f} ×", ratio >= goal))
    return found


# --- latency through the API -----------------------------------------------------------------
class _Client:
    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection(HOST, port, timeout=30)

    def request(self, method: str, path: str, body: dict | None = None,
                headers: dict | None = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        sent.update(headers or {})
        self.connection.request(method, path, body=data, headers=sent)
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else {}


@contextlib.contextmanager
def _serve(workdir: Path):
    """A redis-server and gunicorn (production config, rate limiting off) on free ports;
    yields the gunicorn port."""
    from service.launch import start_gunicorn, stop_gunicorn
    from service.redis_server import RedisServer, free_port

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
            if _Client(port).request("GET", "/healthz")[0] == 200:
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
            _serve(Path(tmp)) as port:
        client = _Client(port)
        for variant_id in variant_ids:
            taken = times[variant_id] = []
            seed = 0
            while len(taken) < per_variant:
                status, body = client.request("POST", "/v1/games",
                                              {"variant": variant_id, "seed": seed})
                if status != 201:
                    raise RuntimeError(f"POST /v1/games answered {status}: {body}")
                game, token = body["game"]["id"], body["player_token"]
                auth = {"Authorization": f"Bearer {token}"}
                status = "playing"
                while status == "playing" and len(taken) < per_variant:
                    started = time.perf_counter()
                    code, answer = client.request("GET", f"/v1/games/{game}/hint")
                    taken.append(time.perf_counter() - started)
                    if code != 200:
                        raise RuntimeError(f"GET .../hint answered {code}: {answer}")
                    move = answer["move"] or {"type": "resign"}
                    move = {k: v for k, v in move.items() if k != "card"}
                    code, answer = client.request("POST", f"/v1/games/{game}/moves",
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
def write_section(path: Path, lines: list[str]) -> None:
    """Put ``lines`` between the markers of ``path`` (appended when it has none)."""
    text = path.read_text() if path.exists() else ""
    section = "\n".join([BEGIN, *lines, END])
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        text = before + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    known = [v.id for v in variants()]
    parser = argparse.ArgumentParser(prog="python -m bench hints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=50,
                        help="deals per variant (default 50)")
    parser.add_argument("--first", type=int, default=0, help="the first deal (default 0)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes sharing the deals (default: one per core)")
    parser.add_argument("--variant", action="append", choices=known,
                        help="only this variant (repeatable; default all)")
    parser.add_argument("--solve-seconds", type=float, default=10.0,
                        help="the solver's budget per deal for its verdict (default 10)")
    parser.add_argument("--latency-hints", type=int, default=150,
                        help="hints timed through the API per variant (0: skip; "
                             "default 150)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown file whose Hints section is written "
                             "(default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.first < 0 or args.workers < 1 or args.latency_hints < 0:
        parser.error("--seeds and --workers must be positive, --first and "
                     "--latency-hints not negative")
    chosen = args.variant or known
    last = args.first + args.seeds - 1
    command = shlex.join(["python", "-m", "bench", "hints", *(argv or [])])
    print(f"Hint bots: deals {args.first}..{last} of {', '.join(chosen)}, "
          f"{args.workers} worker(s); hint budget {DEFAULT_BUDGET.samples} samples × "
          f"{DEFAULT_BUDGET.positions} positions, at most {DEFAULT_BUDGET.seconds:g} s",
          flush=True)
    started = time.perf_counter()
    rows = {v: Row(v, played={bot: {} for bot in BOTS}) for v in chosen}
    jobs = [(v, seed, args.solve_seconds) for v in chosen
            for seed in range(args.first, last + 1)]
    with Pool(args.workers) as pool:
        for done, (variant_id, seed, verdict, played) in enumerate(
                pool.imap_unordered(play_deal, jobs), start=1):
            row = rows[variant_id]
            row.verdicts[seed] = verdict
            for bot, result in played.items():
                row.played[bot][seed] = result
            if done % 25 == 0 or done == len(jobs):
                print(f"  {done}/{len(jobs)} deals played "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
    table = bots_table(list(rows.values()))
    goals = targets(list(rows.values()))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Hints",
        "",
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"(`make bench` runs it with the defaults): deals "
        f"{args.first}..{last} of each variant, {args.workers} worker process(es), "
        f"load average before the latency run {load}. The solver's verdict on each whole "
        f"deal has {args.solve_seconds:g} s; the sampled hint has the API's budget: "
        f"{DEFAULT_BUDGET.samples} sampled deals × {DEFAULT_BUDGET.positions} positions, "
        f"at most {DEFAULT_BUDGET.seconds:g} s of wall clock. *quick* is the heuristic "
        "hint (the sampled hint's fallback); *positions come back*: the times a hint bot "
        "met a position again and played the quick hint there.",
        "",
        *table,
        "",
        "| target | measured | met |",
        "|---|---:|---|",
        *[f"| {name} | {value} | {'yes' if met else 'NO'} |" for name, value, met in goals],
    ]
    print("\n".join(table))
    print()
    for name, value, met in goals:
        print(f"{name}: {value} ({'met' if met else 'NOT met'})")
    if args.latency_hints:
        print(f"\nLatency: {args.latency_hints} hints per variant through gunicorn ...",
              flush=True)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        times = latency(args.latency_hints, chosen)
        every = [t for taken in times.values() for t in taken]
        p90, top = _quantile(every, 0.9) * 1000, max(every) * 1000
        latency_lines = latency_table(times)
        print("\n".join(latency_lines))
        lines += [
            "",
            "### Hint latency through the API",
            "",
            "Its own redis-server and gunicorn (`gunicorn.conf.py` as it is, rate limiting "
            "off); games of deals 0, 1, ... of each variant followed by hints over HTTP, "
            "one request at a time on one keep-alive connection; every `GET "
            f"/v1/games/<id>/hint` timed by the client. Load average before: {load}.",
            "",
            *latency_lines,
            "",
            "| target | measured | met |",
            "|---|---:|---|",
            f"| hint p90 ≤ {P90_TARGET_MS:.0f} ms | {p90:.0f} ms | "
            f"{'yes' if p90 <= P90_TARGET_MS else 'NO'} |",
            f"| hint max ≤ {MAX_TARGET_MS:.0f} ms | {top:.0f} ms | "
            f"{'yes' if top <= MAX_TARGET_MS else 'NO'} |",
        ]
    write_section(args.output, lines)
    print(f"\nwrote the Hints section of {args.output} "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
