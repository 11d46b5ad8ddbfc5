"""Helpers of the end-to-end tests: a real gunicorn (the command of `make run`), raw HTTP
connections that know which gunicorn worker serves them, and client processes that
fire requests at the same moment."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from devtools import launch
from devtools.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent


class Gunicorn(launch.Gunicorn):
    """The service's gunicorn (:mod:`devtools.launch`, the command of `make run`; the events
    group's with ``events``) on a free port, with ``env`` on top of this process's
    environment, its output in ``log``; on a clean exit its log must show no traceback,
    500 or worker timeout."""

    def __init__(self, redis_url: str, log: Path, *, events: bool = False, **env: str):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        environ = dict(os.environ, HOST="127.0.0.1", PORT=str(self.port),
                       REDIS_URL=redis_url, LOG_LEVEL="WARNING", WEB_CONCURRENCY="2",
                       GUNICORN_THREADS="8", RATELIMIT_DEFAULT="100000 per minute")
        environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        if events:  # the events group alone, on its own address
            environ.update(EVENTS_BIND=f"127.0.0.1:{self.port}", EVENTS_WORKERS="1")
            environ.pop("EVENTS_HANDOFF_SOCKET", None)
        environ.update(env)
        workers = int(environ["EVENTS_WORKERS" if events else "WEB_CONCURRENCY"])
        super().__init__(environ, output=log, workers=workers, events=events)

    def __exit__(self, *exc_info) -> None:
        self.stop()
        if exc_info[0] is None:
            self.check_log()

    def check_log(self) -> None:
        text = self.log()
        assert "Traceback" not in text, text[-5000:]
        assert '"status": 500' not in text, text[-5000:]
        assert "WORKER TIMEOUT" not in text, text[-5000:]

    def connection(self) -> Connection:
        return Connection(self)


class Connection:
    """One keep-alive HTTP connection to the server, which knows the worker serving it."""

    def __init__(self, server: Gunicorn):
        self.server = server
        self.http = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
        self.http.connect()
        self.used = False  # a request answered on it: the server may close it when idle
        self.resent = 0  # requests sent again on a new connection (see request)

    def request(self, method: str, path: str, body=None, headers=None):
        """(status, headers, body bytes).  As a browser does, a request that went on a
        reused kept-alive connection and got no byte of answer (the server closed it
        while it was idle) is sent once more on a new connection, and counted."""
        headers = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        try:
            self.http.request(method, path, body=data, headers=headers)
            response = self.http.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            if not self.used:
                raise
            self.http.close()
            self.http.connect()
            self.resent += 1
            self.http.request(method, path, body=data, headers=headers)
            response = self.http.getresponse()
        self.used = True
        return response.status, dict(response.getheaders()), response.read()

    def worker(self) -> int | None:
        """The pid of the worker that holds the server end of this connection."""
        client_port = self.http.sock.getsockname()[1]
        inode = None
        with open("/proc/net/tcp") as table:
            for line in table.read().splitlines()[1:]:
                parts = line.split()
                local, remote = parts[1], parts[2]
                if int(local.split(":")[1], 16) == self.server.port \
                        and int(remote.split(":")[1], 16) == client_port:
                    inode = parts[9]
        if inode is None:
            return None
        for pid in self.server.workers():
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                        return pid
                except OSError:
                    continue
        return None

    def close(self) -> None:
        self.http.close()


def connections_on_distinct_workers(server: Gunicorn, count: int, *,
                                    seconds: float = 60.0) -> list[Connection]:
    """``count`` open connections, each served by another worker (requests to /healthz,
    which no rate limit counts, until the kernel has spread them).  The workers race to
    accept each connection; on a busy machine one of them may lose for a while, so it
    keeps trying (with short pauses that let a descheduled worker run) for up to
    ``seconds``."""
    chosen: dict[int, Connection] = {}
    deadline = time.monotonic() + seconds
    attempts = 0
    try:
        while len(chosen) < count and time.monotonic() < deadline:
            attempts += 1
            connection = server.connection()
            status, _headers, _body = connection.request("GET", "/healthz")
            assert status == 200
            worker = connection.worker()
            if worker is not None and worker not in chosen:
                chosen[worker] = connection
                continue
            connection.close()
            if attempts > 20:
                time.sleep(0.02)
        assert len(chosen) == count, \
            f"{attempts} connections reached only workers {sorted(chosen)}"
    except BaseException:
        for connection in chosen.values():
            connection.close()
        raise
    return list(chosen.values())


_CLIENT = textwrap.dedent("""
    import http.client, json, sys, time
    spec = json.loads(sys.argv[1])
    connection = http.client.HTTPConnection("127.0.0.1", spec["port"], timeout=30)
    connection.connect()
    while time.time() < spec["start"]:
        time.sleep(0.001)
    results = []
    for method, path, body, headers in spec["requests"]:
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers = dict(headers, **{"Content-Type": "application/json"})
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        results.append([response.status, response.read().decode(),
                        response.getheader("ETag")])
    print(json.dumps(results))
""")


def in_processes(server: Gunicorn, plans: list[list[tuple]], delay: float = 0.8) -> list[list]:
    """Run each plan (a list of (method, path, body, headers)) in its own Python process,
    all starting at the same moment; the answers of each, as [status, body, ETag]."""
    start = time.time() + delay
    processes = [
        subprocess.Popen([sys.executable, "-c", _CLIENT, json.dumps(
            {"port": server.port, "start": start, "requests": plan})],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for plan in plans]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err.decode()
        results.append(json.loads(out))
    return results


def head_of_a_stream_then_a_read(port: int, path: str) -> tuple[bytes, bytes]:
    """``HEAD`` of ``path`` asking for a stream, then ``GET /v1/variants`` on the same
    kept-alive connection: the HEAD's answer head, and all that came after it (the next
    answer, if the HEAD's answer had no byte of body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"HEAD {path} HTTP/1.1\r\nHost: x\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode()
                     + b"GET /v1/variants HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while received.count(b"\r\n\r\n") < 2 or not received.rstrip().endswith(b"]}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return head, rest
