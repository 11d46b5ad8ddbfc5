"""The daily deal on a Redis Cluster whose board's master dies for good mid-day
(docs/daily.md, "Exactly once, across slots").

A local cluster (3 masters, 2 replicas each: a promoted replica still has one to confirm
writes), gunicorn with the production config.  500 players register through the API
and each makes today's ranked attempt at a variant (the variants in turn) and plays it
to its end: three win the Four Corners deal by its 304 moves (tests/four_corners_won.py),
four lose the Clock's and Salic Law's deal by real moves (a line computed here with the
engine), the others make up to three moves and resign.  Once about 40 % of the games
have ended, the master holding the Clock's board slot (``{daily:clock}``) is killed and
left down; every client sends a request answered 503 (or not at all) again until it is
answered: a move with its Idempotency-Key, an attempt as it was (a second attempt
answers 409 ``attempt_taken`` with the first one's game).  Afterwards, once the solver's sweep
found nothing left in the outboxes:

- every ended ranked game is on its board exactly once (0 missing, 0 twice) and nothing
  else is there;
- each entry's outcome, moves, time, cards home and score equal those recomputed from
  the game's own record (``GET /v1/games/<id>``: its status, moves, piles and times),
  and its moves those the client saw acknowledged;
- the outage was seen (503 with Retry-After, or no answer) and each client's first
  success after its last failure came within 15 s of the kill.
"""

from __future__ import annotations

import http.client
import itertools
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from redis.crc import key_slot

from bench.cluster import Http, Server
from devtools.redis_server import LocalCluster
from service.app import close_app
from service.engine import get_variant
from service.game.pipeline import RANKED_ENDED
from service.game.ranked import score
from service.storage import keys
from service.storage.game_store import StorageUnavailable
from tests.api.support import auth, make_app
from tests.four_corners_won import SEED as FOUR_CORNERS_SEED
from tests.four_corners_won import moves as four_corners_line

PLAYERS = 500
CLIENTS = 24
VARIANTS = ("clock", "salic-law", "four-corners")
WINNERS = 3  # Four Corners players who play the winning line
LOSERS = 2  # per variant, the Clock and Salic Law: players who play a losing line
KILL_AFTER = 0.4  # of the games ended
RECOVERY_BOUND = 15.0
GIVE_UP = 40.0  # seconds a client keeps retrying one request


def losing_line(variant_id: str) -> tuple[int, list[dict]]:
    """A deal of ``variant_id`` and the moves, random but fixed, that lose it in fewer
    than 150 moves (without resigning)."""
    variant = get_variant(variant_id)
    for seed in itertools.count(1):
        rng = random.Random(seed)
        state, line = variant.deal(seed), []
        while not state.is_over and len(line) < 150:
            legal = [move for move in state.legal_moves() if move.to_dict()["type"] != "resign"]
            if not legal:
                break
            move = rng.choice(legal)
            state, _step = state.apply(move)
            line.append(move.to_dict())
        if state.is_over and state.status == "lost":
            return seed, line
    raise AssertionError("unreachable")


@dataclass
class Player:
    number: int
    variant: str
    line: list[dict]  # the moves to play (a resign last unless the line ends the game)
    id: str = ""
    token: str = ""
    game_id: str = ""
    acknowledged: int = 0  # moves answered 200
    status: str = ""  # the game's status in the last answer
    ended_at: float = 0.0


@dataclass
class Seen:
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: int = 0
    #: per client: (monotonic time, ok) of every answer
    answers: dict[int, list[tuple[float, bool]]] = field(default_factory=dict)
    unavailable: int = 0  # 503 answers
    unanswered: int = 0  # requests without an answer (connection closed, timeout)
    without_retry_after: int = 0
    unexpected: list[str] = field(default_factory=list)


