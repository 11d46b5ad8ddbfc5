"""Configuration: every setting of the service, in one table (:data:`SETTINGS`): the
environment variable it comes from, its parser, its one default, what it does, and which
part of the service reads it.  This is the only module that reads the environment.

Importing it reads nothing.  Each part reads its settings once, when it starts:

- the app (:data:`APP`): :func:`read_config`, which ``create_app()`` calls once, in every
  process that makes the app (the request processes, the events processes, the solver's
  worker); ``create_app(test_config)`` overrides any setting for tests;
- the gunicorn groups (:data:`REQUEST_GROUP`, :data:`EVENTS_GROUP`, and :data:`GROUPS`
  for what both share): :func:`process_settings`, called once by each group's settings
  module (:mod:`service.runtime`) when gunicorn loads it, before it starts any process;
  the processes inherit what was read;
- the solver's worker (:data:`SOLVER_WORKER`): :func:`process_settings` when it starts.

A bad value raises ``ValueError`` naming the variable, where that part starts.
docs/configuration.md lists every setting of the table (``python -m service.config``
prints its table; tests/test_configuration_docs.py checks the two agree).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

T = TypeVar("T")
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True,
             "0": False, "false": False, "no": False, "off": False}


def _env(name: str, default: T, parse: Callable[[str], T], expected: str) -> T:
    """``parse`` of the variable ``name`` (``default`` when unset or blank)."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return parse(value)
    except (ValueError, KeyError):
        raise ValueError(f"{name} must be {expected}, not {value!r}") from None


def env_str(name: str, default: str | None) -> str | None:
    """The variable's text as it is (``default`` when unset or empty)."""
    return os.environ.get(name) or default


def env_int(name: str, default: int | None) -> int | None:
    return _env(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env(name, default, float, "a number")


def env_bool(name: str, default: bool) -> bool:
    return _env(name, default, lambda value: _BOOLEANS[value.lower()], "true or false")


#: The parts of the service that read settings.
APP = "app"  # create_app(), in every process that makes the app
REQUEST_GROUP = "request group"  # service/runtime/request_group.py
EVENTS_GROUP = "events group"  # service/runtime/events_group.py
GROUPS = "both groups"  # service/runtime/shared.py
SOLVER_WORKER = "solver's worker"  # service/solver/worker.py
PARTS = (APP, REQUEST_GROUP, EVENTS_GROUP, GROUPS, SOLVER_WORKER)


class Setting(NamedTuple):
    """One setting: ``read(variable, default)`` reads it from the environment."""

    read: Callable[[str, Any], Any]
    default: Any
    #: The part that reads it (one of :data:`PARTS`), or the parts.
    read_by: str | tuple[str, ...]
    #: What it does, in one line (docs/configuration.md shows it).
    description: str
    #: The environment variable, when it is not named as the setting.
    variable: str | None = None

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.read_by,) if isinstance(self.read_by, str) else self.read_by


PACKAGE = Path(__file__).resolve().parent

