"""``python -m bench follow``: many followers of live games on one instance of `make run`.

One instance of ``python -m service.devserver`` (what ``make run`` runs: its own Redis,
the request group and the events group) on a free port, rate limits off.  Then:

1. **moves alone**: a closed-loop player sends the moves of precomputed walks
   (``bench/walks.py``) to games nobody follows, on ``--connections`` keep-alive
   connections, for ``--seconds``: the moves' throughput without followers;
2. **followers**: ``--followers`` Server-Sent Events streams (``GET .../events``, real
   TCP connections, asyncio, in ``--processes`` processes) spread evenly over ``--games``
   other games, opened at ``--open-rate`` per second; once all are open and idle, the
   resident memory (RSS, and PSS) of the events group's processes;
3. **live**: a paced player plays those games at ``--rate`` moves per second in total,
   round robin, for ``--seconds``; every follower checks that its event ids go up by
   one, and the delay of each move is from its 200 to its event reaching the last of
   its game's followers;
4. **moves with followers**: the closed-loop player again on unfollowed games, while the
   followers stay connected and the paced player keeps playing: the moves' throughput
   with followers, as a share of step 1's.

Printed next to the targets and written into ``bench/RESULTS.md`` (its own section,
replaced on each run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.sections import write_section
from bench.walks import VARIANT_IDS, Walk, long_walks
from service.launch import EVENTS_COMMAND, new_secret_key
from service.redis_server import die_with_parent, free_port

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("RESULTS.md")
HOST = "127.0.0.1"
VARIANTS = list(VARIANT_IDS)
BEGIN, END = "<!-- bench follow: begin -->", "<!-- bench follow: end -->"

#: The pools of the instance's solver's worker: none, so that it stays idle.
IDLE_WORKER_POOL = "clock=0"
TARGET_FOLLOWERS = 10_000
TARGET_P99_MS = 250.0
TARGET_KIB = 20.0
TARGET_RATIO = 0.8


# --- the instance -----------------------------------------------------------------------
class Instance:
    """``python -m service.devserver`` on a free port, with its own Redis and log."""

    def __init__(self, workdir: Path):
        self.port = free_port(HOST)
        self.log_path = workdir / "devserver.log"
        # The solver's worker runs, as in make run, but idle: no pools to fill (it only
        # looks for analyses to compute, and none are asked for).
        self.env = dict(os.environ, PORT=str(self.port), REDIS_DATA_DIR=str(workdir / "redis"),
                        RATELIMIT_ENABLED="false", SECRET_KEY=new_secret_key(),
                        WINNABLE_POOL=IDLE_WORKER_POOL)
        for name in ("REDIS_URL", "PROMETHEUS_MULTIPROC_DIR", "EVENTS_BIND",
                     "EVENTS_HANDOFF_SOCKET"):
            self.env.pop(name, None)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Instance:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "service.devserver"], cwd=ROOT, env=self.env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=die_with_parent())
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"devserver exited:\n{self.log()[-3000:]}")
            if "serving http" in self.log() and self.log().count("Booting worker") >= 2:
                with contextlib.suppress(OSError):
                    status, _body = asyncio.run(_get(self.port, "/healthz"))
                    if status == 200:
                        return self
            if time.monotonic() > deadline:
                raise RuntimeError(f"devserver did not answer:\n{self.log()[-3000:]}")
            time.sleep(0.2)

    def __exit__(self, *_exc_info) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def redis_pids(self) -> list[int]:
        return [pid for pid in _children(self.process.pid) if "redis-server" in _cmdline(pid)]

    def worker_pids(self) -> list[int]:
        return [pid for pid in _children(self.process.pid) if "service.worker" in _cmdline(pid)]

    def groups(self) -> dict[str, list[int]]:
        """The pids of each gunicorn group (master first, then its workers)."""
        found: dict[str, list[int]] = {}
        for master in _children(self.process.pid):
            if "gunicorn" not in _cmdline(master):
                continue
            name = "events" if EVENTS_COMMAND[2] in _cmdline(master) else "requests"
            found[name] = [master, *_children(master)]
        return found


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) of ``pids`` together, in KiB."""
    rss = pss = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss, pss


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


