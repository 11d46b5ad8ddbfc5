"""Configuration, read from the environment in one place.

Every setting is an attribute of :class:`Config`; ``create_app(test_config)`` overrides
any of them for tests.  The README's configuration table lists the environment variables.
"""

import os
from pathlib import Path

from service.env import env_bool, env_float, env_int


class Config:
    # --- storage ----------------------------------------------------------------------
    REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    #: Seconds a Redis command (connect, or read/write) may take before the request
    #: answers 503: a dead or hung Redis never holds a worker longer than this.
    REDIS_SOCKET_TIMEOUT = env_float("REDIS_SOCKET_TIMEOUT", 1.0)
    REDIS_CONNECT_TIMEOUT = env_float("REDIS_CONNECT_TIMEOUT", 1.0)
    #: Seconds a request body may take to arrive, under gunicorn: past it the request
    #: answers 408 and the connection closes, so a client that sends less than its
    #: Content-Length holds a gunicorn thread this long at most (0: no limit).
    BODY_TIMEOUT_SECONDS = env_float("BODY_TIMEOUT_SECONDS", 10.0)
    #: Replicas that must confirm a write (Redis WAIT) before it is acknowledged; when
    #: they do not within REDIS_WAIT_TIMEOUT_MS the write answers 503.  Default: 1 on a
    #: Redis Cluster (REDIS_URL=redis+cluster://...), 0 on one Redis.
    REDIS_WAIT_REPLICAS = env_int("REDIS_WAIT_REPLICAS", None)
    REDIS_WAIT_TIMEOUT_MS = env_int("REDIS_WAIT_TIMEOUT_MS", 500)
    #: A pooled connection idle for longer than this is PINGed before use.
    REDIS_HEALTH_CHECK_INTERVAL = env_int("REDIS_HEALTH_CHECK_INTERVAL", 30)
    #: Idle games expire after this many seconds; every write starts the clock again.
    GAME_TTL_SECONDS = env_int("GAME_TTL_SECONDS", 30 * 24 * 60 * 60)
    #: How long an Idempotency-Key is remembered (24 hours, as openapi.yaml says).
    IDEMPOTENCY_TTL_SECONDS = env_int("IDEMPOTENCY_TTL_SECONDS", 24 * 60 * 60)
    #: The server key that seals the stored first answers of idempotent writes (at least 32
    #: characters, the same for every worker and replica); required outside tests.
    SECRET_KEY = os.environ.get("SECRET_KEY") or None
    #: Compare-and-set attempts of a write without If-Match before 409 write_conflict.
    WRITE_RETRIES = env_int("WRITE_RETRIES", 16)
    #: Wall-clock seconds a hint's search of sampled deals may take at most.  Its budget
    #: of positions ends it first on a machine that keeps up, and then the same position
    #: always gets the same hint; the clock only stops a search slowed by an overloaded
    #: machine (its answer may then differ).
    HINT_SECONDS = env_float("HINT_SECONDS", 0.8)

    # --- the events feed as Server-Sent Events ---------------------------------------------
    #: Seconds between two heartbeat comments of an idle stream (proxies keep it open, and
    #: the server notices a client that left).
    SSE_HEARTBEAT_SECONDS = env_float("SSE_HEARTBEAT_SECONDS", 15.0)
    #: The ``retry:`` hint: milliseconds an EventSource waits before it reconnects.
    SSE_RETRY_MS = env_int("SSE_RETRY_MS", 3000)
    #: Streams one process holds open at most; past it a stream request answers 503
    #: ``too_many_streams``.  Under gunicorn each group gives its processes their own cap
    #: (service/runtime/): the request group this setting too, by default below its
    #: thread count (GUNICORN_THREADS); the events group EVENTS_MAX_STREAMS.
    SSE_MAX_STREAMS = env_int("SSE_MAX_STREAMS", 100)
    #: A stream ends after this many seconds (the client resumes with Last-Event-ID), so
    #: that long-lived connections spread again over workers and replicas.
    SSE_MAX_SECONDS = env_float("SSE_MAX_SECONDS", 3600.0)
    #: Frames a stream served by a thread may have waiting to be sent; past it the stream
    #: drops them and catches up from the game's journal once its client reads again.
    SSE_BACKLOG = env_int("SSE_BACKLOG", 256)
    #: Bytes an events worker keeps for a stream whose client does not read (what its
    #: socket does not take); past it, or after a heartbeat period, the connection is
    #: closed and the client resumes with Last-Event-ID.
    SSE_BACKLOG_BYTES = env_int("SSE_BACKLOG_BYTES", 64 * 1024)

    # --- HTTP ---------------------------------------------------------------------------
    #: A body over 16 KiB is refused with 413 (also a chunked one).
    MAX_CONTENT_LENGTH = 16 * 1024
    #: Behind a reverse proxy: take the client address from the last X-Forwarded-For hop.
    #: Off by default, so a client cannot choose its own rate-limit key.
    TRUST_PROXY = env_bool("TRUST_PROXY", False)
    #: The OpenAPI document served at /v1/openapi.yaml (read once, at app creation).
    OPENAPI_PATH = os.environ.get("OPENAPI_PATH") or str(
        Path(__file__).resolve().parent / "openapi.yaml"
    )
    LOG_LEVEL = (os.environ.get("LOG_LEVEL") or "INFO").upper()
    #: Set (by the process manager) when several gunicorn workers share Prometheus metrics.
    PROMETHEUS_MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None

    # --- Flask-Limiter settings (per client address) -----------------------------------
    RATELIMIT_ENABLED = env_bool("RATELIMIT_ENABLED", True)
    #: One budget per client address for all routes together (flask-limiter's
    #: "application" limit; its per-route RATELIMIT_DEFAULT is left unset on purpose).
    #: Environment variable: RATELIMIT_DEFAULT.
    RATELIMIT_APPLICATION = os.environ.get("RATELIMIT_DEFAULT") or "1200 per minute"
    #: Where the counters live; unset: REDIS_URL, so every worker and replica shares them.
    RATELIMIT_STORAGE_URI = os.environ.get("RATELIMIT_STORAGE_URI") or None
    RATELIMIT_STRATEGY = os.environ.get("RATELIMIT_STRATEGY") or "fixed-window"
    RATELIMIT_KEY_PREFIX = "ratelimit"
    RATELIMIT_HEADERS_ENABLED = True
    RATELIMIT_HEADER_LIMIT = "RateLimit-Limit"
    RATELIMIT_HEADER_REMAINING = "RateLimit-Remaining"
    RATELIMIT_HEADER_RESET = "RateLimit-Reset"
    # Fail open: when the limiter's Redis is unreachable the request goes on unlimited
    # (and, if it needs storage, answers 503 from the game store) instead of failing.
    RATELIMIT_SWALLOW_ERRORS = True

    # --- the solver: winnable deals and analyses (service/solver/features.py) -------------------
    #: Proved-winnable seeds the worker keeps in the pool of each variant,
    #: ``<variant>=<size>`` separated by commas (a variant left out has no pool).
    WINNABLE_POOL = (os.environ.get("WINNABLE_POOL")
                     or "clock=32,salic-law=32,four-corners=8")
    #: Positions, and seconds of the worker's CPU time, the worker's solver gives one
    #: deal while it fills a pool.  The positions end a search (the same search on any
    #: machine: `python -m bench solver --positions 50000` measures it); the seconds only
    #: stop one on a machine slower than 5,000 positions a second.
    WINNABLE_DEAL_POSITIONS = env_int("WINNABLE_DEAL_POSITIONS", 50_000)
    WINNABLE_DEAL_SECONDS = env_float("WINNABLE_DEAL_SECONDS", 10.0)
    #: The solver's worker's CPU share: the CPU time it may use on average, as a fraction
    #: of one core (0 < share <= 1).  After a search for a pool it rests until its CPU
    #: time is back within the share; an analysis, which a user waits for, never waits
    #: for it (service/solver/worker.py).
    WORKER_CPU_SHARE = env_float("WORKER_CPU_SHARE", 0.02)
    #: Seconds a creation with "winnable" searches itself when the pool is empty (then
    #: 422 no_winnable_deal).
    WINNABLE_SEARCH_SECONDS = env_float("WINNABLE_SEARCH_SECONDS", 1.5)
    #: The analysis of a finished deal: the worker's budget (seconds of its CPU time), and
    #: the part of it that the first request tries itself (wall-clock seconds) before it
    #: hands the search to the worker (0: none).
    ANALYSIS_SECONDS = env_float("ANALYSIS_SECONDS", 10.0)
    ANALYSIS_POSITIONS = env_int("ANALYSIS_POSITIONS", 2_000_000)
    ANALYSIS_INLINE_SECONDS = env_float("ANALYSIS_INLINE_SECONDS", 0.5)