#: Every setting, by name (the variable's name but where given).
SETTINGS: dict[str, Setting] = {
    # --- storage ----------------------------------------------------------------------
    "REDIS_URL": Setting(
        env_str, "redis://127.0.0.1:6379/0", APP,
        "the Redis of the games (and of the rate-limit counters; `make run` without it: "
        "its own Redis); `redis+cluster://host:port[,host:port...]`: a Redis Cluster"),
    "REDIS_USERNAME": Setting(
        env_str, None, APP,
        "the Redis ACL user the service logs in as, with `REDIS_PASSWORD_FILE`'s password; "
        "unset: Redis' `default` user"),
    "REDIS_PASSWORD_FILE": Setting(
        env_str, None, APP,
        "a file whose first line is the Redis password (a compose secret, say): added to "
        "`REDIS_URL` as it is read, so that no environment shows it; the URL is never "
        "logged"),
    "REDIS_SOCKET_TIMEOUT": Setting(
        env_float, 1.0, APP,
        "seconds a Redis command may take before the request answers 503 (a dead or hung "
        "Redis never holds a thread longer; a write that waits for its replicas may take "
        "`REDIS_WAIT_TIMEOUT_MS` more)"),
    "REDIS_CONNECT_TIMEOUT": Setting(env_float, 1.0, APP, "seconds to connect to Redis"),
    "BODY_TIMEOUT_SECONDS": Setting(
        env_float, 10.0, APP,
        "under gunicorn, seconds a request body may take to arrive: then 408 "
        "`request_timeout` and the connection closes (`0`: no limit)"),
    "REDIS_WAIT_REPLICAS": Setting(
        env_int, None, APP,
        "replicas that must confirm a write (Redis `WAIT`) before it is acknowledged "
        "(unconfirmed: 503); unset: 1 on a Redis Cluster, 0 on one Redis"),
    "REDIS_WAIT_TIMEOUT_MS": Setting(
        env_int, 2000, APP,
        "milliseconds a write waits for that confirmation (a replica on a busy host can "
        "take over 500 ms; only a shard with no replica in reach waits this long)"),
    "REDIS_HEALTH_CHECK_INTERVAL": Setting(
        env_int, 30, APP, "a pooled connection idle for longer (seconds) is PINGed before use"),
    "GAME_TTL_SECONDS": Setting(
        env_int, 30 * 24 * 60 * 60, APP,
        "idle games expire after this many seconds (30 days); every write restarts the clock"),
    "IDEMPOTENCY_TTL_SECONDS": Setting(
        env_int, 24 * 60 * 60, APP,
        "seconds an `Idempotency-Key` is remembered (24 hours, as openapi.yaml says)"),
    "SECRET_KEY": Setting(
        env_str, None, APP,
        "**required** (`make run` makes one): the server key that seals the stored first "
        "answers of idempotent writes; at least 32 characters, the same for every process "
        "and replica, kept across restarts"),
    "SECRET_KEY_FILE": Setting(
        env_str, None, APP,
        "a file whose first line is `SECRET_KEY` (a compose secret, say), read when "
        "`SECRET_KEY` is unset (`make run` keeps the key it makes there: `var/secret-key`)"),
    "WRITE_RETRIES": Setting(
        env_int, 16, APP,
        "compare-and-set attempts of a write without `If-Match` before 409 `write_conflict`"),
    # The clock only stops a search slowed by an overloaded machine (its answer may then
    # differ); on a machine that keeps up the positions' budget ends it first.
    "HINT_SECONDS": Setting(
        env_float, 0.8, APP,
        "wall-clock seconds a hint's search of sampled deals may take at most (its budget "
        "of positions ends it first on a machine that keeps up)"),

    # --- the events feed as Server-Sent Events -------------------------------------------
    "SSE_HEARTBEAT_SECONDS": Setting(
        env_float, 15.0, APP,
        "seconds between two heartbeat comments of an idle event stream"),
    "SSE_RETRY_MS": Setting(
        env_int, 3000, APP,
        "the `retry:` hint: milliseconds an `EventSource` waits before it reconnects"),
    # The one rule of a process's cap of streams: see stream_cap().
    "SSE_MAX_STREAMS": Setting(
        env_int, None, APP,
        "event streams a process that serves them on its threads (a request process "
        "without an events group, or the app outside gunicorn) holds at most, then 503 "
        "`too_many_streams`; unset: `GUNICORN_THREADS` less a quarter, at least 4 "
        "(48 at 64 threads); the events processes hold `EVENTS_MAX_STREAMS` instead"),
    "SSE_MAX_SECONDS": Setting(
        env_float, 3600.0, APP,
        "a stream ends after this many seconds (the client resumes with `Last-Event-ID`), "
        "so that long-lived connections spread again over processes and replicas"),
    "SSE_BACKLOG": Setting(
        env_int, 256, APP,
        "frames a stream served by a thread may have waiting; past it the stream catches "
        "up from the game's journal once its client reads again"),
    "SSE_BACKLOG_BYTES": Setting(
        env_int, 64 * 1024, APP,
        "bytes an events process keeps for a client that does not read; past it (or a "
        "heartbeat period without room) the connection closes and the client resumes"),

    # --- HTTP ---------------------------------------------------------------------------
    # Off by default, so that a client cannot choose its own rate-limit key.
    "TRUST_PROXY": Setting(
        env_bool, False, APP,
        "behind a reverse proxy you run: take the client address from the last "
        "`X-Forwarded-For` hop"),
    "OPENAPI_PATH": Setting(
        env_str, str(PACKAGE / "openapi.yaml"), APP,
        "the OpenAPI document served at `/v1/openapi.yaml` (read once, when the app is made)"),
    "LOG_LEVEL": Setting(
        env_str, "INFO", APP,
        "the JSON log's level (upper-cased when read; `INFO` logs one line per request)"),
    "LOG_FLUSH_SECONDS": Setting(
        env_float, 0.1, APP,
        "request lines are written in batches, at most this long after their request; any "
        "other line at once, after the batch before it (`0`: each line as its request ends)"),
    "PROMETHEUS_MULTIPROC_DIR": Setting(
        env_str, None, (APP, GROUPS),
        "an empty writable directory where the processes of the gunicorn groups add their "
        "Prometheus metrics up for `/metrics`; unset: each group's arbiter makes one in the "
        "temporary folder when it starts and removes it when it stops"),

    # --- the rate limiter (per client address) -----------------------------------------
    "RATELIMIT_ENABLED": Setting(env_bool, True, APP, "per-client rate limits on or off"),
    # One budget for every route together (the probes excepted: service/api/meta.py).
    "RATELIMIT_APPLICATION": Setting(
        env_str, "1200 per minute", APP,
        "one budget per client address for all routes together "
        "(the `limits` package's notation)", "RATELIMIT_DEFAULT"),
    "RATELIMIT_STORAGE_URI": Setting(
        env_str, None, APP,
        "where the rate-limit counters live (a Redis or Redis Cluster URL, or `memory://`: "
        "each process its own); unset: `REDIS_URL`, so that every process and replica "
        "shares them"),
    "RATELIMIT_STRATEGY": Setting(
        env_str, "fixed-window", APP,
        "the rate limits' strategy: `fixed-window` (the only one the counters keep)"),
    # A client spread over N processes (replicas x processes) gets at most
    # limit + N x (RATELIMIT_SYNC_HITS - 1) requests through in a window.
    "RATELIMIT_SYNC_HITS": Setting(
        env_int, 16, APP,
        "requests of one client a process counts on its own at most before it adds them "
        "to the shared count in Redis (1: every request goes to Redis)"),
    "RATELIMIT_SYNC_SECONDS": Setting(
        env_float, 0.2, APP,
        "and seconds at most since it last did, for a client that keeps sending requests"),

    # --- players: their identities (service/players/oidc.py) ---------------------------
    "OIDC_ISSUER": Setting(
        env_str, None, APP,
        "the operator's OpenID Connect identity provider, exactly as its tokens' `iss` "
        "names it; unset: no bearer token is verified"),
    "OIDC_AUDIENCE": Setting(
        env_str, None, APP,
        "**required** with `OIDC_ISSUER`: the `aud` a token must name (the service's "
        "client id at the identity provider)"),
    "OIDC_JWKS_URL": Setting(
        env_str, None, APP,
        "the identity provider's JSON Web Key Set; unset: the `jwks_uri` of "
        "`<issuer>/.well-known/openid-configuration`, read once"),
    "OIDC_ALGORITHMS": Setting(
        env_str, "RS256,ES256", APP,
        "the signature algorithms a token may use, separated by commas (never the token's "
        "choice; `none` and the shared-secret `HS*` are refused)"),
    "OIDC_LEEWAY_SECONDS": Setting(
        env_int, 30, APP,
        "seconds of difference between the clocks allowed on a token's `exp`, `nbf` and "
        "`iat`"),
    "OIDC_JWKS_CACHE_SECONDS": Setting(
        env_int, 300, APP, "seconds the identity provider's key set is kept"),
    "OIDC_JWKS_REFETCH_SECONDS": Setting(
        env_float, 10.0, APP,
        "a token signed by a key not in the kept set fetches the set again (the keys "
        "rotated) at most once in this many seconds; a failed fetch waits as long"),
    "OIDC_FETCH_TIMEOUT_SECONDS": Setting(
        env_float, 2.0, APP,
        "seconds to connect to the identity provider, and for each read of its answer"),
    "OIDC_MAX_TOKEN_BYTES": Setting(
        env_int, 8 * 1024, APP, "a longer bearer token is refused unread"),

    # --- the solver: winnable deals and analyses (service/solver/features.py) ------------
    "WINNABLE_POOL": Setting(
        env_str, "clock=32,salic-law=32,four-corners=8", APP,
        "proved-winnable seeds the solver's worker keeps in the pool of each variant, "
        "`<variant>=<size>` separated by commas (a variant left out, or 0: no pool)"),
    # The positions end a search, the same search on any machine
    # (`python -m bench solver --positions 50000` measures it).
    "WINNABLE_DEAL_POSITIONS": Setting(
        env_int, 50_000, APP,
        "positions the solver's worker expands at most in one deal while it fills a pool"),
    "WINNABLE_DEAL_SECONDS": Setting(
        env_float, 10.0, APP,
        "seconds of the solver's worker's CPU time that search may take at most (a cap for "
        "a machine slower than 5,000 positions a second)"),
    "WORKER_CPU_SHARE": Setting(
        env_float, 0.02, APP,
        "the solver's worker's CPU share, a fraction of one core (0 < share <= 1): after "
        "each search for a pool it rests until its average is back within it; an analysis "
        "never waits for it.  All its CPU counts, its idle looks at its work too (about "
        "0.001 of a core): a share below that leaves the pools no search"),
    "WINNABLE_SEARCH_SECONDS": Setting(
        env_float, 1.5, APP,
        "seconds a creation with `\"winnable\": true` searches itself when the pool is "
        "empty (then 422 `no_winnable_deal`)"),
    "ANALYSIS_SECONDS": Setting(
        env_float, 10.0, APP,
        "the budget of the analysis of a finished deal, in seconds of the solver's "
        "worker's CPU time"),
    "ANALYSIS_POSITIONS": Setting(
        env_int, 2_000_000, APP, "positions the analysis of a finished deal may expand"),
    "ANALYSIS_INLINE_SECONDS": Setting(
        env_float, 0.5, APP,
        "wall-clock seconds of that analysis the first request tries itself before it "
        "hands the search to the solver's worker (`0`: none)"),

    # --- the daily deal and its boards (service/daily/, docs/daily.md) -------------------
    "DAILY_PERIOD_SECONDS": Setting(
        env_int, 86400, APP,
        "the length of a day of the daily deal (day k spans [k × period + offset, "
        "(k + 1) × period + offset) seconds since 1970, UTC)"),
    "DAILY_OFFSET_SECONDS": Setting(
        env_int, 0, APP, "where the days of the daily deal begin, seconds after midnight UTC"),
    "DAILY_ACCOUNT_RULE": Setting(
        env_str, "before-day", APP,
        "who may play the daily deal ranked: `before-day` (accounts made before the day "
        "began, and identity-provider players) or `any` (any player)"),
    "DAILY_CLOSE_GRACE_SECONDS": Setting(
        env_int, 300, APP,
        "seconds after a day's end before the solver's worker closes it: its ranked games "
        "still in play are abandoned and written to its board"),
    "DAILY_KEEP_DAYS": Setting(
        env_int, 400, APP,
        "days a daily board is kept; the solver's worker deletes older ones (their "
        "games expire with `GAME_TTL_SECONDS`)"),
    "DAILY_BOARD_FORM": Setting(
        env_str, "entries", APP,
        "the form a day's board's entries are written in: `entries` (each in the board "
        "itself: a player's rank read fast) or `players` (the player in the board, the "
        "entry beside it: the form versions before it read; for a rolling upgrade from "
        "one, docs/deployment.md); either reads both"),
    "DAILY_LIVE_TOP": Setting(
        env_int, 10, APP,
        "the top of a day's board whose changes are events of its feed "
        "(`GET /v1/daily/{variant}/{day}/events`)"),

    # --- the solver's worker (service/solver/worker.py) -----------------------------------
    "WORKER_NICE": Setting(
        env_int, 10, SOLVER_WORKER,
        "how much lower the CPU priority of the solver's worker's searches and analyses is "
        "than the API's (`0`: the same); its sweeps and the daily deal's work (a day's "
        "close) run at the API's"),
    "WORKER_HEARTBEAT_FILE": Setting(
        env_str, None, SOLVER_WORKER,
        "a file the solver's worker touches after each turn of its loop that reached Redis "
        "(a health check reads its age); unset: none"),

    # --- the request group (service/runtime/request_group.py) ----------------------------
    "HOST": Setting(env_str, "127.0.0.1", REQUEST_GROUP,
                    "the address the request group listens on"),
    "PORT": Setting(env_int, 8000, REQUEST_GROUP, "the port the request group listens on"),
    # Two per core: a process runs Python one thread at a time, and a request spends much
    # of its time waiting on Redis or the socket (docs/performance.md has the runs).
    "WEB_CONCURRENCY": Setting(
        env_int, 4, REQUEST_GROUP,
        "request processes: two per core (4 on 2 cores; past ~8 cores per Redis, add "
        "Redis capacity rather than processes)"),
    "GUNICORN_WORKER_CLASS": Setting(
        env_str, "service.runtime.request_process.RequestProcess", REQUEST_GROUP,
        "the request processes' gunicorn worker class (the default: gthread that hands "
        "event streams to the events group)"),
    # Threads are cheap (started on demand, mostly waiting on a socket), and a process
    # serving streams itself keeps a quarter of them for moves (SSE_MAX_STREAMS).
    "GUNICORN_THREADS": Setting(
        env_int, 64, (REQUEST_GROUP, APP),
        "threads of a request process (the app reads it for `SSE_MAX_STREAMS`' default)"),
    # A waiting thread costs no CPU, and saves the hand-over to the main loop and back for
    # a client that sends its next request at once (docs/performance.md, "Processes", has the runs).
    "KEEPALIVE_WAIT_SECONDS": Setting(
        env_float, 0.05, REQUEST_GROUP,
        "seconds the thread that answered a kept-alive connection waits for its next "
        "request and reads it itself, while a quarter of the process's threads stay free "
        "(`0`: never)"),
    # Kept-alive connections stay with the process that accepted them: a burst of new
    # ones, left to the kernel, piles onto whichever process is awake (docs/performance.md,
    # "The tail", has the runs).
    "ACCEPT_BALANCE": Setting(
        env_int, 1, REQUEST_GROUP,
        "a request process holding more than this many connections over the fewest "
        "another holds leaves a new connection to the others (for up to 50 ms, 2 ms at a "
        "time); `-1`: every process accepts whenever it can (gunicorn's own)"),
    # A full collection of a process's objects took 30-50 ms of CPU under load, once about
    # every 10 s, with every thread of the process stopped (docs/performance.md).
    "GC_FREEZE": Setting(
        env_bool, True, REQUEST_GROUP,
        "once the app is made, a request process collects and freezes what it holds "
        "(`gc.freeze()`), so that full collections leave the app's own objects alone; "
        "`false`: Python's default"),

    # Which thread of a busy process runs next is a race some requests lose again and
    # again; in turn, the slowest percent of the reads at 32 connections answered in
    # about half the time (docs/performance.md, "The tail").
    "REQUEST_SLOTS": Setting(
        env_int, 1, REQUEST_GROUP,
        "requests a request process runs through the app at once, the others let in first "
        "come, first served; a request with a body goes in without a turn (`0`: no turns, "
        "every thread runs whenever it can)"),
    "REQUEST_SLOT_WAIT_SECONDS": Setting(
        env_float, 0.02, REQUEST_GROUP,
        "seconds a request waits for its turn through the app before it goes in without "
        "one (a turn held that long waits on Redis rather than works)"),

    # --- both gunicorn groups (service/runtime/shared.py) --------------------------------
    "GUNICORN_TIMEOUT": Setting(
        env_int, 30, GROUPS,
        "seconds a silent process lives before its arbiter restarts it (gunicorn's "
        "`timeout`)"),
    "GUNICORN_GRACEFUL_TIMEOUT": Setting(
        env_int, 30, GROUPS,
        "seconds a process has to finish after a graceful stop (gunicorn's "
        "`graceful_timeout`)"),
    "GUNICORN_KEEPALIVE": Setting(
        env_int, 5, GROUPS,
        "seconds an idle kept-alive connection stays open (gunicorn's `keepalive`)"),
    "GUNICORN_LOG_LEVEL": Setting(
        env_str, "info", GROUPS,
        "gunicorn's own log level, on stderr (the app writes its own request log)"),
    "EVENTS_HANDOFF_SOCKET": Setting(
        env_str, None, GROUPS,
        "the Unix socket through which the request processes hand event streams to the "
        "events group (`make run` sets it); unset: the request processes serve streams "
        "themselves"),

    # --- the events group (service/runtime/events_group.py) ------------------------------
    "EVENTS_BIND": Setting(
        env_str, "127.0.0.1:8001", EVENTS_GROUP,
        "the events group's own address (a load balancer may route the events path there; "
        "`make run`: a Unix socket)"),
    # One holds ten thousand idle streams on one core; each holds one Redis subscription.
    "EVENTS_WORKERS": Setting(
        env_int, 1, EVENTS_GROUP,
        "events processes (more of them spread the frames' writing over more cores)"),
    "EVENTS_MAX_STREAMS": Setting(
        env_int, None, EVENTS_GROUP,
        "event streams an events process holds at most, then 503 `too_many_streams`; "
        "unset: 16384; lowered to what the open-file limit allows less 256"),
}