# --- a minimal HTTP/1.1 client ----------------------------------------------------------
async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    body = await reader.readexactly(int(match.group(1))) if match else b""
    return status, body


def _request(method: str, path: str, body: bytes = b"", headers: dict | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _get(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(_request("GET", path))
        return await _read_response(reader)
    finally:
        writer.close()


@dataclass
class Game:
    id: str
    token: str
    walk: Walk
    version: int = 0


async def create_games(port: int, walks: list[Walk]) -> list[Game]:
    reader, writer = await asyncio.open_connection(HOST, port)
    games = []
    try:
        for walk in walks:
            body = json.dumps({"variant": walk.variant, "seed": walk.seed}).encode()
            writer.write(_request("POST", "/v1/games", body))
            status, answer = await _read_response(reader)
            if status != 201:
                raise RuntimeError(f"POST /v1/games answered {status}: {answer[:200]!r}")
            data = json.loads(answer)
            games.append(Game(data["game"]["id"], data["player_token"], walk))
    finally:
        writer.close()
    return games


def _move_request(game: Game) -> bytes:
    move = game.walk.moves[game.version]
    return _request("POST", f"/v1/games/{game.id}/moves", json.dumps(move).encode(),
                    {"Authorization": f"Bearer {game.token}", "If-Match": f'"{game.version}"'})


async def _move(reader, writer, game: Game) -> None:
    writer.write(_move_request(game))
    status, answer = await _read_response(reader)
    if status != 200:
        raise RuntimeError(f"move {game.version + 1} of {game.id} answered {status}: "
                           f"{answer[:200]!r}")
    game.version += 1


async def closed_loop(port: int, games: list[Game], connections: int, seconds: float
                      ) -> tuple[int, float, list[float]]:
    """Moves as fast as they are answered: (moves, seconds, latencies in ms)."""
    queue = list(games)
    latencies: list[float] = []
    stop = time.monotonic() + seconds

    async def lane():
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while queue and time.monotonic() < stop:
                game = queue.pop()
                while game.version < len(game.walk.moves) and time.monotonic() < stop:
                    started = time.monotonic()
                    await _move(reader, writer, game)
                    latencies.append((time.monotonic() - started) * 1000)
        finally:
            writer.close()

    started = time.monotonic()
    await asyncio.gather(*(lane() for _ in range(connections)))
    return len(latencies), time.monotonic() - started, latencies


async def paced(port: int, games: list[Game], rate: float, seconds: float,
                done: dict[tuple[str, int], float]) -> int:
    """``rate`` moves per second over ``games`` in turn; ``done[(game, version)]`` is the
    monotonic time of the 200 of the move that made ``version``.  Returns the moves sent
    late (the player could not keep the pace)."""
    lanes = 10
    late = 0
    start = time.monotonic() + 0.2
    total = int(rate * seconds)

    async def lane(index: int):
        nonlocal late
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            for number in range(total):
                game = games[number % len(games)]
                # a game's moves all go through one lane: one move of it in flight at most
                if (number % len(games)) % lanes != index:
                    continue
                if game.version >= len(game.walk.moves):
                    continue
                due = start + number / rate
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                elif wait < -0.05:
                    late += 1
                await _move(reader, writer, game)
                done[(game.id, game.version)] = time.monotonic()
        finally:
            writer.close()

    await asyncio.gather(*(lane(index) for index in range(lanes)))
    return late


# --- followers (in their own processes) -------------------------------------------------
@dataclass
class Tally:
    """What one process of followers saw."""

    followers: int = 0
    per_game: dict = field(default_factory=dict)  # game -> followers open
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    out_of_order: int = 0
    ended: int = 0
    received: int = 0
    # (game, version) -> [followers that received it, monotonic time of the last]
    events: dict = field(default_factory=dict)


async def _follow(port: int, game_id: str, tally: Tally, opened: asyncio.Event,
                  counter: list[int], total: int):
    try:
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 16)
    except OSError as error:
        tally.errors.append(f"connect: {error}")
        counter[0] += 1
        if counter[0] >= total:
            opened.set()
        return
    writer.write(_request("GET", f"/v1/games/{game_id}/events",
                          headers={"Accept": "text/event-stream"}))
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (OSError, asyncio.IncompleteReadError) as error:
        tally.errors.append(f"head: {error!r}")
        head = b""
    counter[0] += 1
    if counter[0] >= total:
        opened.set()
    if not head.startswith(b"HTTP/1.1 200"):
        tally.refused += 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            body = await asyncio.wait_for(reader.read(300), 2)
            tally.errors.append(f"refused: {head[:12]!r} {body[:200]!r}")
        writer.close()
        return
    tally.followers += 1
    tally.per_game[game_id] = tally.per_game.get(game_id, 0) + 1
    chunked = b"chunked" in head.lower()
    last = None
    events = tally.events
    try:
        while True:
            if chunked:
                size = int((await reader.readline()).strip() or b"0", 16)
                if size == 0:
                    break
                data = await reader.readexactly(size + 2)
            else:
                data = await reader.readuntil(b"\n\n")
            now = time.monotonic()
            for block in data.split(b"\n\n"):
                if not block.startswith(b"id: "):
                    if block.startswith(b"event: end"):
                        tally.ended += 1
                    continue
                version = int(block[4:block.index(b"\n")])
                if last is not None and version != last + 1:
                    tally.out_of_order += 1
                last = version
                tally.received += 1
                seen = events.get((game_id, version))
                if seen is None:
                    events[(game_id, version)] = [1, now]
                else:
                    seen[0] += 1
                    seen[1] = now
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        if not isinstance(error, asyncio.CancelledError):
            tally.errors.append(f"stream: {error!r}")
    finally:
        writer.close()


def follower_process(port: int, game_ids: list[str], rate: float, pipe) -> None:
    """Open a stream on each of ``game_ids`` (``rate`` per second), say so on ``pipe``,
    then read them until told to stop; send the :class:`Tally` back."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def main():
        tally = Tally()
        opened = asyncio.Event()
        counter = [0]
        tasks = []
        started = time.monotonic()
        for number, game_id in enumerate(game_ids):
            wait = started + number / rate - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.ensure_future(
                _follow(port, game_id, tally, opened, counter, len(game_ids))))
        await opened.wait()
        pipe.send(("open", tally.followers, tally.refused, len(tally.errors)))
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_reader(pipe.fileno(), stop.set)
        await stop.wait()
        loop.remove_reader(pipe.fileno())
        pipe.recv()
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        events = {f"{game}:{version}": value for (game, version), value in tally.events.items()}
        pipe.send(("done", {"followers": tally.followers, "per_game": tally.per_game,
                            "refused": tally.refused,
                            "errors": tally.errors[:20], "error_count": len(tally.errors),
                            "out_of_order": tally.out_of_order, "ended": tally.ended,
                            "received": tally.received, "events": events}))

    asyncio.run(main())


# --- the run ----------------------------------------------------------------------------
def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench follow", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--followers", type=int, default=TARGET_FOLLOWERS)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0, help="paced moves per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--throughput-seconds", type=float, default=10.0,
                        help="length of each phase of the closed-loop player")
    parser.add_argument("--processes", type=int, default=4, help="follower processes")
    parser.add_argument("--open-rate", type=float, default=300.0,
                        help="streams opened per second, in all")
    parser.add_argument("--connections", type=int, default=16,
                        help="connections of the closed-loop player")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true",
                        help="keep the instance's directory (its log) and say where")
    args = parser.parse_args(argv)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    command = "python -m bench follow " + " ".join(argv)
    try:
        return _run(args, workdir, command.strip())
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


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


def _measured(name: str, parts: dict[str, list[int]], run) -> Phase:
    """Run ``run()`` (a coroutine function answering closed_loop's tuple) and account
    for the CPU of ``parts`` (name -> pids), this process (the players) and the rest."""
    before = {part: cpu_seconds(pids) for part, pids in parts.items()}
    mine = time.process_time()
    busy, _total = machine_busy()
    started = time.monotonic()
    moves, seconds, latencies = asyncio.run(run())
    wall = time.monotonic() - started
    phase = Phase(name, moves, seconds, percentile(latencies, 0.99))
    for part, pids in parts.items():
        phase.cpu[part] = (cpu_seconds(pids) - before[part]) / wall
    phase.cpu["players"] = (time.process_time() - mine) / wall
    phase.cpu["other processes"] = max(
        0.0, (machine_busy()[0] - busy) / wall - sum(phase.cpu.values()))
    print(f"{name}: {phase.rate:,.0f} moves/s (p99 {phase.p99_ms:.1f} ms); cores: "
          + ", ".join(f"{part} {value:.2f}" for part, value in phase.cpu.items()),
          flush=True)
    return phase


def _run(args, workdir: Path, command: str) -> int:
    paced_moves = int(args.rate * args.seconds * 3) // args.games + 8
    followed_walks = long_walks(VARIANTS, args.games, paced_moves)
    # four sets of unfollowed games, one per closed-loop phase, long enough for it
    busy_walks = long_walks(VARIANTS, 8 * args.connections, 800, first_seed=10_000)
    load_before = os.getloadavg()
    with Instance(workdir) as instance:
        port = instance.port
        groups = instance.groups()
        followed = asyncio.run(create_games(port, followed_walks))
        busy = asyncio.run(create_games(port, busy_walks))
        quarter = len(busy) // 4
        sets = [busy[index * quarter:(index + 1) * quarter] for index in range(4)]
        idle_rss = memory_kib(groups["events"])
        print(f"instance up on port {port}: events group {groups['events']}, "
              f"request group {groups['requests']}", flush=True)
        parts = {"request group": groups["requests"], "events group": groups["events"],
                 "redis": instance.redis_pids(), "solver worker": instance.worker_pids()}

        def loop(games):
            return lambda: closed_loop(port, games, args.connections, args.throughput_seconds)

        # 1. moves alone
        phases = [_measured("moves alone, before", parts, loop(sets[0]))]

        # 2. followers
        ids = [followed[number % len(followed)].id for number in range(args.followers)]
        shares = [ids[index::args.processes] for index in range(args.processes)]
        pipes, processes = [], []
        context = multiprocessing.get_context("fork")
        opened_at = time.monotonic()
        for share in shares:
            ours, theirs = context.Pipe()
            process = context.Process(target=follower_process,
                                      args=(port, share, args.open_rate / args.processes,
                                            theirs), daemon=True)
            process.start()
            pipes.append(ours)
            processes.append(process)
        opened = [pipe.recv() for pipe in pipes]
        open_seconds = time.monotonic() - opened_at
        holding = sum(entry[1] for entry in opened)
        refused = sum(entry[2] for entry in opened)
        parts["followers (load generator)"] = [process.pid for process in processes]
        time.sleep(2)  # idle
        rss, pss = memory_kib(groups["events"])
        all_rss, _all_pss = memory_kib(groups["events"] + groups["requests"])
        print(f"followers open: {holding:,} in {open_seconds:.1f} s ({refused} refused); "
              f"events group RSS {rss / 1024:,.1f} MiB (was {idle_rss[0] / 1024:,.1f}), "
              f"PSS {pss / 1024:,.1f} MiB", flush=True)

        # 3. moves with idle followers (heartbeats only)
        phases.append(_measured("moves with idle followers", parts, loop(sets[1])))

        # 4. live: the paced player alone on the followed games
        done: dict[tuple[str, int], float] = {}
        events_cpu = cpu_seconds(groups["events"])
        started = time.monotonic()
        late = asyncio.run(paced(port, followed, args.rate, args.seconds, done))
        live_seconds = time.monotonic() - started
        events_cpu = cpu_seconds(groups["events"]) - events_cpu
        time.sleep(1.5)  # the last events reach their followers

        # 5. moves while the paced player keeps playing the followed games
        async def both():
            """Both players: every move answered counts (the paced ones too)."""
            answered: dict = {}
            pacing = asyncio.ensure_future(
                paced(port, followed, args.rate, args.throughput_seconds, answered))
            moves, seconds, latencies = await closed_loop(port, sets[2], args.connections,
                                                          args.throughput_seconds)
            await pacing
            return moves + len(answered), seconds, latencies

        phases.append(_measured("moves with followers following 50 moves/s", parts, both))
        time.sleep(1.5)
        for pipe in pipes:
            pipe.send("stop")
        tallies = [pipe.recv()[1] for pipe in pipes]
        for process in processes:
            process.join(30)
        del parts["followers (load generator)"]
        final_rss = memory_kib(groups["events"])[0]

        # 6. moves alone again: the machine's other work changes as the run goes on, so
        # the rate without followers is the mean of before and after
        time.sleep(1)
        phases.append(_measured("moves alone, after", parts, loop(sets[3])))

    per_game: dict[str, int] = {}
    for tally in tallies:
        for game_id, count in tally["per_game"].items():
            per_game[game_id] = per_game.get(game_id, 0) + count
    received: dict[str, list] = {}
    for tally in tallies:
        for key, (count, last) in tally["events"].items():
            seen = received.setdefault(key, [0, 0.0])
            seen[0] += count
            seen[1] = max(seen[1], last)
    delays, incomplete = [], 0
    for (game_id, version), answered in done.items():
        seen = received.get(f"{game_id}:{version}")
        if seen is None or seen[0] < per_game.get(game_id, 0):
            incomplete += 1
            continue
        delays.append((seen[1] - answered) * 1000)
    missing_total = sum(max(0, per_game.get(key.split(":")[0], 0) - value[0])
                        for key, value in received.items())
    figures = {
        "followers": holding, "refused": refused, "open_seconds": open_seconds,
        "moves_live": len(done), "live_seconds": live_seconds, "late": late,
        "incomplete": incomplete, "missing": missing_total,
        "out_of_order": sum(t["out_of_order"] for t in tallies),
        "errors": sum(t["error_count"] for t in tallies),
        "p50": percentile(delays, 0.5), "p99": percentile(delays, 0.99),
        "max": max(delays) if delays else float("nan"),
        "rss": rss, "pss": pss, "idle_rss": idle_rss[0], "all_rss": all_rss,
        "final_rss": final_rss, "phases": phases, "events_cpu": events_cpu,
        "load_before": load_before, "load_after": os.getloadavg(),
        "sample_errors": sum((t["errors"] for t in tallies), [])[:5],
    }
    text = report(args, figures, command)
    print(text)
    write_section(args.output, BEGIN, END, text.rstrip("\n"))
    return 0


def report(args, f: dict, command: str) -> str:
    followers = max(1, f["followers"])
    per_follower = f["rss"] / followers
    marginal = (f["rss"] - f["idle_rss"]) / followers
    before, idle, live, after = f["phases"]
    alone = (before.rate + after.rate) / 2
    ratio_idle = idle.rate / alone if alone else float("nan")
    ratio_live = live.rate / alone if alone else float("nan")

    def mark(ok: bool) -> str:
        return "met" if ok else "**not met**"

    def cpu_ratio(phase: Phase) -> float:
        """Without followers over with: the CPU per move, as a throughput ratio that the
        machine's other work does not move."""
        without = (before.cpu_per_move_us + after.cpu_per_move_us) / 2
        return without / phase.cpu_per_move_us

    every = f["incomplete"] == 0 and f["missing"] == 0 and f["out_of_order"] == 0 \
        and f["errors"] == 0
    lines = [
        "## Live follow (`python -m bench follow`)",
        "",
        f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        "one instance of `make run` (`python -m service.devserver`: its own Redis, the "
        "request group of 4 gthread workers and the events group of 1 gevent worker) on "
        "this machine, rate limits off; the load generator runs on the same cores "
        f"({args.processes} processes of asyncio followers, real TCP connections). Load "
        f"average before {f['load_before'][0]:.2f}, after {f['load_after'][0]:.2f} "
        "(other work shares these 2 cores).  The instance's solver's worker runs idle "
        f"(`WINNABLE_POOL={IDLE_WORKER_POOL}`: no pool to fill, no analysis asked for); its "
        "CPU in each phase is the column *solver worker* below.",
        "",
        "| figure | measured | target | |",
        "|---|---:|---:|---|",
        f"| concurrent followers over {args.games} games | {f['followers']:,} "
        f"({f['refused']} refused, {f['errors']} errors) | {TARGET_FOLLOWERS:,} | "
        f"{mark(f['followers'] >= TARGET_FOLLOWERS and f['errors'] == 0)} |",
        f"| every follower got every event, in order | {f['moves_live']:,} moves in "
        f"{f['live_seconds']:.1f} s: {f['incomplete']} not received by all, "
        f"{f['out_of_order']} gaps or reorders | all | {mark(every)} |",
        f"| delay from a move's 200 to its event at the last follower, p99 | "
        f"{f['p99']:.0f} ms (p50 {f['p50']:.0f}, max {f['max']:.0f}) | ≤ {TARGET_P99_MS:.0f} ms"
        f" | {mark(f['p99'] <= TARGET_P99_MS)} |",
        f"| memory per idle follower: events group RSS / followers | "
        f"{per_follower:.1f} KiB ({f['rss'] / 1024:,.0f} MiB; PSS "
        f"{f['pss'] / followers:.1f} KiB; added by the followers {marginal:.1f} KiB) | "
        f"≤ {TARGET_KIB:.0f} KiB | {mark(per_follower <= TARGET_KIB)} |",
        f"| moves per second with the followers connected / without | {idle.rate:,.0f} / "
        f"{alone:,.0f} = {ratio_idle:.2f} (CPU per move: {cpu_ratio(idle):.2f}) | "
        f"≥ {TARGET_RATIO} | {mark(ratio_idle >= TARGET_RATIO)} |",
        f"| the same while they follow {args.rate:g} moves/s | {live.rate:,.0f} / "
        f"{alone:,.0f} = {ratio_live:.2f} (CPU per move: {cpu_ratio(live):.2f}) | "
        f"≥ {TARGET_RATIO} | {mark(ratio_live >= TARGET_RATIO)} |",
        "",
        f"- Followers opened at {args.open_rate:g}/s in all: {f['open_seconds']:.1f} s for "
        f"all of them.  Paced player: {args.rate:g} moves/s round robin over the followed "
        f"games on 10 connections ({f['late']} moves sent more than 50 ms late).  The events "
        f"group used {f['events_cpu']:.1f} s of CPU during the {f['live_seconds']:.0f} s "
        "live phase.",
        f"- Moves' throughput: a closed-loop player on {args.connections} connections over "
        f"games nobody follows, {args.throughput_seconds:g} s per phase: without followers "
        "(before they open, and again after they closed: the rate without is the mean of "
        "the two), with the followers connected and idle (heartbeats only), and with them "
        f"following the paced player's {args.rate:g} moves/s (its moves count in that "
        "phase's rate).  The cores each part kept "
        "busy meanwhile (from /proc; *players* is this benchmark's own process, *other "
        "processes* the rest of the machine).  On a shared machine the rates follow the "
        "other processes; the CPU per move does not, and its ratio (in brackets above) "
        "says what the followers cost each move:",
        "",
        "| phase | moves/s | p99 ms | CPU µs per move (request group + Redis) | "
        + " | ".join(before.cpu) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(before.cpu),
    ]
    for phase in f["phases"]:
        cells = [f"{phase.cpu[part]:.2f}" if part in phase.cpu else "–" for part in before.cpu]
        lines.append(f"| {phase.name} | {phase.rate:,.0f} | {phase.p99_ms:.1f} | "
                     f"{phase.cpu_per_move_us:,.0f} | " + " | ".join(cells) + " |")
    followers_cpu = [p.cpu.get("followers (load generator)") for p in (idle, live)]
    lines += [
        "",
        f"  The follower processes (the load generator) kept {followers_cpu[0]:.2f} and "
        f"{followers_cpu[1]:.2f} cores busy in the two phases with followers.",
        f"- Both groups together: {f['all_rss'] / 1024:,.0f} MiB RSS with the followers "
        f"open; the events group held {f['final_rss'] / 1024:,.0f} MiB at the end.",
    ]
    if f["sample_errors"]:
        lines.append(f"- Errors seen by followers (first ones): {f['sample_errors']}")
    return "\n".join(lines) + "\n"
