"""The loads of the daily benchmark: the rounds (wrk with bench/http/wrk.lua, the kinds
in turn, each ratio against ``GET /v1/games/<id>`` of the same round), and the close of
a day measured while wrk reads games."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.http.client import write_lines
from bench.http.report import summary
from bench.http.wrk import LUA, Bench, Run, combined
from bench.machine import machine_busy
from service.storage import keys

#: Entries of the board's top page, and either side of a player's rank.
TOP, AROUND = 100, 25
RESIGN = json.dumps({"type": "resign"}, separators=(",", ":"))


def read_plan(work: Path, name: str, games: list[str], day: str, players: list[str],
              variant: str) -> list[tuple[str, str, str, Path, int, object]]:
    """(key, label, mode, data file, expected status, prepare) of the reads: the
    reference first."""
    work.mkdir(parents=True, exist_ok=True)
    base = f"/v1/daily/{variant}/{day}/board"
    return [
        ("get_game", "`GET /v1/games/<id>` (reference)", "paths",
         write_lines(work / f"{name}-games.txt", [f"/v1/games/{game}" for game in games]),
         200, None),
        ("top", f"`GET .../board?limit={TOP}`", "paths",
         write_lines(work / f"{name}-top.txt", [f"{base}?limit={TOP}"]), 200, None),
        ("around", f"`GET .../board/players/<id>?around={AROUND}`", "paths",
         write_lines(work / f"{name}-around.txt",
                     [f"{base}/players/{player}?around={AROUND}" for player in players]),
         200, None),
    ]


def resign_writer(redis_client, games: list[tuple[str, str]], lanes: int, path: Path):
    """A ``prepare()`` that writes the games (id, player token) still at version 0, each
    with its resign (wrk.lua's ``moves`` mode: one move a game, ``If-Match: "0"``)."""

    def prepare() -> None:
        time.sleep(0.3)  # the requests a stopped wrk left in flight are answered
        pipe = redis_client.pipeline(transaction=False)
        for game_id, _token in games:
            pipe.hget(keys.game(game_id), keys.VERSION)
        versions = pipe.execute()
        lines = [f"{number % lanes}\t/v1/games/{game_id}/moves\t{token}\t0\t{RESIGN}"
                 for number, ((game_id, token), version) in enumerate(
                     zip(games, versions, strict=True)) if version is not None
                 and int(version) == 0]
        write_lines(path, lines)

    return prepare


def moves_plan(work: Path, redis_client, ordinary: list[tuple[str, str]],
               ranked: list[tuple[str, str]], lanes: int):
    return [
        ("resign_ordinary", "resign of an ordinary game of a player", "moves",
         work / "resign-ordinary.txt", 200,
         resign_writer(redis_client, ordinary, lanes, work / "resign-ordinary.txt")),
        ("resign_ranked", "resign of a ranked game (its end onto the board)", "moves",
         work / "resign-ranked.txt", 200,
         resign_writer(redis_client, ranked, lanes, work / "resign-ranked.txt")),
    ]


@dataclass
class Rounds:
    runs: list[Run] = field(default_factory=list)  # each kind, its rounds combined
    ratios: dict[str, list[float]] = field(default_factory=dict)  # over the reference
    rounds: dict[str, list[Run]] = field(default_factory=dict)


def run_rounds(bench: Bench, service, plan, reference: dict[str, str], title: str
               ) -> Rounds:
    """Every kind of ``plan`` in turn, ``bench.rounds`` times; ``reference``: kind ->
    the kind its ratio is over (same round)."""
    outcome = Rounds()
    for number in range(1, bench.rounds + 1):
        for key, label, mode, data, expected, prepare in plan:
            print(f"  {title} round {number}/{bench.rounds}: {label} ...", end="", flush=True)
            run = bench.run(service, key, label, mode, data, expected, prepare=prepare)
            print(summary(run), flush=True)
            outcome.rounds.setdefault(key, []).append(run)
    for key, runs in outcome.rounds.items():
        base = outcome.rounds[reference.get(key, "get_game")]
        outcome.ratios[key] = [run.rps / ref.rps if ref.rps else 0.0
                               for run, ref in zip(runs, base, strict=True)]
        outcome.runs.append(combined(runs))
    return outcome


@dataclass
class Close:
    games: int  # ranked games open when the close began
    abandoned: int  # what the close said it abandoned
    seconds: float  # from the close's start to every game on the board
    on_board: int  # entries of the day's board afterwards
    outcomes: dict[str, int]  # the board's entries by outcome
    left_in_outboxes: int
    fill_seconds: float
    before: Run | None = None  # GET game just before the close
    during: Run | None = None  # GET game while the close ran


def wrk_until(bench: Bench, service, data: Path, action) -> tuple[Run, object]:
    """wrk (``paths`` mode on ``data``) while ``action()`` runs; stopped (SIGINT: wrk
    reports what it measured) when it returns: the run and what ``action`` returned."""
    command = [bench.wrk, f"-t{bench.threads}", f"-c{bench.connections}", "-d3600s",
               "--timeout", bench.timeout, "-s", str(LUA), service.base, "--", "paths",
               str(data), "200"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        time.sleep(0.5)  # its connections open
        cpu_before, busy_before = service.cpu(), machine_busy()
        started = time.monotonic()
        value = action()
        cpu_after, busy_after = service.cpu(), machine_busy()
        seconds = time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    for line in out.splitlines():
        if line.startswith("BENCH_RESULT "):
            raw = json.loads(line.split(" ", 1)[1])
            errors = (raw["connect"] + raw["read"] + raw["write"] + raw["timeout"]
                      + raw["bad"])
            detail = f"statuses {raw['statuses']}" if raw["statuses"] else ""
            per_request = 1e6 / max(1, raw["requests"])
            ours = cpu_after[0] - cpu_before[0] + cpu_after[1] - cpu_before[1]
            # "other processes": the close's own process among them
            return Run("close_get_game", "`GET /v1/games/<id>` during the close",
                       raw["requests"], raw["duration_us"] / 1e6, raw["p50_us"] / 1e3,
                       raw["p90_us"] / 1e3, raw["p99_us"] / 1e3, raw["max_us"] / 1e3,
                       errors, detail, (cpu_after[0] - cpu_before[0]) * per_request,
                       (cpu_after[1] - cpu_before[1]) * per_request, 0.0,
                       max(0.0, busy_after - busy_before - ours) / max(1e-9, seconds)), value
    raise RuntimeError(f"wrk failed: {out[-2000:]}\n{err[-2000:]}")


def measure_close(bench: Bench, service, services, games_file: Path, day: str,
                  opened: int, fill_seconds: float, at_ms: int, before_seconds: int
                  ) -> Close:
    """``GET`` game under wrk for ``before_seconds`` just before the close, then again while
    :meth:`Daily.close_due` (what the solver's worker runs) closes the day, in this
    process; then the board and the outboxes read."""
    daily = services.daily

    def close() -> tuple[int, float]:
        started = time.monotonic()
        abandoned = daily.close_due(at_ms)
        return abandoned, time.monotonic() - started

    before = bench.run(service, "close_get_game", "`GET /v1/games/<id>` before the close",
                       "paths", games_file, 200, seconds=before_seconds)
    during, (abandoned, seconds) = wrk_until(bench, service, games_file, close)
    before.key = "before_close"
    outcomes: dict[str, int] = {}
    on_board = 0
    for variant in ("clock", "salic-law", "four-corners"):
        board = keys.daily(variant, f"{day}:board")
        cursor = 0
        while True:
            cursor, found = services.backend.connections.execute(
                "ZSCAN", board, cursor, "COUNT", 5000)
            pairs = found.items() if isinstance(found, dict) else \
                zip(found[::2], found[1::2], strict=True)
            for member, _score in pairs:  # the player's id, then the entry
                outcome = json.loads(member[member.index(b"{"):])["outcome"]
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if int(cursor) == 0:
                break
        on_board += int(services.backend.connections.execute("ZCARD", board))
    left = len(services.store.pending_outboxes())
    return Close(opened, abandoned, seconds, on_board, outcomes, left, fill_seconds,
                 before, during)
