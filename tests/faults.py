"""Fault injection for the tests: a TCP proxy in front of Redis that can lose the reply
to a command after Redis executed it, hang, or pass everything through."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class RedisProxy:
    """``127.0.0.1:<port>`` forwards to ``target`` (host, port).

    ``lose_reply_to(b"EVALSHA")`` arms a one-shot fault: the next command containing
    that word is forwarded to Redis (which executes it), then the connection is cut
    before the reply reaches the client, as when a network or a Redis crash loses it.
    ``hang = True`` makes every connection stop forwarding in both directions (a hung
    server, or a network black hole) until it is set back to False.
    """

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.hang = False
        self.replies_lost = 0
        self._armed: bytes | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def lose_reply_to(self, word: bytes) -> None:
        with self._lock:
            self._armed = word

    def _take(self, data: bytes) -> bool:
        with self._lock:
            if self._armed is not None and self._armed in data:
                self._armed = None
                return True
            return False

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                downstream.close()
                continue
            upstream.settimeout(None)
            self._sockets += [downstream, upstream]
            state = {"lose": False}
            threading.Thread(target=self._pump, args=(downstream, upstream, state, True),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream, state, False),
                             daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, state: dict,
              to_redis: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                while self.hang and not self._closed:
                    time.sleep(0.01)
                if to_redis and self._take(data):
                    state["lose"] = True
                elif not to_redis and state["lose"]:
                    self.replies_lost += 1
                    break  # Redis answered; the client never hears it
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def close(self) -> None:
        self._closed = True
        self.hang = False
        self.listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> RedisProxy:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

