"""Development server: ``python -m service.devserver`` (what ``make run`` runs).

Without ``REDIS_URL`` it starts its own Redis (append-only, files in ``$REDIS_DATA_DIR``,
default ``var/redis``, on ``$REDIS_PORT`` or a free port) and hands its URL to the app.
Then it runs the two gunicorn groups of the same app: the events group
(``gunicorn.events.conf.py``, gevent workers holding the Server-Sent Events streams) and
the request group (``gunicorn.conf.py``, gthread workers) on ``127.0.0.1:$PORT`` (default
8000), which hands every events stream to the events group over a Unix socket
(:mod:`service.handoff`): one address for clients.  It raises its open-file limit to the
hard limit first (each stream holds a connection), forwards SIGINT / SIGTERM / SIGHUP to
both groups, waits for them to exit (if one exits, it stops the other) and stops Redis
last.
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

from service.config import env_int
from service.redis_server import RedisServer, RedisServerError, die_with_parent

# The one gunicorn command line; the Dockerfile and docker-compose.yml run the same one
# (tests/test_compose.py checks it).
GUNICORN_COMMAND = ("gunicorn", "-c", "gunicorn.conf.py", "service.app:create_app()")
#: The events worker group's command line (the same app).
EVENTS_COMMAND = ("gunicorn", "-c", "gunicorn.events.conf.py", "service.app:create_app()")

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def log(message: str) -> None:
    print(f"devserver: {message}", file=sys.stderr, flush=True)


def _int_env(name: str, default: int | None) -> int | None:
    try:
        return env_int(name, default)
    except ValueError as error:
        raise SystemExit(f"devserver: {error}") from None


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
    received: list[int] = []
    groups: list[subprocess.Popen[bytes]] = []
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
                redis_server = RedisServer(
                    data_dir, _int_env("REDIS_PORT", None), appendonly=True
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

        handoff = run_dir / "events.sock"
        env["EVENTS_HANDOFF_SOCKET"] = str(handoff)
        env.setdefault("EVENTS_BIND", f"unix:{run_dir / 'events-http.sock'}")
        # Both groups add their metrics up in one place.
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(run_dir / "metrics"))
        os.makedirs(env["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
        for command, what in ((EVENTS_COMMAND, "events group"), (GUNICORN_COMMAND, None)):
            group = subprocess.Popen(
                [sys.executable, "-m", *command],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # signals reach it once, through us
                preexec_fn=die_with_parent(),
            )
            groups.append(group)
            if what:
                log(f"gunicorn {what} pid {group.pid} ({env['EVENTS_BIND']}, streams handed "
                    f"over at {handoff})")
                _wait_for_path(handoff, group)
            else:
                log(f"gunicorn pid {group.pid} serving http://{HOST}:{port}")
            if received:
                forward(received[-1], None)
                break
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
