"""The followers: Server-Sent Events streams of the followed games, each a real TCP
connection, read by asyncio in processes of their own; what each process saw is a
:class:`Tally`."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import resource
import time
from dataclasses import dataclass, field

from bench.follow.client import HOST, request


@dataclass
class Tally:
    """What one process of followers saw."""

    followers: int = 0
    per_game: dict = field(default_factory=dict)  # game -> followers open
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    out_of_order: int = 0
    ended: int = 0
    received: int = 0
    # (game, version) -> [followers that received it, monotonic time of the last]
    events: dict = field(default_factory=dict)


async def _follow(port: int, game_id: str, tally: Tally, opened: asyncio.Event,
                  counter: list[int], total: int):
    """Follow ``game_id`` until cancelled: every event's id must be the one before it
    plus one; ``opened`` is set once ``total`` streams have been answered."""
    try:
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 16)
    except OSError as error:
        tally.errors.append(f"connect: {error}")
        counter[0] += 1
        if counter[0] >= total:
            opened.set()
        return
    writer.write(request("GET", f"/v1/games/{game_id}/events",
                         headers={"Accept": "text/event-stream"}))
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (OSError, asyncio.IncompleteReadError) as error:
        tally.errors.append(f"head: {error!r}")
        head = b""
    counter[0] += 1
    if counter[0] >= total:
        opened.set()
    if not head.startswith(b"HTTP/1.1 200"):
        tally.refused += 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            body = await asyncio.wait_for(reader.read(300), 2)
            tally.errors.append(f"refused: {head[:12]!r} {body[:200]!r}")
        writer.close()
        return
    tally.followers += 1
    tally.per_game[game_id] = tally.per_game.get(game_id, 0) + 1
    chunked = b"chunked" in head.lower()
    last = None
    events = tally.events
    try:
        while True:
            if chunked:
                size = int((await reader.readline()).strip() or b"0", 16)
                if size == 0:
                    break
                data = await reader.readexactly(size + 2)
            else:
                data = await reader.readuntil(b"\n\n")
            now = time.monotonic()
            for block in data.split(b"\n\n"):
                if not block.startswith(b"id: "):
                    if block.startswith(b"event: end"):
                        tally.ended += 1
                    continue
                version = int(block[4:block.index(b"\n")])
                if last is not None and version != last + 1:
                    tally.out_of_order += 1
                last = version
                tally.received += 1
                seen = events.get((game_id, version))
                if seen is None:
                    events[(game_id, version)] = [1, now]
                else:
                    seen[0] += 1
                    seen[1] = now
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        if not isinstance(error, asyncio.CancelledError):
            tally.errors.append(f"stream: {error!r}")
    finally:
        writer.close()


def follower_process(port: int, game_ids: list[str], rate: float, pipe) -> None:
    """Open a stream on each of ``game_ids`` (``rate`` per second), say so on ``pipe``,
    then read them until told to stop; send the :class:`Tally` back."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def main():
        tally = Tally()
        opened = asyncio.Event()
        counter = [0]
        tasks = []
        started = time.monotonic()
        for number, game_id in enumerate(game_ids):
            wait = started + number / rate - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.ensure_future(
                _follow(port, game_id, tally, opened, counter, len(game_ids))))
        await opened.wait()
        pipe.send(("open", tally.followers, tally.refused, len(tally.errors)))
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_reader(pipe.fileno(), stop.set)
        await stop.wait()
        loop.remove_reader(pipe.fileno())
        pipe.recv()
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        events = {f"{game}:{version}": value for (game, version), value in tally.events.items()}
        pipe.send(("done", {"followers": tally.followers, "per_game": tally.per_game,
                            "refused": tally.refused,
                            "errors": tally.errors[:20], "error_count": len(tally.errors),
                            "out_of_order": tally.out_of_order, "ended": tally.ended,
                            "received": tally.received, "events": events}))

    asyncio.run(main())


class Followers:
    """``processes`` processes of followers (forked), the streams of ``game_ids`` shared
    out among them and opened at ``open_rate`` per second in all: :meth:`open` returns
    once every stream has been answered, :meth:`close` ends them and collects each
    process's tally."""

    def __init__(self, port: int, game_ids: list[str], processes: int, open_rate: float):
        self.port = port
        self.shares = [game_ids[index::processes] for index in range(processes)]
        self.rate = open_rate / processes
        self.pipes: list = []
        self.processes: list = []
        self.holding = self.refused = 0
        self.open_seconds = 0.0

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def open(self) -> Followers:
        context = multiprocessing.get_context("fork")
        opened_at = time.monotonic()
        for share in self.shares:
            ours, theirs = context.Pipe()
            process = context.Process(target=follower_process,
                                      args=(self.port, share, self.rate, theirs), daemon=True)
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)
        opened = [pipe.recv() for pipe in self.pipes]
        self.open_seconds = time.monotonic() - opened_at
        self.holding = sum(entry[1] for entry in opened)
        self.refused = sum(entry[2] for entry in opened)
        return self

    def close(self) -> list[dict]:
        """The tally of each process (as :func:`follower_process` sends it)."""
        for pipe in self.pipes:
            pipe.send("stop")
        tallies = [pipe.recv()[1] for pipe in self.pipes]
        for process in self.processes:
            process.join(30)
        return tallies


def deliveries(tallies: list[dict], done: dict[tuple[str, int], float]) -> dict:
    """What the followers received of the moves ``done`` (``(game, version)`` -> when its
    200 came): ``delays`` (ms from the 200 to the event at the game's last follower, for
    each move every follower received), ``incomplete`` (moves some follower did not
    receive) and ``missing`` (events not received, over every follower)."""
    per_game: dict[str, int] = {}
    for tally in tallies:
        for game_id, count in tally["per_game"].items():
            per_game[game_id] = per_game.get(game_id, 0) + count
    received: dict[str, list] = {}
    for tally in tallies:
        for key, (count, last) in tally["events"].items():
            seen = received.setdefault(key, [0, 0.0])
            seen[0] += count
            seen[1] = max(seen[1], last)
    delays, incomplete = [], 0
    for (game_id, version), answered in done.items():
        seen = received.get(f"{game_id}:{version}")
        if seen is None or seen[0] < per_game.get(game_id, 0):
            incomplete += 1
            continue
        delays.append((seen[1] - answered) * 1000)
    missing = sum(max(0, per_game.get(key.split(":")[0], 0) - value[0])
                  for key, value in received.items())
    return {"delays": delays, "incomplete": incomplete, "missing": missing}
