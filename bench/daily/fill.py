"""What the daily benchmark measures, put in place: a day's board of many entries, the
games whose last move is measured, and the ranked games still open when a day closes.

- **The board** (:func:`fill_board`): its entries are made by the service's own code
  (:func:`service.game.ranked.result` scores each one, ``Daily._end``, what the board's
  projection runs, makes the entry and its score from the ``ranked-ended`` payload a
  game's end writes), then
  loaded into the keys the board's script writes, in its form (``<day>:entries``
  HASH: player -> score, ``<day>:board`` ZSET: the player's id then the entry ->
  score, and the day in ``days``) by pipelined ``HSET`` / ``ZADD`` of
  :data:`LOAD_CHUNK` entries each, on the board's master.  The players and games they
  name are not made (their ids have the service's form; a link to such a game answers
  404); what the reads measured here touch is only the board.
- **The moves** (:func:`make_players`): players made through the API, each with a
  ranked attempt at every variant's deal of today (``POST /v1/daily/<variant>/<day>``)
  and as many ordinary games of their own (``POST /v1/games`` with their token).
- **The close** (:func:`open_ranked_games`): players registered and their ranked games
  of the day before stored by the service's own code in batches: the attempts
  (``HSET`` of the day's attempts), the games (:func:`service.game.commands.create`,
  stored by :meth:`GameStore.commit_many` with their ``created`` outbox events), their
  players' lists (:meth:`PlayerStore.project_many` of those events, as the projection
  applies them, then the outboxes cleared).
"""

from __future__ import annotations

import json
import random
import secrets
import time
from dataclasses import dataclass, field

from bench.http.client import Client, parallel
from service.game import commands
from service.game.pipeline import CREATED, outbox_events
from service.game.ranked import result
from service.game.record import epoch_ms, now
from service.players.accounts import new_player_id
from service.storage import keys

#: Entries per pipelined HSET / ZADD of the board's load.
LOAD_CHUNK = 5000
#: Ranked games stored per round trip when the close's games are made.
GAMES_BATCH = 500
#: The variant whose day's board is read.
BOARD_VARIANT = "clock"
VARIANTS = ("clock", "salic-law", "four-corners")
#: Connections that make the players and games through the API.
FILL_CONNECTIONS = 16


def _checked(answer: tuple[int, dict, bytes], expected: int, what: str) -> dict:
    status, _headers, payload = answer
    if status != expected:
        raise RuntimeError(f"{what} answered {status}: {payload[:300]!r}")
    return json.loads(payload) if payload else {}


def synthetic_end(number: int, rng: random.Random, day: str, index: int) -> tuple[str, dict]:
    """The ``ranked-ended`` payload of one game of the board (a third won: 80 to 400
    moves; the rest lost, resigned or abandoned with 0 to 103 cards home)."""
    player = new_player_id()
    if rng.random() < 1 / 3:
        outcome, home = "won", 104
        moves, time_ms = rng.randint(80, 400), rng.randint(60_000, 3_600_000)
    else:
        outcome = rng.choice(("lost", "resigned", "abandoned"))
        home, moves, time_ms = rng.randint(0, 103), rng.randint(1, 400), 0
    ended = epoch_ms(now())
    return secrets.token_urlsafe(16), {
        "player": player, "game": "", "variant": BOARD_VARIANT, "day": day, "index": index,
        "ended_ms": ended, "name": f"Player {number}", **result(outcome, moves, time_ms, home)}


@dataclass
class Board:
    day: str
    entries: int
    seconds: float
    #: players on the board whose rank is read, spread over the whole board
    players: list[str] = field(default_factory=list)


