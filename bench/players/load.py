"""The reads under load: wrk with bench/http/wrk.lua's ``paths`` mode (a player's
``Authorization`` on each request), the endpoints in rounds, and each figure against
``GET /v1/games/<id>`` of the same round."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.http.client import write_lines
from bench.http.report import summary
from bench.http.service import Service
from bench.http.wrk import Bench, Run, combined
from bench.players.export import Export, export
from bench.players.fill import Player
from bench.walks import VARIANT_IDS

#: The page size of the lists measured.
LIMIT = 50
#: Games whose ``GET /v1/games/<id>`` is the reference (the player's first ones).
REFERENCE_GAMES = 1000


def list_paths(filtered: bool) -> list[str]:
    """The first page of the player's list, unfiltered or under each filter in turn."""
    base = f"/v1/players/me/games?limit={LIMIT}"
    if not filtered:
        return [base]
    return ([f"{base}&variant={variant}" for variant in VARIANT_IDS]
            + [f"{base}&status=playing", f"{base}&status=resigned",
               f"{base}&variant={VARIANT_IDS[0]}&status=resigned"])


def plan(work: Path, player: Player) -> list[tuple[str, str, Path]]:
    """(key, label, wrk data file) of each endpoint loaded in a round, the reference
    first."""
    auth = player.auth
    return [
        ("get_game", "`GET /v1/games/<id>` (reference)",
         write_lines(work / "games.txt",
                     [f"/v1/games/{game}" for game in player.games[:REFERENCE_GAMES]])),
        ("my_games", f"`GET /v1/players/me/games?limit={LIMIT}`",
         write_lines(work / "my-games.txt", [f"{p}\t{auth}" for p in list_paths(False)])),
        ("my_games_filtered", f"the same, `variant=`, `status=` or both ({LIMIT} a page)",
         write_lines(work / "my-games-filtered.txt",
                     [f"{p}\t{auth}" for p in list_paths(True)])),
        ("stats", "`GET /v1/players/me/stats`",
         write_lines(work / "stats.txt", [f"/v1/players/me/stats\t{auth}"])),
    ]


@dataclass
class Outcome:
    runs: list[Run] = field(default_factory=list)  # each endpoint, its rounds combined
    #: key -> its requests/s over the reference's in each round
    ratios: dict[str, list[float]] = field(default_factory=dict)
    #: key -> its p99 over the reference's in each round
    p99_ratios: dict[str, list[float]] = field(default_factory=dict)
    exports: list[Export] = field(default_factory=list)

    def ratio(self, key: str, p99: bool = False) -> list[float]:
        return (self.p99_ratios if p99 else self.ratios).get(key, [])


def run_rounds(bench: Bench, service: Service, player: Player, work: Path,
               exports_per_round: int) -> Outcome:
    """Each round: every endpoint in turn under wrk, then the NDJSON exports, so that a
    slower or faster spell of the machine falls on all of them."""
    outcome = Outcome()
    rounds: dict[str, list[Run]] = {}
    endpoints = plan(work, player)
    for number in range(1, bench.rounds + 1):
        for key, label, data in endpoints:
            print(f"  round {number}/{bench.rounds}: {label} ...", end="", flush=True)
            run = bench.run(service, key, label, "paths", data, 200)
            print(summary(run), flush=True)
            rounds.setdefault(key, []).append(run)
        for _ in range(exports_per_round):
            print(f"  round {number}/{bench.rounds}: NDJSON export ...", end="", flush=True)
            done = export(service.port, service.gunicorn.pid, player.token)
            if done.games != len(player.games):
                raise RuntimeError(f"the export sent {done.games} games, not "
                                   f"{len(player.games)}")
            print(f" {done.games:,} games in {done.seconds:.2f} s ({done.rate:,.0f}/s); "
                  f"RSS of process {done.pid}: +{done.growth_mb:.1f} MB at its peak, "
                  f"+{done.retained_mb:.1f} MB after", flush=True)
            outcome.exports.append(done)
    reference = rounds["get_game"]
    for key, runs in rounds.items():
        outcome.ratios[key] = [run.rps / base.rps if base.rps else 0.0
                               for run, base in zip(runs, reference, strict=True)]
        outcome.p99_ratios[key] = [run.p99_ms / base.p99_ms if base.p99_ms else 0.0
                                   for run, base in zip(runs, reference, strict=True)]
        outcome.runs.append(combined(runs))
    return outcome


