"""Where the time of a request goes: pyinstrument over the real app, in-process.

Builds the app with ``create_app()`` as a gunicorn worker would (production settings,
Prometheus metrics in multiprocess mode as the request group sets them, ``LOG_LEVEL=INFO``
with the log lines going to /dev/null, rate limiting off as in the HTTP benchmark) against
a Redis: its own redis-server with AOF ``appendfsync always`` unless ``--redis-url``.  It
then calls the WSGI application directly, one request after another (what a gunicorn
worker calls, without the socket and the HTTP parsing), ``--requests`` times
``POST /v1/games/<id>/moves`` (legal moves of bench/walks.py, each with ``If-Match``) and
as many ``GET /v1/games/<id>``, each kind under pyinstrument, and prints the functions
with the most time of their own and the project's functions by total time.

    python -m bench.profile [--requests N] [--redis-url URL] [--markdown] [--top N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GAMES = 48


def call(app, method: str, path: str, headers: dict | None = None, body: bytes = b""
         ) -> tuple[int, bytes]:
    """One request through the WSGI application, as a WSGI server would make it."""
    environ = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "40000", "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["CONTENT_TYPE"] = "application/json"
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    status = []
    result = app(environ, lambda line, _headers, _exc=None: status.append(line))
    try:
        data = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(status[0][:3]), data


def _identity(frame) -> tuple[str, str, int]:
    return frame.function, frame.file_path_short or "?", frame.line_no or 0


def aggregate(root) -> tuple[dict, dict, float]:
    """Own time and total time (recursion counted once) per function of a frame tree."""
    own: dict = {}
    total: dict = {}

    def visit(frame, active: frozenset) -> None:
        if frame.is_synthetic:
            return
        key = _identity(frame)
        own[key] = own.get(key, 0.0) + frame.total_self_time
        if key not in active:
            total[key] = total.get(key, 0.0) + frame.time
            active = active | {key}
        for child in frame.children:
            visit(child, active)

    if root is not None:
        visit(root, frozenset())
    return own, total, root.time if root is not None else 0.0


def _where(key: tuple[str, str, int]) -> str:
    function, path, line = key
    path = path.replace(str(ROOT) + os.sep, "")
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"`{function}` ({path}:{line})"


def tables(name: str, session, requests: int, seconds: float, top: int) -> str:
    own, total, whole = aggregate(session.root_frame())
    lines = [f"### {name}: {requests} requests, {seconds * 1000 / requests:.2f} ms each "
             f"in-process ({requests / seconds:,.0f} per second on one thread)", "",
             "| own time | function |", "|---:|---|"]
    for key, value in sorted(own.items(), key=lambda item: -item[1])[:top]:
        lines.append(f"| {value / whole:.1%} | {_where(key)} |")
    lines += ["", "| total time | project function |", "|---:|---|"]
    ours = [(key, value) for key, value in total.items()  # the service's, not this loop's
            if key[1].startswith("service") or "/service/" in key[1]]
    for key, value in sorted(ours, key=lambda item: -item[1])[:top]:
        lines.append(f"| {value / whole:.1%} | {_where(key)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000,
                        help="requests of each kind (default 2000)")
    parser.add_argument("--redis-url", help="use this Redis (default: start one, AOF always)")
    parser.add_argument("--redis-kind", default="its own, AOF with fsync always",
                        help="how the Redis of --redis-url keeps its data (for the text)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables only")
    parser.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    args = parser.parse_args(argv)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-profile-")))
        url = args.redis_url
        if not url:
            from service.redis_server import RedisServer
            server = RedisServer(tmp / "redis", appendonly=True, appendfsync="always")
            stack.enter_context(server)
            url = server.url
        # As the request group and the HTTP benchmark set them, before the app is imported.
        (tmp / "prometheus").mkdir()
        from service.launch import new_secret_key

        os.environ.update(REDIS_URL=url, RATELIMIT_ENABLED="false",
                          PROMETHEUS_MULTIPROC_DIR=str(tmp / "prometheus"),
                          SECRET_KEY=os.environ.get("SECRET_KEY") or new_secret_key())
        from pyinstrument import Profiler

        from bench.walks import VARIANT_IDS, long_walks
        from service.app import create_app

        # The JSON request log: written, as in production, and never read.
        sink = stack.enter_context(open(os.devnull, "w"))
        stack.enter_context(contextlib.redirect_stderr(sink))
        app = create_app()
        per_game = -(-args.requests // GAMES)
        games = []
        for walk in long_walks(list(VARIANT_IDS), GAMES, per_game):
            status, data = call(app, "POST", "/v1/games",
                                body=json.dumps({"variant": walk.variant,
                                                 "seed": walk.seed}).encode())
            assert status == 201, data
            created = json.loads(data)
            games.append((created["game"]["id"], created["player_token"],
                          [json.dumps(move).encode() for move in walk.moves]))
        moves = []
        for i in range(args.requests):
            game_id, token, walk = games[i % GAMES]
            version = i // GAMES
            moves.append((f"/v1/games/{game_id}/moves",
                          {"Authorization": f"Bearer {token}", "If-Match": f'"{version}"'},
                          walk[version]))
        reads = [f"/v1/games/{games[i % GAMES][0]}" for i in range(args.requests)]

        out = []
        for name, run in (
                ("POST /v1/games/<id>/moves",
                 lambda: [call(app, "POST", path, headers, body)
                          for path, headers, body in moves]),
                ("GET /v1/games/<id>", lambda: [call(app, "GET", path) for path in reads])):
            profiler = Profiler(interval=0.0002)
            started = time.perf_counter()
            profiler.start()
            answers = run()
            profiler.stop()
            seconds = time.perf_counter() - started
            refused = [a for a in answers if a[0] != 200]
            if refused:
                print(f"{name}: {len(refused)} answers were not 200: {refused[0]}",
                      file=sys.__stderr__)
                return 1
            out.append(tables(name, profiler.last_session, args.requests, seconds, args.top))
    if not args.markdown:
        print("Profile (pyinstrument, wall clock, in-process WSGI calls)\n")
    print("pyinstrument (wall clock, 0.2 ms sampling) over direct calls of the WSGI "
          f"application on one thread, against a Redis ({args.redis_kind}): the request "
          "path without gunicorn and its socket. Time waiting for Redis shows as "
          "`socket.recv_into` / `sendall`. `python -m bench.profile` runs it alone.\n")
    print("\n\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
