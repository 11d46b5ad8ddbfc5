"""Events streams handed from the request group to the events group, on one address.

The service listens on one address, the request group's (gthread processes,
:mod:`service.runtime.request_group`), which answer moves and reads.  A request for a
stream of a game's feed (``GET /v1/games/<id>/events`` asking for ``text/event-stream``,
as :func:`service.live.negotiation.stream_wire` decides for the view too), a GET without
a body, is not served there: the process
(:class:`~service.runtime.request_process.RequestProcess`) passes the client's
connection (its file descriptor, over a Unix socket, with ``SCM_RIGHTS``) and the
request's head to the events group (gevent processes of the same app,
:mod:`service.runtime.events_group`) with :func:`send`, and forgets the connection.  An
events process takes it with :func:`receive` and serves the request on that connection
as if it had accepted it (:class:`~service.runtime.events_process.HandoffServer`): the
same Flask app, the same answers, and a stream that costs a
greenlet and a few kilobytes instead of a thread.  Nothing is proxied: after the
hand-off the bytes go between the client and the events process only.

When no events group listens (``EVENTS_HANDOFF_SOCKET`` unset, or nothing at that path)
the request group serves the stream itself, as any other request (a thread per stream, a
cap per process).  Behind a load balancer that routes the events path to the events
group's own address (docker-compose.cluster.yml), no hand-off happens at all.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time

from service.live.negotiation import stream_wire

_LENGTH = struct.Struct("!I")
_MAX_HEAD = 1 << 20


def is_stream_request(method: str, path: str, headers: list[tuple[str, str]]) -> bool:
    """Whether a request is to be handed to the events group: a stream of a game's feed
    (as the view decides it) that has no body, and a GET (a HEAD holds no stream open)."""
    if method != "GET":
        return False  # served where it was received
    accept = None
    for name, value in headers:
        upper = name.upper()
        if upper in ("CONTENT-LENGTH", "TRANSFER-ENCODING") and value.strip() not in ("", "0"):
            return False  # a body: served where it was received
        if upper == "ACCEPT":
            accept = value if accept is None else f"{accept}, {value}"
    return stream_wire(method, path, accept) is not None


def request_head(method: str, uri: str, version: tuple[int, int],
                 headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {uri} HTTP/{version[0]}.{version[1]}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def send(path: str, connection: socket.socket, data: bytes, *, wait: float = 10.0) -> None:
    """Give ``connection`` and the bytes already read from it to the events group,
    waiting up to ``wait`` seconds while its queue of hand-offs is full.  Raises OSError
    when nothing takes it (the connection is then still the caller's)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(2.0)
        deadline = time.monotonic() + wait
        while True:
            try:
                channel.connect(path)
                break
            except BlockingIOError:  # the events processes' accept queue is full: wait
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
        message = _LENGTH.pack(len(data)) + data
        sent = socket.send_fds(channel, [message], [connection.fileno()])
        if sent < len(message):
            channel.sendall(message[sent:])


def receive(channel: socket.socket) -> tuple[socket.socket, bytes]:
    """The connection and its bytes sent by :func:`send`."""
    data, fds, _flags, _address = socket.recv_fds(channel, 65536, 1)
    if not fds:
        raise OSError("a hand-off without a connection")
    connection = socket.socket(fileno=fds[0])
    for extra in fds[1:]:
        os.close(extra)
    try:
        while len(data) < _LENGTH.size:
            more = channel.recv(65536)
            if not more:
                raise OSError("a truncated hand-off")
            data += more
        (length,) = _LENGTH.unpack_from(data)
        if length > _MAX_HEAD:
            raise OSError("an over-long hand-off")
        while len(data) < _LENGTH.size + length:
            more = channel.recv(65536)
            if not more:
                raise OSError("a truncated hand-off")
            data += more
    except BaseException:
        connection.close()
        raise
    return connection, data[_LENGTH.size:_LENGTH.size + length]


def listen(path: str) -> socket.socket:
    """The events group's listening socket at ``path`` (a stale one is replaced)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(4096)  # a burst of streams waits here (the kernel may cap it lower)
    return listener
