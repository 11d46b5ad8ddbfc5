"""The Markdown report (bench/RESULTS.md): what one persistence setting measured
(:class:`Outcome`) and the tables written from it."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench.http.constants import (
    MEMORY_MOVES,
    PERSISTENCE,
    TARGET_BYTES_PER_GAME,
    TARGET_MOVE_CPU_US,
    TARGET_MOVE_P99_MS,
    TARGET_MOVE_P99_VERSUS_TOY,
    TARGET_VERSUS_TOY,
    TARGETS,
    VARIANTS,
    VERSUS_TOY,
)
from bench.http.memory import Memory
from bench.http.service import RATE_LIMIT, describe_workers
from bench.http.wrk import Run, round_seconds
from devtools.launch import GUNICORN_COMMAND


@dataclass
class Outcome:
    persistence: str
    settings: dict
    runs: list[Run] = field(default_factory=list)
    floor: float = 0.0
    streams: dict | None = None
    stream_runs: list[Run] = field(default_factory=list)
    memory: list[Memory] = field(default_factory=list)
    toy_runs: list[Run] = field(default_factory=list)  # the reference endpoints
    #: key -> its rate over its floor's (/healthz, or /toy/json for the reference
    #: endpoints) in each round
    ratios: dict[str, list[float]] = field(default_factory=dict)
    #: key -> its rate over the rate of its reference endpoint (VERSUS_TOY) in each round
    versus_toy: dict[str, list[float]] = field(default_factory=dict)
    redis_version: str = "?"
    log_problems: str = ""

    def ratio(self, key: str) -> float:
        """The median over the rounds of the endpoint's rate over its floor's."""
        found = self.ratios.get(key)
        return statistics.median(found) if found else 0.0


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def summary(run: Run) -> str:
    return (f" {run.rps:,.0f} requests/s, p50 {_ms(run.p50_ms)} ms, p99 {_ms(run.p99_ms)} ms, "
            f"{run.errors} errors; CPU per request: gunicorn {run.worker_cpu_us:,.0f} µs, "
            f"Redis {run.redis_cpu_us:,.0f} µs, wrk {run.wrk_cpu_us:,.0f} µs; "
            f"other processes {run.others:.2f} cores")


def runs_table(runs: list[Run], floor: float, *, versus: dict[str, Run] | None = None,
               floor_name: str = "/healthz",
               ratios: dict[str, list[float]] | None = None) -> str:
    head = (f"| endpoint | requests/s | ratio to {floor_name} | p50 ms | p99 ms | errors "
            "| CPU µs/request: gunicorn | Redis | wrk | other processes |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if versus is not None:
        head += " vs. no streams |"
        rule += "---:|"
    lines = [head, rule]
    for run in runs:
        ratio = f"{run.rps / floor:.2f}" if floor else "?"
        rounds = (ratios or {}).get(run.key)
        if rounds:
            ratio = f"{statistics.median(rounds):.2f}"
            if len(rounds) > 1:
                ratio += f" ({min(rounds):.2f}–{max(rounds):.2f})"
        errors = str(run.errors) + (f" ({run.detail})" if run.detail else "")
        line = (f"| {run.label} | {run.rps:,.0f} | {ratio} | {_ms(run.p50_ms)} | "
                f"{_ms(run.p99_ms)} | {errors} | {run.worker_cpu_us:,.0f} | "
                f"{run.redis_cpu_us:,.0f} | {run.wrk_cpu_us:,.0f} | {run.others:.2f} cores |")
        if versus is not None:
            before = versus.get(run.key)
            line += f" {run.rps / before.rps:.2f} |" if before and before.rps else " ? |"
        lines.append(line)
    return "\n".join(lines)


def toy_comparison(outcome: Outcome) -> str:
    """The service's endpoints as a share of the reference endpoint that does the same
    Redis work."""
    runs = {r.key: r for r in outcome.runs}
    toys = {r.key: r for r in outcome.toy_runs}
    parts = []
    for mine, theirs, what in (("healthz", "toy_json", "`/healthz` / `/toy/json`"),
                               ("get_game", "toy_read", "`GET /v1/games/<id>` / `/toy/read`"),
                               ("post_moves", "toy_write",
                                "`POST .../moves` / `/toy/write`")):
        if mine in runs and theirs in toys and toys[theirs].rps:
            parts.append(f"{what} {runs[mine].rps / toys[theirs].rps:.2f}")
    write = toys.get("toy_write")
    text = "Requests/s of the service against the reference: " + "; ".join(parts) + "."
    if write is not None:
        text += (f" The reference write's own p99 at these connections: "
                 f"{_ms(write.p99_ms)} ms (p50 {_ms(write.p50_ms)} ms).")
    return text


def targets_table(outcomes: list[Outcome], connections: int) -> str:
    lines = ["| target | measured | met |", "|---|---:|---|"]
    by = {(o.persistence, r.key): (o, r) for o in outcomes for r in o.runs}
    names = {"post_moves": "`POST .../moves`", "get_game": "`GET /v1/games/<id>`"}
    for (persistence, key), target in TARGETS.items():
        found = by.get((persistence, key))
        what = f"{names[key]} / `/healthz`, persistence {persistence}, ≥ {target:.2f}"
        if found is None:
            lines.append(f"| {what} | not measured | – |")
            continue
        outcome, run = found
        ratio = outcome.ratio(key)
        lines.append(f"| {what} | {ratio:.2f} | {'yes' if ratio >= target else 'NO'} |")
    found = by.get(("always", "post_moves"))
    if found is not None:
        run = found[1]
        met = run.p99_ms < TARGET_MOVE_P99_MS
        lines.append(f"| p99 of `POST .../moves`, {connections} connections, persistence "
                     f"always, < {TARGET_MOVE_P99_MS:.0f} ms | {_ms(run.p99_ms)} ms | "
                     f"{'yes' if met else 'NO'} |")
    lines += versus_toy_rows(by, outcomes)
    memory = [m for o in outcomes for m in o.memory if m.moves == MEMORY_MOVES]
    if memory:
        worst = max(memory, key=lambda m: m.mean)
        met = worst.mean <= TARGET_BYTES_PER_GAME
        lines.append(f"| Redis memory per game after {MEMORY_MOVES} moves ≤ 4 KiB "
                     f"(worst variant, mean) | {worst.mean:,.0f} B ({worst.variant}) | "
                     f"{'yes' if met else 'NO'} |")
    return "\n".join(lines)


def versus_toy_rows(by: dict, outcomes: list[Outcome]) -> list[str]:
    """The targets against the reference endpoints, persistence always: each endpoint's
    rate over its reference's (median of the rounds' ratios, lowest and highest in
    brackets), the p99 of a move over the reference write's, a move's CPU."""
    outcome = next((o for o in outcomes if o.persistence == "always" and o.toy_runs), None)
    if outcome is None:
        return ["| the targets against the reference endpoints (persistence always) | "
                "not measured | – |"]
    names = {"healthz": "`GET /healthz`", "get_game": "`GET /v1/games/<id>`",
             "post_moves": "`POST .../moves`", "toy_json": "`/toy/json`",
             "toy_read": "`/toy/read`", "toy_write": "`/toy/write`"}
    toys = {run.key: run for run in outcome.toy_runs}
    lines = []
    for key, toy in VERSUS_TOY.items():
        what = (f"{names[key]} / {names[toy]}, requests/s (median of the rounds), "
                f"≥ {TARGET_VERSUS_TOY:.2f}")
        rounds = outcome.versus_toy.get(key)
        if not rounds:
            lines.append(f"| {what} | not measured | – |")
            continue
        ratio = statistics.median(rounds)
        spread = f" ({min(rounds):.2f}–{max(rounds):.2f})" if len(rounds) > 1 else ""
        lines.append(f"| {what} | {ratio:.2f}{spread} | "
                     f"{'yes' if ratio >= TARGET_VERSUS_TOY else 'NO'} |")
    found, write = by.get(("always", "post_moves")), toys.get("toy_write")
    if found is not None and write is not None and write.p99_ms:
        move = found[1]
        ratio = move.p99_ms / write.p99_ms
        lines.append(f"| p99 of `POST .../moves` / p99 of `/toy/write`, ≤ "
                     f"{TARGET_MOVE_P99_VERSUS_TOY:.1f} | {ratio:.2f} ({_ms(move.p99_ms)} ms / "
                     f"{_ms(write.p99_ms)} ms) | "
                     f"{'yes' if ratio <= TARGET_MOVE_P99_VERSUS_TOY else 'NO'} |")
        cpu = move.worker_cpu_us + move.redis_cpu_us
        lines.append(f"| CPU per move, gunicorn + Redis, ≤ {TARGET_MOVE_CPU_US:,.0f} µs | "
                     f"{cpu:,.0f} µs ({move.worker_cpu_us:,.0f} + {move.redis_cpu_us:,.0f}; "
                     f"`/toy/write` {write.worker_cpu_us + write.redis_cpu_us:,.0f}) | "
                     f"{'yes' if cpu <= TARGET_MOVE_CPU_US else 'NO'} |")
    return lines


def memory_table(memory: list[Memory]) -> str:
    lines = ["| variant | moves | games | keys per game | bytes per game (mean) | largest | "
             "`game:{id}` | other keys |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in memory:
        lines.append(f"| {m.variant} | {m.moves} | {m.games} | {m.keys:.1f} | {m.mean:,.0f} | "
                     f"{m.largest:,} | {m.record:,.0f} | {m.other:,.0f} |")
    return "\n".join(lines)


#: A section another benchmark keeps in the same report, between its markers.
_SECTION = re.compile(r"<!-- (?P<name>[^>]+?): begin -->.*?<!-- (?P=name): end -->",
                      re.DOTALL)


def other_sections(old: str) -> str:
    """The sections of the other benchmarks in the report ``old`` (each between
    ``<!-- NAME: begin -->`` and ``<!-- NAME: end -->``, as they write them), to keep
    after this benchmark's own text when it rewrites the report."""
    return "".join(f"\n{match.group(0)}\n" for match in _SECTION.finditer(old))


