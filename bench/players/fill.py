"""The player the benchmark reads: an account and its games, made through the API.

Every game is created with ``POST /v1/games`` and the player's token, on keep-alive
connections in parallel, so each is stored, put in the player's list and counted by
the service's own code, as any player's game; a share is resigned through the API
(``POST .../moves`` ``{"type": "resign"}``), so that the statistics hold finished
games.  Then the list and the statistics are read back and checked against what was
made."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from bench.http.client import Client, parallel
from bench.walks import VARIANT_IDS

#: Connections that make the games.
FILL_CONNECTIONS = 16


@dataclass
class Player:
    id: str
    token: str
    games: list[str] = field(default_factory=list)  # ids, in creation order
    resigned: int = 0
    fill_seconds: float = 0.0
    #: the games of the first page of each list read (path -> games on it)
    first_pages: dict[str, int] = field(default_factory=dict)

    @property
    def auth(self) -> str:
        return f"Authorization: Bearer {self.token}"


def _checked(answer: tuple[int, dict, bytes], expected: int, what: str) -> dict:
    status, _headers, payload = answer
    if status != expected:
        raise RuntimeError(f"{what} answered {status}: {payload[:300]!r}")
    return json.loads(payload) if payload else {}


def make_player(port: int, games: int, resigned_share: float) -> Player:
    """A player with ``games`` games (the variants in turn), one in every
    ``1 / resigned_share`` resigned."""
    started = time.monotonic()
    with Client(port) as client:
        body = _checked(client.request("POST", "/v1/players", {"name": "Bench player"}),
                        201, "POST /v1/players")
    player = Player(body["player"]["id"], body["player_token"])
    headers = {"Authorization": f"Bearer {player.token}"}

    def create(client: Client, variant: str) -> str:
        found = _checked(client.request("POST", "/v1/games", {"variant": variant}, headers),
                         201, "POST /v1/games")
        return found["game"]["id"]

    variants = [VARIANT_IDS[number % len(VARIANT_IDS)] for number in range(games)]
    player.games = parallel(port, variants, create, threads=FILL_CONNECTIONS)
    every = round(1 / resigned_share) if resigned_share > 0 else 0
    to_resign = player.games[::every] if every else []

    def resign(client: Client, game_id: str) -> None:
        found = _checked(client.request("POST", f"/v1/games/{game_id}/moves",
                                        {"type": "resign"}, headers),
                         200, f"resigning {game_id}")
        if found["game"]["status"] != "resigned":
            raise RuntimeError(f"{game_id} is {found['game']['status']} after resigning")

    parallel(port, to_resign, resign, threads=FILL_CONNECTIONS)
    player.resigned = len(to_resign)
    player.fill_seconds = time.monotonic() - started
    return player


def check(port: int, player: Player, list_paths: list[str]) -> None:
    """The player's statistics count every game made, and the first page of each list
    measured is read (how full it is goes to the report)."""
    headers = {"Authorization": f"Bearer {player.token}"}
    with Client(port) as client:
        stats = _checked(client.request("GET", "/v1/players/me/stats", headers=headers),
                         200, "GET /v1/players/me/stats")
        played = sum(row["played"] for row in stats["variants"])
        in_play = sum(row["in_play"] for row in stats["variants"])
        if (played, in_play) != (player.resigned, len(player.games) - player.resigned):
            raise RuntimeError(f"the statistics count {played} played and {in_play} in play, "
                               f"not {player.resigned} and "
                               f"{len(player.games) - player.resigned}")
        for path in list_paths:
            page = _checked(client.request("GET", path, headers=headers), 200, path)
            player.first_pages[path] = len(page["games"])
