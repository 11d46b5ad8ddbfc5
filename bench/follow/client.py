"""A minimal HTTP/1.1 client on asyncio streams: games created and their moves sent on
keep-alive connections, as many at once as the benchmark needs."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from bench.walks import Walk

HOST = "127.0.0.1"


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of the next response on ``reader``."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    body = await reader.readexactly(int(match.group(1))) if match else b""
    return status, body


def request(method: str, path: str, body: bytes = b"", headers: dict | None = None) -> bytes:
    """The bytes of a request (a JSON ``body``, if any)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class Game:
    """A game created for the benchmark, the walk of legal moves it is played along and
    the version it has reached."""

    id: str
    token: str
    walk: Walk
    version: int = 0


async def create_games(port: int, walks: list[Walk]) -> list[Game]:
    """A game of each walk's deal, created one after another on one connection."""
    reader, writer = await asyncio.open_connection(HOST, port)
    games = []
    try:
        for walk in walks:
            body = json.dumps({"variant": walk.variant, "seed": walk.seed}).encode()
            writer.write(request("POST", "/v1/games", body))
            status, answer = await read_response(reader)
            if status != 201:
                raise RuntimeError(f"POST /v1/games answered {status}: {answer[:200]!r}")
            data = json.loads(answer)
            games.append(Game(data["game"]["id"], data["player_token"], walk))
    finally:
        writer.close()
    return games


def _move_request(game: Game) -> bytes:
    move = game.walk.moves[game.version]
    return request("POST", f"/v1/games/{game.id}/moves", json.dumps(move).encode(),
                   {"Authorization": f"Bearer {game.token}", "If-Match": f'"{game.version}"'})


async def move(reader, writer, game: Game) -> None:
    """Send the next move of ``game``'s walk (with its ``If-Match``) and read its 200."""
    writer.write(_move_request(game))
    status, answer = await read_response(reader)
    if status != 200:
        raise RuntimeError(f"move {game.version + 1} of {game.id} answered {status}: "
                           f"{answer[:200]!r}")
    game.version += 1