def report(args, outcomes: list[Outcome], command: str, machine: dict, profile: str) -> str:
    """The whole of bench/RESULTS.md: the machine, the configuration, the tables."""
    out = [
        "# Benchmark results",
        "",
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(`make bench` runs it after the engine and bots benchmarks); regenerated on every "
        "run. Times are reported, never checked: nothing fails on them.",
        "",
        *machine_section(machine, outcomes[0].redis_version),
        *configuration_section(args, outcomes[0].settings),
        *throughput_section(outcomes),
        *streams_section(outcomes),
        "## Targets", "", targets_table(outcomes, args.connections), "",
        *memory_section([m for o in outcomes for m in o.memory]),
    ]
    if profile:
        out += ["## Profile of the request path", "", profile.strip(), ""]
    return "\n".join(out)


def machine_section(machine: dict, redis_version: str) -> list[str]:
    return [
        "## Machine",
        "",
        "| CPU | cores | Python | Redis | Redis files on | wrk | load average before |",
        "|---|---:|---|---|---|---|---|",
        f"| {machine['cpu']} | {machine['cores']} | {machine['python']} | "
        f"{redis_version} | {machine['filesystem']} | {machine['wrk']} | "
        f"{machine['load']} |",
        "",
        ("wrk runs on the same machine as gunicorn and Redis and takes its share of the "
         "cores; ratios to `/healthz` measured in the same run are what compares across "
         "machines.  The benchmark starts no solver's worker (it measures gunicorn and "
         "Redis alone).  " + machine.get("worker", "")).rstrip(),
        "",
    ]


