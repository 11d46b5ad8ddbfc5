"""Setting the benchmark up over HTTP: keep-alive clients, games created and played,
and the data files bench/http/wrk.lua reads (the moves each game has left)."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import redis

from bench.http.constants import HOST
from bench.http.service import Service
from bench.walks import Walk
from service.storage import keys


class Client:
    """A keep-alive HTTP/1.1 client for setting things up (not for measuring)."""

    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection(HOST, port, timeout=30)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc_info) -> None:
        self.close()

    def request(self, method: str, path: str, body: dict | None = None,
                headers: dict | None = None) -> tuple[int, dict, bytes]:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        sent.update(headers or {})
        self.connection.request(method, path, body=data, headers=sent)
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, dict(response.getheaders()), payload


def parallel(port: int, jobs: list, work, threads: int = 8) -> list:
    """``work(client, job)`` for every job, on ``threads`` keep-alive connections."""
    local = threading.local()
    clients: list[Client] = []

    def run(job):
        if not hasattr(local, "client"):
            local.client = Client(port)
            clients.append(local.client)
        return work(local.client, job)

    try:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(run, jobs))
    finally:
        for client in clients:
            client.close()


@dataclass
class Game:
    id: str
    token: str
    variant: str
    walk: Walk | None = None

    @property
    def path(self) -> str:
        return f"/v1/games/{self.id}"


def create(client: Client, variant: str, seed: int | None = None) -> Game:
    body = {"variant": variant} if seed is None else {"variant": variant, "seed": seed}
    status, _headers, payload = client.request("POST", "/v1/games", body)
    if status != 201:
        raise RuntimeError(f"POST /v1/games answered {status}: {payload[:300]!r}")
    data = json.loads(payload)
    return Game(data["game"]["id"], data["player_token"], variant)


def play(client: Client, game: Game, moves: tuple[dict, ...], first_version: int = 0) -> None:
    for version, move in enumerate(moves, first_version):
        status, _headers, payload = client.request(
            "POST", f"{game.path}/moves", move,
            {"Authorization": f"Bearer {game.token}", "If-Match": f'"{version}"'})
        if status != 200:
            raise RuntimeError(f"move {version + 1} of {game.id} answered {status}: "
                               f"{payload[:300]!r}")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def moves_file_writer(service: Service, games: list[Game], lanes: int, path: Path):
    """A ``prepare()`` that writes each game's remaining moves from its stored version."""

    def read_versions(client: redis.Redis) -> list[int]:
        pipe = client.pipeline(transaction=False)
        for game in games:
            pipe.hget(keys.game(game.id), keys.VERSION)
        return [int(v) for v in pipe.execute()]

    def prepare() -> None:
        # The requests a stopped wrk left in flight may still be answered: wait until
        # the versions stand still, so that every game goes on from its real version.
        with contextlib.closing(service.redis_client()) as client:
            versions = read_versions(client)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.3)
                again = read_versions(client)
                if again == versions:
                    break
                versions = again
        lines = []
        for i, (game, version) in enumerate(zip(games, versions, strict=True)):
            rest = [json.dumps(move, separators=(",", ":")) for move in game.walk.moves[version:]]
            lines.append("\t".join([str(i % lanes), f"{game.path}/moves", game.token,
                                    str(version), *rest]))
        write_lines(path, lines)

    return prepare