class Client(threading.Thread):
    def __init__(self, number: int, port: int, work: queue.Queue, seen: Seen, day: str):
        super().__init__(daemon=True)
        self.number, self.port, self.work, self.seen, self.day = number, port, work, seen, day
        self.error: BaseException | None = None
        seen.answers[number] = []

    def run(self):
        try:
            with Http(self.port, timeout=10) as http_client:
                while True:
                    try:
                        player = self.work.get_nowait()
                    except queue.Empty:
                        return
                    self._play(http_client, player)
        except BaseException as error:  # the test reports it
            self.error = error

    def _call(self, client: Http, method: str, path: str, body, headers, ok: tuple[int, ...]):
        """The request, sent again while it is answered 503 or not at all."""
        started = time.monotonic()
        while True:
            try:
                status, answer_headers, answer = client.call(method, path, body, headers)
            except (OSError, http.client.HTTPException):
                status, answer_headers, answer = 0, {}, None
            good = status in ok
            with self.seen.lock:
                self.seen.answers[self.number].append((time.monotonic(), good))
                if status == 503:
                    self.seen.unavailable += 1
                    if "Retry-After" not in answer_headers:
                        self.seen.without_retry_after += 1
                elif status == 0:
                    self.seen.unanswered += 1
                elif not good:
                    self.seen.unexpected.append(f"{method} {path}: {status} {answer}")
            if good:
                return status, answer_headers, answer
            if status not in (0, 503):
                raise AssertionError(f"{method} {path}: {status} {answer}")
            if time.monotonic() - started > GIVE_UP:
                raise AssertionError(f"{method} {path}: unanswered for {GIVE_UP} s")
            time.sleep(0.1)

    def _play(self, client: Http, player: Player) -> None:
        _status, _headers, body = self._call(client, "POST", "/v1/players",
                                             {"name": f"P{player.number}"}, {}, (201,))
        player.id, player.token = body["player"]["id"], body["player_token"]
        headers = auth(player.token)
        # An attempt sent again finds the first one's game: 409 with its Location.
        status, answer_headers, body = self._call(
            client, "POST", f"/v1/daily/{player.variant}/{self.day}", None, headers,
            (201, 409))
        if status == 409:  # a retry of an attempt whose first answer was lost
            assert body["code"] == "attempt_taken", body
            player.game_id = answer_headers["Location"].rsplit("/", 1)[1]
        else:
            player.game_id = body["game"]["id"]
        for number, move in enumerate(player.line):
            _status, _headers, body = self._call(
                client, "POST", f"/v1/games/{player.game_id}/moves", move,
                {**headers, "Idempotency-Key": f"move-{number}"}, (200,))
            player.acknowledged += 1
            player.status = body["game"]["status"]
            if player.status != "playing":
                break
        assert player.status != "playing", player
        with self.seen.lock:
            self.seen.ended += 1
            player.ended_at = time.monotonic()