def configuration_section(args, settings: dict) -> list[str]:
    return [
        "## Configuration",
        "",
        f"- gunicorn: `{' '.join(GUNICORN_COMMAND)}`, its settings as they are: "
        f"**{describe_workers(settings)}** (worker class `{settings['worker_class']}`, "
        f"keep-alive {settings['keepalive']} s); "
        + (f"**the rate limiter on** (`--rate-limit`: `RATELIMIT_ENABLED=true`, "
           f"`RATELIMIT_DEFAULT={RATE_LIMIT}`: every request counted, a Redis round trip "
           "every few, never a 429)" if args.rate_limit else
           "`RATELIMIT_ENABLED=false` (the limiter's own work does not count: "
           "`--rate-limit` measures it on, `python -m bench limiter` its cost alone)")
        + ", everything else the "
        "production defaults: `LOG_LEVEL=INFO` (one JSON line per request, to a file), "
        "Prometheus metrics shared by the workers (`PROMETHEUS_MULTIPROC_DIR`).",
        f"- wrk: {args.connections} connections on {args.threads} threads, request timeout "
        "5 s; `bench/http/wrk.lua` makes every request. "
        f"**{args.rounds} rounds**: each loads every endpoint in turn, {args.warmup} s of "
        "warm-up (discarded) then "
        f"{round_seconds(args)} s, so that a slower or faster spell "
        "of the machine falls on all of them. Requests/s and CPU are over all rounds; an "
        "endpoint's ratio is the median over the rounds of its rate over the floor's in "
        "the same round (the rounds' lowest and highest in brackets); p50 and p99 are the "
        "median of the rounds'.",
        "- Redis: its own redis-server per persistence setting, on a free port, data in a "
        "temporary directory.",
        f"- Games: {len(VARIANTS)} variants; `POST .../moves` walks "
        f"{args.connections * args.games_per_connection} games ({args.games_per_connection} "
        "per connection, at most one move of a game in flight), each through a "
        "precomputed sequence of legal moves (`bench/walks.py`) with `If-Match`; the reads "
        "go over every game.",
        "- The stack's floor (unless `--no-toy`): alongside the service, the same "
        "gunicorn config serves `bench/toy.py`, the reference endpoints (a bare Flask "
        "JSON answer; a 1 KiB JSON value read from Redis; "
        "read and written back with a Lua compare-and-set), over 1,024 keys, against its "
        "own Redis of the same persistence, loaded in the same rounds with the same wrk "
        "settings.",
        "",
    ]


