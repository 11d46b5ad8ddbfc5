"""Configuration: every setting of the app, the environment variable it comes from and its
default, in one place.

Importing this module reads nothing: :func:`read_config` reads the environment when it is
called, which ``create_app()`` does once, so a bad setting (``ValueError``, naming the
variable) surfaces where the app is made.  ``create_app(test_config)`` overrides any
setting for tests.  docs/configuration.md lists the environment variables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from service.env import env_bool, env_float, env_int, env_str


class Setting(NamedTuple):
    """One setting read from the environment: ``read(variable, default)``."""

    read: Callable[[str, Any], Any]
    default: Any
    #: The environment variable, when it is not named as the setting.
    variable: str | None = None


#: The settings read from the environment, by name (the variable's name but where given).
SETTINGS: dict[str, Setting] = {
    # --- storage ----------------------------------------------------------------------
    "REDIS_URL": Setting(env_str, "redis://127.0.0.1:6379/0"),
    #: Seconds a Redis command (connect, or read/write) may take before the request
    #: answers 503: a dead or hung Redis never holds a worker longer than this.
    "REDIS_SOCKET_TIMEOUT": Setting(env_float, 1.0),
    "REDIS_CONNECT_TIMEOUT": Setting(env_float, 1.0),
    #: Seconds a request body may take to arrive, under gunicorn: past it the request
    #: answers 408 and the connection closes, so a client that sends less than its
    #: Content-Length holds a gunicorn thread this long at most (0: no limit).
    "BODY_TIMEOUT_SECONDS": Setting(env_float, 10.0),
    #: Replicas that must confirm a write (Redis WAIT) before it is acknowledged; when
    #: they do not within REDIS_WAIT_TIMEOUT_MS the write answers 503.  Default: 1 on a
    #: Redis Cluster (REDIS_URL=redis+cluster://...), 0 on one Redis.
    "REDIS_WAIT_REPLICAS": Setting(env_int, None),
    "REDIS_WAIT_TIMEOUT_MS": Setting(env_int, 500),
    #: A pooled connection idle for longer than this is PINGed before use.
    "REDIS_HEALTH_CHECK_INTERVAL": Setting(env_int, 30),
    #: Idle games expire after this many seconds; every write starts the clock again.
    "GAME_TTL_SECONDS": Setting(env_int, 30 * 24 * 60 * 60),
    #: How long an Idempotency-Key is remembered (24 hours, as openapi.yaml says).
    "IDEMPOTENCY_TTL_SECONDS": Setting(env_int, 24 * 60 * 60),
    #: The server key that seals the stored first answers of idempotent writes (at least 32
    #: characters, the same for every worker and replica); required outside tests.
    "SECRET_KEY": Setting(env_str, None),
    #: Compare-and-set attempts of a write without If-Match before 409 write_conflict.
    "WRITE_RETRIES": Setting(env_int, 16),
    #: Wall-clock seconds a hint's search of sampled deals may take at most.  Its budget
    #: of positions ends it first on a machine that keeps up, and then the same position
    #: always gets the same hint; the clock only stops a search slowed by an overloaded
    #: machine (its answer may then differ).
    "HINT_SECONDS": Setting(env_float, 0.8),

    # --- the events feed as Server-Sent Events -------------------------------------------
    #: Seconds between two heartbeat comments of an idle stream (proxies keep it open, and
    #: the server notices a client that left).
    "SSE_HEARTBEAT_SECONDS": Setting(env_float, 15.0),
    #: The ``retry:`` hint: milliseconds an EventSource waits before it reconnects.
    "SSE_RETRY_MS": Setting(env_int, 3000),
    #: Streams one process holds open at most; past it a stream request answers 503
    #: ``too_many_streams``.  Under gunicorn each group gives its processes their own cap
    #: (service/runtime/): the request group this setting too, by default below its
    #: thread count (GUNICORN_THREADS); the events group EVENTS_MAX_STREAMS.
    "SSE_MAX_STREAMS": Setting(env_int, 100),
    #: A stream ends after this many seconds (the client resumes with Last-Event-ID), so
    #: that long-lived connections spread again over workers and replicas.
    "SSE_MAX_SECONDS": Setting(env_float, 3600.0),
    #: Frames a stream served by a thread may have waiting to be sent; past it the stream
    #: drops them and catches up from the game's journal once its client reads again.
    "SSE_BACKLOG": Setting(env_int, 256),
    #: Bytes an events worker keeps for a stream whose client does not read (what its
    #: socket does not take); past it, or after a heartbeat period, the connection is
    #: closed and the client resumes with Last-Event-ID.
    "SSE_BACKLOG_BYTES": Setting(env_int, 64 * 1024),

    # --- HTTP ---------------------------------------------------------------------------
    #: Behind a reverse proxy: take the client address from the last X-Forwarded-For hop.
    #: Off by default, so a client cannot choose its own rate-limit key.
    "TRUST_PROXY": Setting(env_bool, False),
    #: The OpenAPI document served at /v1/openapi.yaml (read once, at app creation).
    "OPENAPI_PATH": Setting(env_str, str(Path(__file__).resolve().parent / "openapi.yaml")),
    #: The JSON log's level (upper-cased when read).
    "LOG_LEVEL": Setting(env_str, "INFO"),
    #: Request lines are written in batches, at most this long after their request (one
    #: write a batch, not one a request); 0: each line as its request ends.  Any other
    #: line (a warning, an error) is written at once, after the batch before it.
    "LOG_FLUSH_SECONDS": Setting(env_float, 0.1),
    #: Set (by the process manager) when several gunicorn workers share Prometheus metrics.
    "PROMETHEUS_MULTIPROC_DIR": Setting(env_str, None),

    # --- Flask-Limiter settings (per client address) -----------------------------------
    "RATELIMIT_ENABLED": Setting(env_bool, True),
    #: One budget per client address for all routes together (flask-limiter's
    #: "application" limit; its per-route RATELIMIT_DEFAULT is left unset on purpose).
    "RATELIMIT_APPLICATION": Setting(env_str, "1200 per minute", "RATELIMIT_DEFAULT"),
    #: Where the counters live; unset: REDIS_URL, so every worker and replica shares them.
    "RATELIMIT_STORAGE_URI": Setting(env_str, None),
    "RATELIMIT_STRATEGY": Setting(env_str, "fixed-window"),

    # --- the solver: winnable deals and analyses (service/solver/features.py) ------------
    #: Proved-winnable seeds the worker keeps in the pool of each variant,
    #: ``<variant>=<size>`` separated by commas (a variant left out has no pool).
    "WINNABLE_POOL": Setting(env_str, "clock=32,salic-law=32,four-corners=8"),
    #: Positions, and seconds of the worker's CPU time, the worker's solver gives one
    #: deal while it fills a pool.  The positions end a search (the same search on any
    #: machine: `python -m bench solver --positions 50000` measures it); the seconds only
    #: stop one on a machine slower than 5,000 positions a second.
    "WINNABLE_DEAL_POSITIONS": Setting(env_int, 50_000),
    "WINNABLE_DEAL_SECONDS": Setting(env_float, 10.0),
    #: The solver's worker's CPU share: the CPU time it may use on average, as a fraction
    #: of one core (0 < share <= 1).  After a search for a pool it rests until its CPU
    #: time is back within the share; an analysis, which a user waits for, never waits
    #: for it (service/solver/worker.py).
    "WORKER_CPU_SHARE": Setting(env_float, 0.02),
    #: Seconds a creation with "winnable" searches itself when the pool is empty (then
    #: 422 no_winnable_deal).
    "WINNABLE_SEARCH_SECONDS": Setting(env_float, 1.5),
    #: The analysis of a finished deal: the worker's budget (seconds of its CPU time), and
    #: the part of it that the first request tries itself (wall-clock seconds) before it
    #: hands the search to the worker (0: none).
    "ANALYSIS_SECONDS": Setting(env_float, 10.0),
    "ANALYSIS_POSITIONS": Setting(env_int, 2_000_000),
    "ANALYSIS_INLINE_SECONDS": Setting(env_float, 0.5),
}

#: The settings that no environment variable changes.
FIXED: dict[str, Any] = {
    #: A body over 16 KiB is refused with 413 (also a chunked one).
    "MAX_CONTENT_LENGTH": 16 * 1024,
    "RATELIMIT_KEY_PREFIX": "ratelimit",
    "RATELIMIT_HEADERS_ENABLED": True,
    "RATELIMIT_HEADER_LIMIT": "RateLimit-Limit",
    "RATELIMIT_HEADER_REMAINING": "RateLimit-Remaining",
    "RATELIMIT_HEADER_RESET": "RateLimit-Reset",
    # Fail open: when the limiter's Redis is unreachable the request goes on unlimited
    # (and, if it needs storage, answers 503 from the game store) instead of failing.
    "RATELIMIT_SWALLOW_ERRORS": True,
}


def read_config() -> dict[str, Any]:
    """Every setting, read from the environment now (``ValueError`` names a bad one)."""
    config = {name: setting.read(setting.variable or name, setting.default)
              for name, setting in SETTINGS.items()}
    config["LOG_LEVEL"] = config["LOG_LEVEL"].upper()
    return config | FIXED
