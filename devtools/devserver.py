"""Development server: ``python -m devtools.devserver`` (what ``make run`` runs).

Without ``REDIS_URL`` it starts its own Redis (append-only, files in ``$REDIS_DATA_DIR``,
default ``var/redis``, on ``$REDIS_PORT`` or a free port) and hands its URL to the app.
Without ``SECRET_KEY`` it uses the one kept in ``$SECRET_KEY_FILE`` (default
``var/secret-key``; generated on the first run, readable by its owner only), so
idempotent retries survive a restart.  Then it starts the solver's worker
(:func:`devtools.launch.start_worker`: the pools of winnable deals, the analyses; stopped
after the groups) and runs the two gunicorn groups of the same app
(:func:`devtools.launch.start_gunicorn`): the events group
(:mod:`service.runtime.events_group`, gevent processes holding the Server-Sent Events
streams) and the request group (:mod:`service.runtime.request_group`, gthread
processes) on ``127.0.0.1:$PORT`` (default 8000), which hands every events stream to the
events group over a Unix socket (:mod:`service.runtime.handoff`): one address for
clients.  It raises its open-file limit to the hard limit first (each stream holds a
connection), forwards SIGINT / SIGTERM / SIGHUP to both groups, waits for them to exit
(if one exits, it stops the other) and stops Redis last.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devtools.launch import ROOT, new_secret_key, start_gunicorn, start_worker, stop_gunicorn
from devtools.redis_server import RedisServer, RedisServerError
from service.config import env_int

HOST = "127.0.0.1"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def log(message: str) -> None:
    print(f"devserver: {message}", file=sys.stderr, flush=True)


def _int_env(name: str, default: int | None) -> int | None:
    try:
        return env_int(name, default)
    except ValueError as error:
        raise SystemExit(f"devserver: {error}") from None


def secret_key(path: Path) -> str:
    """The development server's ``SECRET_KEY``: the one in ``path``, made on first use."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = new_secret_key()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(key + "\n")
    return key


def raise_open_files() -> int:
    """Raise this process's soft limit of open files to its hard limit (the gunicorn
    groups inherit it): an events stream holds a connection, a file descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            log(f"could not raise the open-file limit from {soft}: {error}")
    return soft


def main() -> int:
    port = _int_env("PORT", 8000)
    env = dict(os.environ, HOST=HOST, PORT=str(port))
    if not env.get("SECRET_KEY"):
        key_file = Path(os.environ.get("SECRET_KEY_FILE") or ROOT / "var" / "secret-key")
        env["SECRET_KEY"] = secret_key(key_file)
        log(f"SECRET_KEY from {key_file}")
    received: list[int] = []
    groups: list[subprocess.Popen[bytes]] = []
    worker: subprocess.Popen[bytes] | None = None
    redis_server: RedisServer | None = None
    run_dir = Path(tempfile.mkdtemp(prefix="patience-run-"))

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        for group in groups:
            if group.poll() is None:
                # SIGHUP would make gunicorn reload; a closed terminal means stop.
                group.send_signal(signal.SIGTERM if signum == signal.SIGHUP else signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, forward)

    try:
        log(f"open-file limit {raise_open_files()}")
        if not os.environ.get("REDIS_URL"):
            data_dir = Path(os.environ.get("REDIS_DATA_DIR") or ROOT / "var" / "redis")
            try:
                # Every write on disk before it is answered, as in docker-compose.yml:
                # with everysec a crash of this Redis could lose acknowledged moves.
                redis_server = RedisServer(
                    data_dir, _int_env("REDIS_PORT", None), appendonly=True,
                    appendfsync="always",
                ).start()
            except RedisServerError as error:
                log(str(error))
                return 1
            env["REDIS_URL"] = redis_server.url
            log(
                f"redis-server pid {redis_server.pid} at {redis_server.url} "
                f"({redis_server.binary}, data in {data_dir}, log {redis_server.log_path})"
            )
        else:
            log("REDIS_URL is set: using that Redis")
        if received:
            return 0

        worker = start_worker(env)
        log(f"worker pid {worker.pid} (winnable deals, analyses)")
        handoff = run_dir / "events.sock"
        env["EVENTS_HANDOFF_SOCKET"] = str(handoff)
        env.setdefault("EVENTS_BIND", f"unix:{run_dir / 'events-http.sock'}")
        # Both groups add their metrics up in one place.
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(run_dir / "metrics"))
        os.makedirs(env["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
        events = start_gunicorn(env, events=True)
        groups.append(events)
        log(f"gunicorn events group pid {events.pid} ({env['EVENTS_BIND']}, streams handed "
            f"over at {handoff})")
        _wait_for_path(handoff, events)
        if not received:
            requests = start_gunicorn(env)
            groups.append(requests)
            log(f"gunicorn pid {requests.pid} serving http://{HOST}:{port}")
        if received:
            forward(received[-1], None)
        return _wait(groups, redis_server, received)
    finally:
        for group in groups:
            if group.poll() is None:
                group.terminate()
        for group in groups:
            try:
                group.wait(40)
            except subprocess.TimeoutExpired:
                group.kill()
                group.wait()
        if worker is not None:
            stop_gunicorn(worker, 10)
        if redis_server is not None:
            redis_server.stop()
            log("redis-server stopped")
        shutil.rmtree(run_dir, ignore_errors=True)


def _wait_for_path(path: Path, group: subprocess.Popen[bytes], seconds: float = 15.0) -> None:
    """Until the events group listens for hand-offs (a stream asked for before is served
    by the request group itself)."""
    deadline = time.monotonic() + seconds
    while not path.exists() and group.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def _wait(groups: list[subprocess.Popen[bytes]], redis_server: RedisServer | None,
          received: list[int]) -> int:
    while True:
        for group in groups:
            code = group.poll()
            if code is not None:
                log(f"gunicorn pid {group.pid} exited with status {code}")
                if not received:
                    received.append(signal.SIGTERM)
                for other in groups:
                    if other.poll() is None:
                        other.terminate()
                        other.wait()
                if code < 0:
                    return 128 - code
                return code
        if redis_server is not None and not redis_server.running and not received:
            log(
                f"redis-server exited unexpectedly (status {redis_server.returncode}, "
                f"see {redis_server.log_path}); stopping gunicorn"
            )
            received.append(signal.SIGTERM)
            for group in groups:
                group.terminate()
                group.wait()
            return 1
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