def throughput_section(outcomes: list[Outcome]) -> list[str]:
    out = [
        "## Throughput and latency",
        "",
        "CPU per request is what each process used during the measured run divided by the "
        "requests answered (from /proc: gunicorn's master and workers, redis-server, wrk); "
        "*other processes* is how many cores the rest of the machine kept busy meanwhile "
        "(anything well above 0 means the run shared the machine and its numbers are low).",
        "",
    ]
    for outcome in outcomes:
        out += [f"### {PERSISTENCE[outcome.persistence]}", "",
                runs_table(outcome.runs, outcome.floor, ratios=outcome.ratios), ""]
        if outcome.log_problems:
            out += [f"**The gunicorn log shows problems:** {outcome.log_problems}", ""]
        if outcome.toy_runs:
            out += [f"The stack's own floor, {outcome.persistence}: the reference endpoints "
                    "(`bench/toy.py`: no request log, metrics, CORS, "
                    "validation or engine) served by the same gunicorn config against its "
                    "own Redis of the same persistence, in the same rounds:", "",
                    runs_table(outcome.toy_runs, outcome.toy_runs[0].rps,
                               floor_name="`/toy/json`", ratios=outcome.ratios), "",
                    toy_comparison(outcome), ""]
    return out


def streams_section(outcomes: list[Outcome]) -> list[str]:
    out: list[str] = []
    for outcome in outcomes:
        if outcome.streams is None:
            continue
        s = outcome.streams
        out += [f"### Short requests with {s['count']} event streams open "
                f"({outcome.persistence})", ""]
        if not s["available"]:
            out += ["The service has no events feed yet (`GET /v1/games/<id>/events` "
                    "answers 404): not measured.", ""]
            continue
        before = {r.key: r for r in outcome.runs}
        out += [
            f"{s['count']} `GET /v1/games/<id>/events` with `Accept: text/event-stream` "
            f"were opened on games being played; {s['opened']} answered 200 within "
            f"{s['open_timeout']:g} s, {s['refused']} answered otherwise, {s['ended']} were "
            f"closed by the end; {s['events']:,} events were received while the requests "
            "below ran.",
            "",
            runs_table(outcome.stream_runs, outcome.floor, versus=before),
            "",
        ]
    return out


def memory_section(memory: list[Memory]) -> list[str]:
    if not memory:
        return []
    return [
        "## Redis memory per game",
        "",
        "`MEMORY USAGE <key> SAMPLES 0` of every key of a game (every key with its hash "
        "tag `{<id>}`: `game:{<id>}`, the hash of the version, the record and the "
        "journal, from which the history and the events feed are replayed; any other, "
        "such as an idempotency record), added up, for games just "
        f"created with `POST /v1/games`, then after {MEMORY_MOVES} moves of a walk "
        "(no undo, no Idempotency-Key).",
        "",
        memory_table(memory),
        "",
    ]
