"""Many Server-Sent Event streams held open while short requests are measured."""

from __future__ import annotations

import selectors
import socket
import threading
import time

from bench.http.client import Client, Game
from bench.http.constants import HOST


class Streams:
    """Many open ``GET .../events`` (Accept: text/event-stream), read in one thread."""

    def __init__(self, port: int, paths: list[str]):
        self.selector = selectors.DefaultSelector()
        self.opened = self.refused = self.ended = self.events = 0
        self._stop = threading.Event()
        for path in paths:
            sock = socket.create_connection((HOST, port), timeout=5)
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                         "Accept: text/event-stream\r\n\r\n".encode())
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, {"head": b"", "open": False})
        self.count = len(paths)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            for key, _mask in self.selector.select(timeout=0.1):
                state = key.data
                try:
                    data = key.fileobj.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.ended += 1
                    self.selector.unregister(key.fileobj)
                    key.fileobj.close()
                    continue
                if not state["open"]:
                    state["head"] += data
                    if b"\r\n\r\n" not in state["head"]:
                        continue
                    head, _, data = state["head"].partition(b"\r\n\r\n")
                    state["open"] = True
                    if head.split(b" ", 2)[1:2] == [b"200"]:
                        self.opened += 1
                    else:
                        self.refused += 1
                self.events += data.count(b"\nid:") + data.startswith(b"id:")

    def wait_open(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.opened + self.refused + self.ended < self.count \
                and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()


def has_events_feed(port: int, game: Game) -> bool:
    with Client(port) as client:
        status, _headers, _payload = client.request("GET", f"{game.path}/events")
    return status == 200
