"""HTTP benchmark: a real gunicorn with the production config against a real Redis.

For each Redis persistence (``always``: AOF with ``appendfsync always``, as in
docker-compose.yml; ``off``: no AOF, no RDB) the benchmark starts its own redis-server
and gunicorn (``gunicorn.conf.py`` as it is, rate limiting off) on free ports, creates
games, and loads each endpoint with wrk (32 connections on one thread per core, the
requests made by bench/http.lua) in rounds (default 3): each round loads every endpoint
in turn for a fixed time after a warm-up, so that a slower or faster spell of a shared
machine falls on all of them, and each ratio compares rates of the same round:

- ``GET /healthz``, the floor: an endpoint's ratio is the median over the rounds of its
  rate over the floor's in the same round;
- ``GET /v1/games/<id>`` and ``GET /v1/games/<id>/moves`` over every game in turn;
- ``POST /v1/games/<id>/moves``: long walks of legal moves computed with the engine
  (bench/walks.py), four games per connection, at most one move of a game in flight,
  each move with its ``If-Match``: every request is a new legal move of a game, nothing
  can be cached;
- ``POST /v1/games``, the variants in turn.

- the reference endpoints of the performance issue (bench/toy.py: a bare Flask JSON
  answer, a 1 KiB value read from Redis, and the same written back with a Lua
  compare-and-set), served alongside by the same gunicorn config against a Redis of the
  same persistence: the floor of the stack on this machine, in the same rounds.

It also reports Redis ``MEMORY USAGE`` per stored game (all its keys) just created and
after 100 moves; short requests while many Server-Sent Event streams are open (when the
service has the events feed); and a profile of the request path (bench/profile.py).
Everything goes to ``bench/RESULTS.md`` (``--output``).  Targets are compared and
reported; nothing fails on a time.

    python -m bench http [--duration S] [--rounds N] [--warmup S] [--connections N]
                         [--threads N]
                         [--persistence always|off|both] [--streams N]
                         [--profile-requests N] [--no-toy] [--output PATH]

wrk comes from Debian: when it is missing the benchmark installs it (``apt-get install
-y wrk``) if it runs as root, and otherwise says how to.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import resource
import runpy
import selectors
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import redis

from bench.walks import Walk, long_walks
from service import keys
from service.keys import GAME_KEYS
from service.launch import GUNICORN_COMMAND, start_gunicorn
from service.redis_server import (
    RedisServer,
    RedisServerError,
    find_redis_server,
    free_port,
)

ROOT = Path(__file__).resolve().parent.parent
LUA = Path(__file__).with_name("http.lua")
RESULTS = Path(__file__).with_name("RESULTS.md")
HOST = "127.0.0.1"
VARIANTS = ("clock", "salic-law", "four-corners")
#: Ratios to /healthz (same run) and limits of issue 7.
TARGETS = {
    ("always", "post_moves"): 0.30,
    ("always", "get_game"): 0.70,
    ("off", "post_moves"): 0.42,
}
TARGET_MOVE_P99_MS = 30.0
TARGET_BYTES_PER_GAME = 4096
MEMORY_MOVES = 100
#: The reference endpoints of the performance issue, served like the service.
TOY_APP = "bench.toy:create_app()"
#: A generous ceiling of moves per second, to make the walks long enough.
MAX_MOVE_RATE = 3000
PERSISTENCE = {
    "always": "Redis AOF, appendfsync always (docker-compose.yml)",
    "off": "Redis persistence off (no AOF, no RDB)",
}


class Unavailable(RuntimeError):
    """The benchmark cannot run here (no wrk, no redis-server)."""


# --- wrk ------------------------------------------------------------------------------
def find_wrk(*, install: bool = True) -> str:
    """The path of wrk; installs Debian's package when missing and running as root."""
    found = shutil.which("wrk")
    if found:
        return found
    how = "install Debian's package: `sudo apt-get install -y wrk`"
    if not install:
        raise Unavailable(f"wrk is not installed: {how}")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise Unavailable(f"wrk is not installed and this is not root: {how}")
    if not shutil.which("apt-get"):
        raise Unavailable("wrk is not installed and there is no apt-get to install it: "
                          "install wrk (https://github.com/wg/wrk) and run again")
    print("bench http: wrk is missing: apt-get install -y wrk", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    output = ""
    for command in (["apt-get", "install", "-y", "-q", "wrk"],
                    ["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "wrk"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        output = done.stdout[-1500:] + done.stderr[-1500:]
        if command[1] == "install" and done.returncode == 0 and shutil.which("wrk"):
            return shutil.which("wrk")
    raise Unavailable(f"could not install wrk with apt-get:\n{output.strip()}")


def unavailable() -> str | None:
    """Why the benchmark cannot run here, or None (installs wrk as root if needed)."""
    try:
        find_wrk()
        find_redis_server()
    except (Unavailable, RedisServerError) as error:
        return str(error)
    return None


def wrk_version(wrk: str) -> str:
    done = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).splitlines()
    return first[0].split(" Copyright")[0] if first else "?"


# --- the machine ----------------------------------------------------------------------
def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def filesystem_of(path: Path) -> str:
    """The type of the file system holding ``path`` (ext4, tmpfs, ...), from /proc/mounts."""
    best, kind = "", "?"
    with contextlib.suppress(OSError):
        resolved = str(path.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and (resolved == fields[1]
                                    or resolved.startswith(fields[1].rstrip("/") + "/")) \
                    and len(fields[1]) >= len(best):
                best, kind = fields[1], fields[2]
    return kind


def load_average() -> str:
    with contextlib.suppress(OSError, AttributeError):
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    return "?"


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy() -> float:
    """CPU seconds every core of the machine has been busy so far (Linux /proc/stat)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle, iowait
        return (sum(fields[:8]) - idle) / _TICKS
    return 0.0


def children_cpu() -> float:
    """CPU seconds of the finished child processes of this one (each wrk run)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def process_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by the processes ``pids`` (Linux)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (gunicorn's workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


# --- the service ----------------------------------------------------------------------
def gunicorn_settings(env: dict) -> dict:
    """What gunicorn.conf.py sets under ``env`` (it reads everything from there)."""
    with mock.patch.dict(os.environ, env, clear=True):
        namespace = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    worker_class = namespace.get("worker_class") or "sync"
    return {
        "workers": namespace.get("workers", 1),
        "worker_class": worker_class,
        "threads": namespace.get("threads", 1),
        "worker_connections": namespace.get("worker_connections", 1000),
        "keepalive": namespace.get("keepalive", 2),
        "timeout": namespace.get("timeout", 30),
    }


def describe_workers(settings: dict) -> str:
    kind = settings["worker_class"].rsplit(".", 1)[-1]
    text = f"{settings['workers']} × {kind}"
    if "thread" in kind:
        text += f", {settings['threads']} threads each"
    elif any(name in kind for name in ("gevent", "eventlet", "tornado", "uvicorn")):
        text += f", up to {settings['worker_connections']} connections each"
    return text


class Service:
    """Its own redis-server and gunicorn (production config) on free ports."""

    def __init__(self, workdir: Path, persistence: str, *, app: str = GUNICORN_COMMAND[-1],
                 ready_path: str = "/healthz", name: str = "service"):
        self.persistence = persistence
        self.app = app
        self.ready_path = ready_path
        self.workdir = workdir / f"{name}-{persistence}"
        self.workdir.mkdir(parents=True)
        always = persistence == "always"
        self.redis = RedisServer(self.workdir / "redis", appendonly=always,
                                 appendfsync="always" if always else "everysec")
        self.port = free_port(HOST)
        self.base = f"http://{HOST}:{self.port}"
        self.log_path = self.workdir / "gunicorn.log"
        metrics_dir = self.workdir / "prometheus"
        metrics_dir.mkdir()
        self.env = dict(os.environ, HOST=HOST, PORT=str(self.port), REDIS_URL=self.redis.url,
                        RATELIMIT_ENABLED="false", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
        self.settings = gunicorn_settings(self.env)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Service:
        self.redis.start()
        try:
            with open(self.log_path, "wb") as log:
                self.process = start_gunicorn(self.env, app=self.app, output=log)
            self._wait_until_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc_info) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.redis.stop()

    def _wait_until_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with status {self.process.returncode}:\n"
                                   f"{self.log()[-3000:]}")
            booted = self.log().count("Booting worker with pid")
            if booted >= self.settings["workers"]:
                with contextlib.suppress(OSError, http.client.HTTPException), \
                        Client(self.port) as client:
                    if client.request("GET", self.ready_path)[0] == 200:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer within {timeout:g} s:\n"
                                   f"{self.log()[-3000:]}")
            time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by gunicorn (master and workers) and by Redis."""
        workers = [self.process.pid, *children(self.process.pid)]
        return process_cpu(workers), process_cpu([self.redis.pid])

    def redis_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url)


class Client:
    """A keep-alive HTTP/1.1 client for setting things up (not for measuring)."""

    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection(HOST, port, timeout=30)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc_info) -> None:
        self.close()

    def request(self, method: str, path: str, body: dict | None = None,
                headers: dict | None = None) -> tuple[int, dict, bytes]:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        sent.update(headers or {})
        self.connection.request(method, path, body=data, headers=sent)
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, dict(response.getheaders()), payload


def _parallel(port: int, jobs: list, work, threads: int = 8) -> list:
    """``work(client, job)`` for every job, on ``threads`` keep-alive connections."""
    local = threading.local()
    clients: list[Client] = []

    def run(job):
        if not hasattr(local, "client"):
            local.client = Client(port)
            clients.append(local.client)
        return work(local.client, job)

    try:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(run, jobs))
    finally:
        for client in clients:
            client.close()


@dataclass
class Game:
    id: str
    token: str
    variant: str
    walk: Walk | None = None

    @property
    def path(self) -> str:
        return f"/v1/games/{self.id}"


def create(client: Client, variant: str, seed: int | None = None) -> Game:
    body = {"variant": variant} if seed is None else {"variant": variant, "seed": seed}
    status, _headers, payload = client.request("POST", "/v1/games", body)
    if status != 201:
        raise RuntimeError(f"POST /v1/games answered {status}: {payload[:300]!r}")
    data = json.loads(payload)
    return Game(data["game"]["id"], data["player_token"], variant)


def play(client: Client, game: Game, moves: tuple[dict, ...], first_version: int = 0) -> None:
    for version, move in enumerate(moves, first_version):
        status, _headers, payload = client.request(
            "POST", f"{game.path}/moves", move,
            {"Authorization": f"Bearer {game.token}", "If-Match": f'"{version}"'})
        if status != 200:
            raise RuntimeError(f"move {version + 1} of {game.id} answered {status}: "
                               f"{payload[:300]!r}")


# --- wrk runs -------------------------------------------------------------------------
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


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def moves_file_writer(service: Service, games: list[Game], lanes: int, path: Path):
    """A ``prepare()`` that writes each game's remaining moves from its stored version."""

    def read_versions(client: redis.Redis) -> list[int]:
        pipe = client.pipeline(transaction=False)
        for game in games:
            pipe.hget(keys.game(game.id), keys.VERSION)
        return [int(v) for v in pipe.execute()]

    def prepare() -> None:
        # The requests a stopped wrk left in flight may still be answered: wait until
        # the versions stand still, so that every game goes on from its real version.
        with contextlib.closing(service.redis_client()) as client:
            versions = read_versions(client)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.3)
                again = read_versions(client)
                if again == versions:
                    break
                versions = again
        lines = []
        for i, (game, version) in enumerate(zip(games, versions, strict=True)):
            rest = [json.dumps(move, separators=(",", ":")) for move in game.walk.moves[version:]]
            lines.append("\t".join([str(i % lanes), f"{game.path}/moves", game.token,
                                    str(version), *rest]))
        write_lines(path, lines)

    return prepare


# --- event streams --------------------------------------------------------------------
class Streams:
    """Many open ``GET .../events`` (Accept: text/event-stream), read in one thread."""

    def __init__(self, port: int, paths: list[str]):
        self.selector = selectors.DefaultSelector()
        self.opened = self.refused = self.ended = self.events = 0
        self._stop = threading.Event()
        for path in paths:
            sock = socket.create_connection((HOST, port), timeout=5)
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                         "Accept: text/event-stream\r\n\r\n".encode())
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, {"head": b"", "open": False})
        self.count = len(paths)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            for key, _mask in self.selector.select(timeout=0.1):
                state = key.data
                try:
                    data = key.fileobj.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.ended += 1
                    self.selector.unregister(key.fileobj)
                    key.fileobj.close()
                    continue
                if not state["open"]:
                    state["head"] += data
                    if b"\r\n\r\n" not in state["head"]:
                        continue
                    head, _, data = state["head"].partition(b"\r\n\r\n")
                    state["open"] = True
                    if head.split(b" ", 2)[1:2] == [b"200"]:
                        self.opened += 1
                    else:
                        self.refused += 1
                self.events += data.count(b"\nid:") + data.startswith(b"id:")

    def wait_open(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.opened + self.refused + self.ended < self.count \
                and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()


def has_events_feed(port: int, game: Game) -> bool:
    with Client(port) as client:
        status, _headers, _payload = client.request("GET", f"{game.path}/events")
    return status == 200


# --- memory ---------------------------------------------------------------------------
@dataclass
class Memory:
    variant: str
    moves: int
    games: int
    mean: float  # MEMORY USAGE of every key of a game, added up
    largest: int
    keys: float  # keys per game
    record: float  # MEMORY USAGE of game:{<id>} (version, record and journal)
    other: float  # of every other key of the game (none unless Idempotency-Keys)


def memory_of(client: redis.Redis, games: list[Game], moves: int) -> Memory:
    """Every key of each game (found by its hash tag) and its ``MEMORY USAGE``."""
    wanted = {game.id for game in games}
    keys: dict[str, list[bytes]] = {game_id: [] for game_id in wanted}
    for key in client.scan_iter(match=GAME_KEYS, count=1000):
        game_id = key.decode().partition("{")[2].partition("}")[0]
        if game_id in wanted:
            keys[game_id].append(key)
    pipe = client.pipeline(transaction=False)
    order = [(game_id, key) for game_id, found in keys.items() for key in found]
    for _game_id, key in order:
        pipe.memory_usage(key, samples=0)
    usage: dict[str, dict[str, int]] = {game_id: {} for game_id in wanted}
    for (game_id, key), used in zip(order, pipe.execute(), strict=True):
        usage[game_id][key.decode().partition("}")[2]] = used or 0
    totals = [sum(parts.values()) for parts in usage.values()]
    n = len(games)

    def mean(part: str | None) -> float:
        if part is None:
            return sum(v for parts in usage.values() for k, v in parts.items()
                       if k != "") / n
        return sum(parts.get(part, 0) for parts in usage.values()) / n

    return Memory(games[0].variant, moves, n, sum(totals) / n, max(totals),
                  sum(len(parts) for parts in usage.values()) / n, mean(""), mean(None))


# --- the report -----------------------------------------------------------------------
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
    memory = [m for o in outcomes for m in o.memory if m.moves == MEMORY_MOVES]
    if memory:
        worst = max(memory, key=lambda m: m.mean)
        met = worst.mean <= TARGET_BYTES_PER_GAME
        lines.append(f"| Redis memory per game after {MEMORY_MOVES} moves ≤ 4 KiB "
                     f"(worst variant, mean) | {worst.mean:,.0f} B ({worst.variant}) | "
                     f"{'yes' if met else 'NO'} |")
    return "\n".join(lines)


def memory_table(memory: list[Memory]) -> str:
    lines = ["| variant | moves | games | keys per game | bytes per game (mean) | largest | "
             "`game:{id}` | other keys |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in memory:
        lines.append(f"| {m.variant} | {m.moves} | {m.games} | {m.keys:.1f} | {m.mean:,.0f} | "
                     f"{m.largest:,} | {m.record:,.0f} | {m.other:,.0f} |")
    return "\n".join(lines)


def report(args, outcomes: list[Outcome], command: str, machine: dict, profile: str) -> str:
    first = outcomes[0]
    settings = first.settings
    out = [
        "# Benchmark results",
        "",
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(`make bench` runs it after the engine and bots benchmarks); regenerated on every "
        "run. Times are reported, never checked: nothing fails on them.",
        "",
        "## Machine",
        "",
        "| CPU | cores | Python | Redis | Redis files on | wrk | load average before |",
        "|---|---:|---|---|---|---|---|",
        f"| {machine['cpu']} | {machine['cores']} | {machine['python']} | "
        f"{first.redis_version} | {machine['filesystem']} | {machine['wrk']} | "
        f"{machine['load']} |",
        "",
        "wrk runs on the same machine as gunicorn and Redis and takes its share of the "
        "cores; ratios to `/healthz` measured in the same run are what compares across "
        "machines.",
        "",
        "## Configuration",
        "",
        f"- gunicorn: `{' '.join(GUNICORN_COMMAND)}` with `gunicorn.conf.py` as it is: "
        f"**{describe_workers(settings)}** (worker class `{settings['worker_class']}`, "
        f"keep-alive {settings['keepalive']} s); `RATELIMIT_ENABLED=false` (the limiter "
        "would add its own Redis round trip to every request), everything else the "
        "production defaults: `LOG_LEVEL=INFO` (one JSON line per request, to a file), "
        "Prometheus metrics shared by the workers (`PROMETHEUS_MULTIPROC_DIR`).",
        f"- wrk: {args.connections} connections on {args.threads} threads, request timeout "
        "5 s; `bench/http.lua` makes every request. "
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
        "gunicorn config serves `bench/toy.py`, the reference endpoints the performance "
        "issue measured (a bare Flask JSON answer; a 1 KiB JSON value read from Redis; "
        "read and written back with a Lua compare-and-set), over 1,024 keys, against its "
        "own Redis of the same persistence, loaded in the same rounds with the same wrk "
        "settings.",
        "",
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
            out += [f"The stack's own floor, {outcome.persistence}: the reference endpoints of "
                    "the performance issue (`bench/toy.py`: no request log, metrics, CORS, "
                    "validation or engine) served by the same gunicorn config against its "
                    "own Redis of the same persistence, in the same rounds:", "",
                    runs_table(outcome.toy_runs, outcome.toy_runs[0].rps,
                               floor_name="`/toy/json`", ratios=outcome.ratios), "",
                    toy_comparison(outcome), ""]
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
    out += ["## Targets", "", targets_table(outcomes, args.connections), ""]
    memory = [m for o in outcomes for m in o.memory]
    if memory:
        out += [
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
    if profile:
        out += ["## Profile of the request path", "", profile.strip(), ""]
    return "\n".join(out)


# --- the benchmark --------------------------------------------------------------------
def measure(bench: Bench, service: Service, walks: list[Walk], args, *,
            memory: bool, streams: int, toy: Service | None = None) -> Outcome:
    outcome = Outcome(service.persistence, service.settings)
    with contextlib.closing(service.redis_client()) as client:
        outcome.redis_version = client.info("server")["redis_version"]
    port = service.port
    lanes = args.threads  # each wrk thread plays the games of its lane

    # Games: the walked ones (seeded, to replay them), and read-only ones of each variant.
    walked = _parallel(port, walks, lambda c, w: create(c, w.variant, w.seed))
    for game, walk in zip(walked, walks, strict=True):
        game.walk = walk
    fresh = _parallel(port, [v for v in VARIANTS for _ in range(args.memory_games)],
                      lambda c, v: create(c, v))
    if memory:
        def play_hundred(client: Client, walk: Walk) -> Game:
            game = create(client, walk.variant, walk.seed)
            play(client, game, walk.moves[:MEMORY_MOVES])
            return game

        picked = [w for v in VARIANTS
                  for w in [x for x in walks if x.variant == v][:args.memory_played]]
        played = _parallel(port, picked, play_hundred)
        with contextlib.closing(service.redis_client()) as client:
            for moves, games in ((0, fresh), (MEMORY_MOVES, played)):
                for variant in VARIANTS:
                    outcome.memory.append(memory_of(
                        client, [g for g in games if g.variant == variant], moves))

    work = bench.workdir / service.persistence
    work.mkdir(exist_ok=True)
    every = walked + fresh
    games_file = write_lines(work / "games.txt", [g.path for g in every])
    lists_file = write_lines(work / "moves-lists.txt", [f"{g.path}/moves" for g in every])
    health_file = write_lines(work / "healthz.txt", ["/healthz"])
    create_file = write_lines(work / "create.txt",
                              [json.dumps({"variant": v}) for v in VARIANTS])
    moves_file = work / "moves.txt"
    prepare_moves = moves_file_writer(service, walked, lanes, moves_file)

    plan = [
        (service, "healthz", "`GET /healthz` (floor)", "paths", health_file, 200, None),
        (service, "get_game", "`GET /v1/games/<id>`", "paths", games_file, 200, None),
        (service, "get_moves", "`GET /v1/games/<id>/moves`", "paths", lists_file, 200, None),
        (service, "post_moves", "`POST /v1/games/<id>/moves`", "moves", moves_file, 200,
         prepare_moves),
        (service, "create", "`POST /v1/games`", "create", create_file, 201, None),
    ]
    if toy is not None:
        from bench.toy import KEYS
        plan += [
            (toy, "toy_json", "`GET /toy/json` (bare Flask JSON)", "paths",
             write_lines(work / "toy-json.txt", ["/toy/json"]), 200, None),
            (toy, "toy_read", "`GET /toy/read/<n>` (1 KiB value from Redis)", "paths",
             write_lines(work / "toy-read.txt", [f"/toy/read/{n}" for n in range(KEYS)]),
             200, None),
            (toy, "toy_write", "`POST /toy/write/<n>` (read, then Lua compare-and-set)",
             "posts",
             write_lines(work / "toy-write.txt", [f"/toy/write/{n}" for n in range(KEYS)]),
             200, None),
        ]
    # Every endpoint in each round, in turn: a slower or faster spell of the machine
    # falls on all of them, and each ratio compares rates measured minutes apart at most.
    rounds: dict[str, list[Run]] = {}
    for number in range(1, bench.rounds + 1):
        for target, key, label, mode, data, expected, prepare in plan:
            print(f"  {service.persistence}, round {number}/{bench.rounds}: {label} ...",
                  end="", flush=True)
            run = bench.run(target, key, label, mode, data, expected, prepare=prepare)
            print(summary(run), flush=True)
            rounds.setdefault(key, []).append(run)
    for key, runs in rounds.items():
        floor = rounds["toy_json" if key.startswith("toy_") else "healthz"]
        outcome.ratios[key] = [run.rps / base.rps if base.rps else 0.0
                               for run, base in zip(runs, floor, strict=True)]
        (outcome.toy_runs if key.startswith("toy_") else outcome.runs).append(combined(runs))
    outcome.floor = next(r.rps for r in outcome.runs if r.key == "healthz")

    if streams:
        outcome.streams = {"count": streams, "available": has_events_feed(port, walked[0])}
        if outcome.streams["available"]:
            measure_with_streams(bench, service, outcome, walked, streams, games_file,
                                 moves_file, prepare_moves)
    outcome.log_problems = log_problems(service.log())
    return outcome


def measure_with_streams(bench: Bench, service: Service, outcome: Outcome, walked: list[Game],
                         count: int, games_file: Path, moves_file: Path, prepare_moves) -> None:
    open_timeout = 10.0
    paths = [f"{walked[i % len(walked)].path}/events" for i in range(count)]
    streams = Streams(service.port, paths)
    try:
        streams.wait_open(open_timeout)
        before = streams.events
        for key, label, mode, data, prepare in (
                ("get_game", "`GET /v1/games/<id>`", "paths", games_file, None),
                ("post_moves", "`POST /v1/games/<id>/moves`", "moves", moves_file,
                 prepare_moves)):
            print(f"  {service.persistence} + {count} streams: {label} ...", end="", flush=True)
            run = bench.run(service, key, label, mode, data, 200, prepare=prepare,
                            seconds=bench.duration * bench.rounds)
            print(summary(run), flush=True)
            outcome.stream_runs.append(run)
        outcome.streams.update(opened=streams.opened, refused=streams.refused,
                               ended=streams.ended, events=streams.events - before,
                               open_timeout=open_timeout)
    finally:
        streams.close()


def log_problems(text: str) -> str:
    problems = []
    if "Traceback" in text:
        problems.append(f"{text.count('Traceback')} tracebacks")
    for needle, what in (('"status": 500', "answers 500"), ("WORKER TIMEOUT", "worker timeouts"),
                         ('"status": 503', "answers 503")):
        if needle in text:
            problems.append(f"{text.count(needle)} {what}")
    return ", ".join(problems)


def run_profile(redis_url: str | None, requests: int, redis_kind: str) -> str:
    """bench/profile.py in a child process (it must set up metrics before importing)."""
    command = [sys.executable, "-m", "bench.profile", "--requests", str(requests),
               "--markdown", "--redis-kind", redis_kind]
    if redis_url:
        command += ["--redis-url", redis_url]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=600)
    if done.returncode != 0:
        return f"The profile failed:\n\n```\n{done.stderr[-3000:]}\n```"
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench http",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=12,
                        help="seconds of measurement per endpoint, over all rounds "
                             "(default 12)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds: every endpoint in turn, each round (default 3)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="seconds of discarded load before each measurement (default 1)")
    parser.add_argument("--connections", type=int, default=32,
                        help="concurrent connections (default 32)")
    parser.add_argument("--threads", type=int, default=None,
                        help="wrk threads (default: one per core, at most --connections)")
    parser.add_argument("--games-per-connection", type=int, default=4,
                        help="games each connection plays in turn (default 4)")
    parser.add_argument("--persistence", choices=("always", "off", "both"), default="both",
                        help="Redis persistence: AOF fsync always, off, or both (default)")
    parser.add_argument("--memory-games", type=int, default=100,
                        help="games of each variant created for the memory table and "
                             "the reads (default 100)")
    parser.add_argument("--memory-played", type=int, default=10,
                        help=f"games of each variant played {MEMORY_MOVES} moves (default 10)")
    parser.add_argument("--streams", type=int, default=64,
                        help="event streams held open while short requests are measured "
                             "(0: skip; default 64)")
    parser.add_argument("--profile-requests", type=int, default=2000,
                        help="requests of each kind profiled in-process (0: no profile)")
    parser.add_argument("--no-toy", dest="toy", action="store_false",
                        help="skip the reference endpoints of bench/toy.py")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown report (default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if args.threads is None:
        args.threads = min(args.connections, os.cpu_count() or 1)
    if args.duration < 1 or args.rounds < 1 or args.warmup < 0 \
            or args.connections < args.threads \
            or args.threads < 1 \
            or args.games_per_connection < 1 or args.memory_games < 1 \
            or args.memory_played < 1:
        parser.error("durations, connections and game counts must be positive")

    try:
        wrk = find_wrk()
    except Unavailable as error:
        print(f"bench http: {error}", file=sys.stderr)
        return 1
    command = shlex.join(["python", "-m", "bench", "http", *(argv or [])])
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(),
               "python": f"{platform.python_implementation()} {platform.python_version()}",
               "wrk": wrk_version(wrk), "load": load_average()}
    persistences = ["always", "off"] if args.persistence == "both" else [args.persistence]
    phases = 2 if args.streams else 1
    walk_moves = max(MEMORY_MOVES, int(MAX_MOVE_RATE
                                       * (args.duration + args.warmup * args.rounds) * phases
                                       * 1.2 / (args.connections * args.games_per_connection)))
    count = max(args.connections * args.games_per_connection, args.memory_played * 3)
    print(f"HTTP benchmark: {machine['cpu']}, {machine['cores']} cores, load {machine['load']}; "
          f"computing {count} walks of {walk_moves} legal moves ...", flush=True)
    walks = long_walks(list(VARIANTS), count, walk_moves)

    outcomes = []
    profile = ""
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        machine["filesystem"] = filesystem_of(Path(tmp))
        bench = Bench(wrk, args.threads, args.connections, round_seconds(args), args.warmup,
                      Path(tmp), rounds=args.rounds)
        for i, persistence in enumerate(persistences):
            with contextlib.ExitStack() as services:
                service = services.enter_context(Service(Path(tmp), persistence))
                toy = None
                if args.toy:  # served alongside, idle while the service is loaded
                    toy = services.enter_context(Service(
                        Path(tmp), persistence, app=TOY_APP, ready_path="/toy/json",
                        name="toy"))
                if i == 0:
                    print(f"gunicorn: {describe_workers(service.settings)}", flush=True)
                outcome = measure(bench, service, walks, args, memory=i == 0,
                                  streams=args.streams if i == 0 else 0, toy=toy)
                outcomes.append(outcome)
                if i == len(persistences) - 1 and args.profile_requests:
                    # Against the last Redis: with persistence off when both are measured,
                    # so that the fsync wait does not hide where the CPU goes.
                    print("  profiling the request path in-process ...", flush=True)
                    profile = run_profile(service.redis.url, args.profile_requests,
                                          PERSISTENCE[persistence])
    text = report(args, outcomes, command, machine, profile)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print()
    print(targets_table(outcomes, args.connections))
    print(f"\nwrote {args.output}")
    return 0
