"""Redis memory per stored game: ``MEMORY USAGE`` of every key of its hash tag."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from bench.http.client import Game
from service.storage.keys import GAME_KEYS


@dataclass
class Memory:
    variant: str
    moves: int
    games: int
    mean: float  # MEMORY USAGE of every key of a game, added up
    largest: int
    keys: float  # keys per game
    record: float  # MEMORY USAGE of game:{<id>} (version, record and journal)
    other: float  # of every other key of the game (none unless Idempotency-Keys)


def memory_of(client: redis.Redis, games: list[Game], moves: int) -> Memory:
    """Every key of each game (found by its hash tag) and its ``MEMORY USAGE``."""
    wanted = {game.id for game in games}
    keys: dict[str, list[bytes]] = {game_id: [] for game_id in wanted}
    for key in client.scan_iter(match=GAME_KEYS, count=1000):
        game_id = key.decode().partition("{")[2].partition("}")[0]
        if game_id in wanted:
            keys[game_id].append(key)
    pipe = client.pipeline(transaction=False)
    order = [(game_id, key) for game_id, found in keys.items() for key in found]
    for _game_id, key in order:
        pipe.memory_usage(key, samples=0)
    usage: dict[str, dict[str, int]] = {game_id: {} for game_id in wanted}
    for (game_id, key), used in zip(order, pipe.execute(), strict=True):
        usage[game_id][key.decode().partition("}")[2]] = used or 0
    totals = [sum(parts.values()) for parts in usage.values()]
    n = len(games)

    def mean(part: str | None) -> float:
        if part is None:
            return sum(v for parts in usage.values() for k, v in parts.items()
                       if k != "") / n
        return sum(parts.get(part, 0) for parts in usage.values()) / n

    return Memory(games[0].variant, moves, n, sum(totals) / n, max(totals),
                  sum(len(parts) for parts in usage.values()) / n, mean(""), mean(None))
