"""The one way this project starts gunicorn: ``make run`` (:mod:`service.devserver`), the
end-to-end tests and the benchmark all call :func:`start_gunicorn`.  The Dockerfile and
docker-compose.yml run the same command line (tests/test_compose.py checks it)."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
from pathlib import Path

from service.redis_server import die_with_parent

GUNICORN_COMMAND = ("gunicorn", "-c", "gunicorn.conf.py", "service.app:create_app()")
ROOT = Path(__file__).resolve().parent.parent


def new_secret_key() -> str:
    """A random ``SECRET_KEY`` (256 bits)."""
    return secrets.token_urlsafe(32)


def start_gunicorn(env: dict[str, str], *, app: str = GUNICORN_COMMAND[-1],
                   output=None) -> subprocess.Popen:
    """``python -m gunicorn -c gunicorn.conf.py <app>`` in the repository with ``env`` as
    its whole environment (a fresh ``SECRET_KEY`` if it has none), its output to
    ``output`` (a file; None: this process's), in a session of its own (signals reach it
    only through the caller) that dies with the caller's thread."""
    env = dict(env)
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = new_secret_key()
    return subprocess.Popen(
        [sys.executable, "-m", *GUNICORN_COMMAND[:-1], app], cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True, preexec_fn=die_with_parent())


def stop_gunicorn(process: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM (a graceful stop), SIGKILL after ``timeout``; the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