#: The settings that no environment variable changes.
FIXED: dict[str, Any] = {
    #: A body over 16 KiB is refused with 413 (also a chunked one).
    "MAX_CONTENT_LENGTH": 16 * 1024,
    "RATELIMIT_KEY_PREFIX": "ratelimit",
    "RATELIMIT_HEADER_LIMIT": "RateLimit-Limit",
    "RATELIMIT_HEADER_REMAINING": "RateLimit-Remaining",
    "RATELIMIT_HEADER_RESET": "RateLimit-Reset",
}


def variable(name: str) -> str:
    """The environment variable of the setting ``name``."""
    return SETTINGS[name].variable or name


def _read(part: str) -> dict[str, Any]:
    """Every setting that ``part`` reads, from the environment now."""
    if part not in PARTS:
        raise ValueError(f"no part of the service is called {part!r}")
    return {name: setting.read(variable(name), setting.default)
            for name, setting in SETTINGS.items() if part in setting.parts}


def idle_reserve(threads: int) -> int:
    """Threads of a request process of ``threads`` that never wait on a kept-alive
    connection nor hold a stream (a quarter, at least 4): they stay free for new
    connections and for moves."""
    return max(4, threads // 4)


def stream_cap(max_streams: int | None, threads: int) -> int:
    """SSE_MAX_STREAMS' one rule: the streams a process that serves them on its threads
    holds at most: ``max_streams`` when set, else its ``threads`` less
    :func:`idle_reserve` (at least 1)."""
    if max_streams is not None:
        return max_streams
    return max(1, threads - idle_reserve(threads))


def read_secret(path: str, name: str) -> str:
    """The first line of the file ``path`` named by the setting ``name`` (a secret
    mounted as a file); ``ValueError`` names the setting, never the secret."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as error:
        raise ValueError(f"{name}: cannot read {path} ({error.strerror})") from None
    if not lines or not lines[0].strip():
        raise ValueError(f"{name}: {path} is empty")
    return lines[0].strip()


def with_credentials(url: str, username: str | None, password: str) -> str:
    """``url`` (``redis://``, ``rediss://`` or ``redis+cluster://``) logging in as
    ``username`` (None: the default user) with ``password`` (any credentials it named
    are replaced)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        raise ValueError(f"REDIS_URL is not a URL: {scheme[:20]!r}...")
    location, slash, path = rest.partition("/")
    location = location.rsplit("@", 1)[-1]
    userinfo = f"{quote(username or '', safe='')}:{quote(password, safe='')}"
    return f"{scheme}://{userinfo}@{location}{slash}{path}"


def read_config() -> dict[str, Any]:
    """The app's settings (:data:`APP`), read from the environment now, with
    :data:`FIXED` (``ValueError`` names a bad one); the secrets of ``SECRET_KEY_FILE``
    and ``REDIS_PASSWORD_FILE`` read from their files."""
    config = _read(APP)
    if not config["SECRET_KEY"] and config["SECRET_KEY_FILE"]:
        config["SECRET_KEY"] = read_secret(config["SECRET_KEY_FILE"], "SECRET_KEY_FILE")
    if config["REDIS_PASSWORD_FILE"]:
        password = read_secret(config["REDIS_PASSWORD_FILE"], "REDIS_PASSWORD_FILE")
        config["REDIS_URL"] = with_credentials(config["REDIS_URL"], config["REDIS_USERNAME"],
                                               password)
    config["LOG_LEVEL"] = config["LOG_LEVEL"].upper()
    config["SSE_MAX_STREAMS"] = stream_cap(config["SSE_MAX_STREAMS"],
                                           config["GUNICORN_THREADS"])
    return config | FIXED


def process_settings(part: str) -> dict[str, Any]:
    """The settings of ``part`` (:data:`REQUEST_GROUP`, :data:`EVENTS_GROUP`,
    :data:`GROUPS` or :data:`SOLVER_WORKER`), read from the environment now; each part
    calls it once, when it starts (``ValueError`` names a bad one)."""
    return _read(part)


def prepare_process_environment(settings: dict[str, Any]) -> str | None:
    """What a gunicorn group's arbiter passes on to its processes through the environment,
    once, before it starts any of them (``settings``: :data:`GROUPS`' settings, as read
    when the group started).

    Prometheus metrics summed over the processes of a group need one directory shared by
    them, named in ``PROMETHEUS_MULTIPROC_DIR`` before any of them imports
    prometheus-client, which reads that variable itself.  Unless one is given, this makes
    an empty one, names it in ``settings`` and in this process's environment, which the
    processes inherit (their app reads it from there too).  The one write to the
    environment; a second call keeps the directory.  The directory it made (None: one
    was given, or made by an earlier call), for its maker to remove when it exits."""
    if settings["PROMETHEUS_MULTIPROC_DIR"]:
        return None
    made = tempfile.mkdtemp(prefix="patience-metrics-")
    settings["PROMETHEUS_MULTIPROC_DIR"] = made
    os.environ[variable("PROMETHEUS_MULTIPROC_DIR")] = made
    return made


def shown_default(setting: Setting) -> str:
    """The default as docs/configuration.md shows it: ``unset`` for None, ``true`` or
    ``false``, a number as written, a path inside the package from the repository."""
    default = setting.default
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, str) and default.startswith(f"{PACKAGE}{os.sep}"):
        return str(Path(default).relative_to(PACKAGE.parent))
    return str(default)


def markdown_table() -> str:
    """The table of docs/configuration.md: variable, default, what it does, read by."""
    rows = ["| variable | default | what it does | read by |", "|---|---|---|---|"]
    for name, setting in SETTINGS.items():
        default = shown_default(setting)
        default = default if setting.default is None else f"`{default}`"
        rows.append(f"| `{variable(name)}` | {default} | {setting.description} | "
                    f"{', '.join(setting.parts)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
