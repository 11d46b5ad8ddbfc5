"""The players: moves sent as fast as they are answered (the throughput) or at a set
pace (the live games the followers follow)."""

from __future__ import annotations

import asyncio
import time

from bench.follow.client import HOST, Game, move


async def closed_loop(port: int, games: list[Game], connections: int, seconds: float
                      ) -> tuple[int, float, list[float]]:
    """Moves as fast as they are answered: (moves, seconds, latencies in ms)."""
    queue = list(games)
    latencies: list[float] = []
    stop = time.monotonic() + seconds

    async def lane():
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while queue and time.monotonic() < stop:
                game = queue.pop()
                while game.version < len(game.walk.moves) and time.monotonic() < stop:
                    started = time.monotonic()
                    await move(reader, writer, game)
                    latencies.append((time.monotonic() - started) * 1000)
        finally:
            writer.close()

    started = time.monotonic()
    await asyncio.gather(*(lane() for _ in range(connections)))
    return len(latencies), time.monotonic() - started, latencies


async def paced(port: int, games: list[Game], rate: float, seconds: float,
                done: dict[tuple[str, int], float]) -> int:
    """``rate`` moves per second over ``games`` in turn; ``done[(game, version)]`` is the
    monotonic time of the 200 of the move that made ``version``.  Returns the moves sent
    late (the player could not keep the pace)."""
    lanes = 10
    late = 0
    start = time.monotonic() + 0.2
    total = int(rate * seconds)

    async def lane(index: int):
        nonlocal late
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            for number in range(total):
                game = games[number % len(games)]
                # a game's moves all go through one lane: one move of it in flight at most
                if (number % len(games)) % lanes != index:
                    continue
                if game.version >= len(game.walk.moves):
                    continue
                due = start + number / rate
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                elif wait < -0.05:
                    late += 1
                await move(reader, writer, game)
                done[(game.id, game.version)] = time.monotonic()
        finally:
            writer.close()

    await asyncio.gather(*(lane(index) for index in range(lanes)))
    return late

