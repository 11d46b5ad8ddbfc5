"""Development server: ``python -m service.devserver`` (what ``make run`` runs).

Without ``REDIS_URL`` it starts its own Redis (append-only, files in ``$REDIS_DATA_DIR``,
default ``var/redis``, on ``$REDIS_PORT`` or a free port) and hands its URL to the app.
Without ``SECRET_KEY`` it uses the one kept in ``$SECRET_KEY_FILE`` (default
``var/secret-key``; generated on the first run, readable by its owner only), so
idempotent retries survive a restart.  Then
it runs gunicorn (:func:`service.launch.start_gunicorn`) on ``127.0.0.1:$PORT``
(default 8000), forwards SIGINT / SIGTERM / SIGHUP to it, waits for it to exit and stops
Redis last.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from service.env import env_int
from service.launch import ROOT, new_secret_key, start_gunicorn
from service.redis_server import RedisServer, RedisServerError

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


def main() -> int:
    port = _int_env("PORT", 8000)
    env = dict(os.environ, HOST=HOST, PORT=str(port))
    if not env.get("SECRET_KEY"):
        key_file = Path(os.environ.get("SECRET_KEY_FILE") or ROOT / "var" / "secret-key")
        env["SECRET_KEY"] = secret_key(key_file)
        log(f"SECRET_KEY from {key_file}")
    received: list[int] = []
    gunicorn: subprocess.Popen[bytes] | None = None
    redis_server: RedisServer | None = None

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        if gunicorn is not None and gunicorn.poll() is None:
            # SIGHUP would make gunicorn reload; a closed terminal means stop.
            gunicorn.send_signal(signal.SIGTERM if signum == signal.SIGHUP else signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, forward)

    try:
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

        gunicorn = start_gunicorn(env)
        log(f"gunicorn pid {gunicorn.pid} serving http://{HOST}:{port}")
        if received:
            forward(received[-1], None)
        return _wait(gunicorn, redis_server, received)
    finally:
        if gunicorn is not None and gunicorn.poll() is None:
            gunicorn.terminate()
            try:
                gunicorn.wait(40)
            except subprocess.TimeoutExpired:
                gunicorn.kill()
                gunicorn.wait()
        if redis_server is not None:
            redis_server.stop()
            log("redis-server stopped")


def _wait(
    gunicorn: subprocess.Popen[bytes], redis_server: RedisServer | None, received: list[int]
) -> int:
    while True:
        try:
            code = gunicorn.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            if redis_server is not None and not redis_server.running and not received:
                log(
                    f"redis-server exited unexpectedly (status {redis_server.returncode}, "
                    f"see {redis_server.log_path}); stopping gunicorn"
                )
                received.append(signal.SIGTERM)
                gunicorn.terminate()
                gunicorn.wait()
                return 1
            continue
        log(f"gunicorn exited with status {code}")
        if code < 0:
            return 128 - code
        return code


if __name__ == "__main__":
    sys.exit(main())