def _ranked_ends_waiting(services) -> int:
    """The ``ranked-ended`` events in the outboxes, once the slots answer again."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return sum(RANKED_ENDED in services.store.outbox(game_id)
                       for game_id in services.store.pending_outboxes())
        except StorageUnavailable:
            assert time.monotonic() < deadline, "the slots did not answer within 30 s"
            time.sleep(0.2)


def _epoch_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.mark.timeout(180)
def test_the_board_s_master_dies_mid_day_and_every_game_is_on_the_board_once(tmp_path):
    started = time.monotonic()
    # A day that began twelve hours ago: the test never straddles its end.
    offset = int(time.time() - 43200) % 86400
    settings = {"DAILY_ACCOUNT_RULE": "any", "WINNABLE_SEARCH_SECONDS": "0",
                "DAILY_OFFSET_SECONDS": str(offset)}
    seeds = {"four-corners": FOUR_CORNERS_SEED}
    lines = {"four-corners": [move.to_dict() for move, _card in four_corners_line()]}
    for variant in ("clock", "salic-law"):
        seeds[variant], lines[variant] = losing_line(variant)
    cluster = LocalCluster(tmp_path / "cluster", masters=3, replicas=2, node_timeout_ms=1000)
    with cluster:
        app = make_app(cluster.url, **settings)
        try:
            _run(app, cluster, tmp_path, settings, seeds, lines, started)
        finally:
            close_app(app)
        assert 500 not in app.statuses


def _players(lines: dict[str, list[dict]]) -> list[Player]:
    """The players, those with the long lines first (so that they do not make the
    tail): the winners, the losers, then the others (0 to 3 moves of the variant's
    line, then a resign)."""
    resign = {"type": "resign"}
    found = []
    for number in range(PLAYERS):
        variant = VARIANTS[number % len(VARIANTS)]
        rank = number // len(VARIANTS)
        playing_out = WINNERS if variant == "four-corners" else LOSERS
        line = lines[variant] if rank < playing_out \
            else [*lines[variant][:number % 4], resign]
        found.append(Player(number, variant, line))
    return sorted(found, key=lambda player: -len(player.line))


def _run(app, cluster: LocalCluster, tmp_path, settings: dict, seeds: dict, lines: dict,
         started: float) -> None:
    services = app.services
    for variant, seed in seeds.items():  # each day's deal, taken from its pool
        services.solver_store.add_seed(variant, seed)
    assert services.daily.prepare() == 3
    day = services.daily.calendar.day_id(services.daily.today())
    victim = cluster.node_of_slot(key_slot(keys.daily("clock", "x").encode()))
    players = _players(lines)
    work: queue.Queue = queue.Queue()
    for player in players:
        work.put(player)
    seen = Seen()
    with Server(cluster.url, tmp_path / "gunicorn.log", workers=2, threads=16,
                **settings) as server:
        clients = [Client(number, server.port, work, seen, day) for number in range(CLIENTS)]
        for client in clients:
            client.start()
        while seen.ended < KILL_AFTER * PLAYERS:
            assert any(client.is_alive() for client in clients), \
                [client.error for client in clients]
            time.sleep(0.02)
        killed = time.monotonic()
        ended_before_kill = seen.ended
        victim.kill()  # for good
        for client in clients:
            client.join(120)
            assert not client.is_alive()
            if client.error is not None:
                raise client.error
    # What a failure left in an outbox: the solver's sweep applies it, once.
    # The ranked games' ends whose board write failed while the board's slot failed
    # over: acknowledged with the game's write, left in the outbox.
    waiting = _ranked_ends_waiting(services)
    deadline, swept = time.monotonic() + 30, 0
    while True:
        try:
            swept += services.projector.sweep()
            if not services.store.pending_outboxes():
                break
        except StorageUnavailable:
            pass
        assert time.monotonic() < deadline, "the outboxes were not emptied within 30 s"
        time.sleep(0.2)
    assert swept >= waiting  # each waiting end applied by the sweep (and counted below)

    client = app.test_client()  # every answer checked against openapi.yaml
    games = {player.game_id: player for player in players}
    assert len(games) == PLAYERS
    # Every board: each ended game once, nothing else.
    on_board: dict[str, dict] = {}
    twice = 0
    for variant in VARIANTS:
        cursor, count, listed = None, None, 0
        while True:
            query = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = client.get(f"/v1/daily/{variant}/{day}/board", query_string=query)
            assert page.status_code == 200, page.get_data(as_text=True)
            page = page.get_json()
            count = page["count"]
            for entry in page["entries"]:
                listed += 1
                if entry["game_id"] in on_board:
                    twice += 1
                on_board[entry["game_id"]] = {**entry, "variant": variant}
            cursor = page["next_cursor"]
            if cursor is None:
                break
        expected = sum(1 for player in players if player.variant == variant)
        assert (count, listed) == (expected, expected), variant
    missing = set(games) - set(on_board)
    stray = set(on_board) - set(games)
    assert (len(missing), twice, len(stray)) == (0, 0, 0)

    # Each entry's figures, recomputed from its game's own record.
    outcomes: dict[str, int] = {}
    for game_id, player in games.items():
        entry = on_board[game_id]
        answer = client.get(f"/v1/games/{game_id}", headers=auth(player.token))
        assert answer.status_code == 200, answer.get_data(as_text=True)
        record = answer.get_json()
        result = record["ranked"]["result"]
        outcome = record["status"]
        home = sum(pile["count"] for pile in record["piles"] if pile["kind"] == "foundation")
        took = _epoch_ms(record["updated_at"]) - _epoch_ms(record["created_at"])
        figures = {"outcome": outcome, "moves": record["moves_made"], "time_ms": took,
                   "cards_home": home, "score": score(outcome, record["moves_made"], took, home)}
        assert {name: result[name] for name in figures} == figures, game_id
        assert {name: entry[name] for name in figures} == figures, game_id
        assert (entry["player_id"], entry["variant"]) == (player.id, player.variant)
        assert record["moves_made"] == player.acknowledged, game_id  # none lost, none twice
        assert outcome == player.status
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes == {"won": WINNERS, "lost": 2 * LOSERS,
                        "resigned": PLAYERS - WINNERS - 2 * LOSERS}

    # The outage was seen, answered 503 with Retry-After (or not at all), and each
    # client was back within the bound.
    assert 0 < ended_before_kill < PLAYERS
    # Games of the killed board's variant ended on both sides of the kill.
    clock = [player.ended_at > killed for player in players if player.variant == "clock"]
    assert 0 < sum(clock) < len(clock)
    assert seen.unavailable + seen.unanswered > 0
    assert seen.without_retry_after == 0
    assert seen.unexpected == []
    recoveries = []
    for answers in seen.answers.values():
        failed = [at for at, good in answers if not good and at >= killed]
        if failed:
            back = next(at for at, good in answers if good and at > failed[-1])
            recoveries.append(back - killed)
    assert recoveries, "no client saw the outage"
    print(f"{PLAYERS} players, {ended_before_kill} games ended before the kill; "
          f"{seen.unavailable} answers 503, {seen.unanswered} unanswered; "
          f"{len(recoveries)} clients saw the outage, back within "
          f"{max(recoveries):.2f} s of the kill; {waiting} ranked games' ends left in "
          f"their outboxes, {swept} outbox events swept after; "
          f"outcomes {outcomes}; "
          f"{time.monotonic() - started:.1f} s in all")
    assert max(recoveries) <= RECOVERY_BOUND