def fill_board(daily, client, day: str, index: int, entries: int, sample: int,
               seed: int = 1) -> Board:
    """``entries`` entries on today's board of :data:`BOARD_VARIANT` (``client``: a
    redis-py client of the board's master); ``sample`` of their players kept."""
    started = time.monotonic()
    rng = random.Random(seed)
    board = keys.daily(BOARD_VARIANT, f"{day}:board")
    entries_key = keys.daily(BOARD_VARIANT, f"{day}:entries")
    every = max(1, entries // max(1, sample))
    players = []
    done = 0
    while done < entries:
        chunk = min(LOAD_CHUNK, entries - done)
        hashes, scores = {}, {}
        for number in range(done, done + chunk):
            game_id, data = synthetic_end(number, rng, day, index)
            data["game"] = game_id
            end = daily._end(game_id, data, data.pop("name"))  # the projection's own
            hashes[end["player"]] = end["score"]
            scores[end["player"].encode() + end["entry"]] = end["score"]
            if number % every == 0 and len(players) < sample:
                players.append(end["player"])
        pipe = client.pipeline(transaction=False)
        pipe.hset(entries_key, mapping=hashes)
        pipe.zadd(board, scores)
        pipe.execute()
        done += chunk
    client.zadd(keys.daily(BOARD_VARIANT, "days"), {day: index})
    return Board(day, entries, time.monotonic() - started, players)


@dataclass
class Player:
    id: str
    token: str
    ranked: list[str] = field(default_factory=list)  # game ids, one per variant
    ordinary: list[str] = field(default_factory=list)


def make_players(port: int, count: int, day: str) -> list[Player]:
    """``count`` players through the API, each with a ranked attempt at every variant's
    deal of ``day`` and an ordinary game of every variant, all at version 0."""

    def make(client: Client, number: int) -> Player:
        body = _checked(client.request("POST", "/v1/players", {"name": f"Bench {number}"}),
                        201, "POST /v1/players")
        player = Player(body["player"]["id"], body["player_token"])
        headers = {"Authorization": f"Bearer {player.token}"}
        for variant in VARIANTS:
            made = _checked(client.request("POST", f"/v1/daily/{variant}/{day}", None,
                                           headers), 201, f"POST /v1/daily/{variant}/{day}")
            player.ranked.append(made["game"]["id"])
            made = _checked(client.request("POST", "/v1/games", {"variant": variant},
                                           headers), 201, "POST /v1/games")
            player.ordinary.append(made["game"]["id"])
        return player

    return parallel(port, list(range(count)), make, threads=FILL_CONNECTIONS)


@dataclass
class OpenGames:
    day: str
    games: int
    seconds: float
    game_ids: list[str] = field(default_factory=list)


def open_ranked_games(services, games: int, day: str, index: int, deadline_ms: int
                      ) -> OpenGames:
    """``games`` ranked games of ``day`` in play (the variants in turn; a player per
    variant's worth of games), stored by the service's code in batches."""
    started = time.monotonic()
    daily, store, projector = services.daily, services.store, services.projector
    players = [services.players.register(f"Closer {number}")[0]["id"]
               for number in range((games + len(VARIANTS) - 1) // len(VARIANTS))]
    for variant in VARIANTS:
        daily.store.set_deal(variant, day, index, secrets.randbits(63),
                             secrets.token_hex(16), variant != "four-corners")
    deals = {variant: daily.store.deal(variant, day) for variant in VARIANTS}
    ranked = {"day": day, "index": index, "deadline_ms": deadline_ms}
    jobs = [(players[number // len(VARIANTS)], VARIANTS[number % len(VARIANTS)])
            for number in range(games)]
    made: list[str] = []
    backend = store.backend.connections
    for first in range(0, len(jobs), GAMES_BATCH):
        writes, outboxes, attempts = [], {}, {}
        for player, variant in jobs[first:first + GAMES_BATCH]:
            game_id = secrets.token_urlsafe(16)
            seed, salt, winnable = deals[variant]
            change = commands.settle(commands.create(
                variant, None, "off", now(), winnable_seed=seed if winnable else None,
                secret_seed=None if winnable else seed, salt=salt, owner=player,
                ranked=ranked))
            events = outbox_events(game_id, change, None)
            writes.append({"game_id": game_id, "expected": None, "version": change.version,
                           "record": change.record.to_json(), "journal": change.journal,
                           "stat": keys.stat(change.variant, change.stat), "create": True,
                           "outbox": events})
            outboxes[game_id] = events
            attempts.setdefault(variant, {})[player] = game_id
            made.append(game_id)
        for variant, pairs in attempts.items():
            name = keys.daily(variant, f"{day}:attempts")
            backend.execute("HSET", name, *(item for pair in pairs.items() for item in pair))
        outcomes = store.commit_many(writes)
        if any(outcome != "ok" for outcome in outcomes):
            raise RuntimeError(f"storing the open games: {set(outcomes)}")
        created = []
        for game_id, events in outboxes.items():
            data = json.loads(events[CREATED])
            created.append({"player_id": data["player"], "game_id": game_id, "event": CREATED,
                            "summary": json.dumps(data["summary"]).encode(),
                            "variant": data["variant"], "status": data["status"],
                            "moves": data["moves"], "ended_ms": None, "win_ms": None,
                            "created_ms": data["created_ms"]})
        outcomes = projector.players.project_many(created)
        if any(outcome not in ("applied", "done") for outcome in outcomes):
            raise RuntimeError(f"projecting the open games: {set(outcomes)}")
        store.clear_outboxes({game_id: [CREATED] for game_id in outboxes})
    return OpenGames(day, games, time.monotonic() - started, made)
