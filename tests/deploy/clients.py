"""Clients of a deployment, through its published port only: a player who plays a whole
game, and players who keep writing (each write with an Idempotency-Key, retried with the
same key after a 503) and reading while the deployment loses parts, recording every
answer with its time; and what those records say of an outage, game by game
(:func:`recoveries`).  Accounts (``POST /v1/players``) that own games, create and resign
them while the deployment loses parts (:class:`Owners`), and what their lists and
statistics say against the games themselves (:func:`player_views`, :func:`tally`).  A
follower of a game's events that resumes as an EventSource does
(:class:`ResumingFollower`)."""

from __future__ import annotations

import http.client
import itertools
import json
import statistics
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from tests.deploy.figures import at_most, between, one_of, record
from tests.e2e.test_events_e2e import Follower
from tests.sse import Message, messages

#: A Clock deal that the player of :func:`play_whole_game` takes to its end (lost, after
#: 74 moves: the twelve foundations stall) in about 80 requests.
WHOLE_GAME = {"variant": "clock", "seed": 38}
MAX_MOVES = 400
#: Seconds the player may take for that game (about 160 requests; 2 to 5 s measured).
WHOLE_GAME_WITHIN = 60.0


def auth(token: str, **headers: str) -> dict:
    return {"Authorization": f"Bearer {token}", **headers}


def create(session: requests.Session, base: str, headers: dict | None = None,
           **fields) -> tuple[str, str]:
    answer = session.post(f"{base}/v1/games", json=fields, headers=headers, timeout=10)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["game"]["id"], body["player_token"]


def _choose(moves: list[dict]) -> dict | None:
    """A card onto a foundation if one can go, else refill, draw or deal, else the first
    listed card move; never resign."""
    for move in moves:
        if move["type"] == "move" and move["to"].startswith("foundation-"):
            return move
    for kind in ("refill", "draw", "deal"):
        for move in moves:
            if move["type"] == kind:
                return move
    return next((move for move in moves if move["type"] == "move"), None)


def play_whole_game(session: requests.Session, base: str, game_id: str,
                    token: str) -> tuple[dict, int]:
    """Plays the game to its end from the moves the API lists (each move sent as listed,
    with If-Match of the version it was chosen at).  Returns the final game and the
    number of moves."""
    version = 0
    for _ in range(MAX_MOVES):
        listing = session.get(f"{base}/v1/games/{game_id}/moves", timeout=10)
        assert listing.status_code == 200, listing.text
        move = _choose(listing.json()["moves"])
        assert move is not None, "no move left but the game goes on"
        answer = session.post(f"{base}/v1/games/{game_id}/moves", json=move,
                              headers=auth(token, **{"If-Match": f'"{version}"'}), timeout=10)
        assert answer.status_code == 200, answer.text
        game = answer.json()["game"]
        assert game["version"] == version + 1
        version = game["version"]
        if game["status"] != "playing":
            return game, version
    raise AssertionError(f"{game_id} still playing after {MAX_MOVES} moves")


def play_followed_game(session: requests.Session, base: str,
                       section: str) -> tuple[str, dict, list]:
    """:data:`WHOLE_GAME` created, followed over Server-Sent Events and played to its end
    (:func:`play_whole_game`, its time recorded under ``section``): the stream gives every
    version once, in order, then the end with the final game.  Returns the game's id, the
    final game and the stream's events."""
    game_id, token = create(session, base, **WHOLE_GAME)
    follower = Follower(f"{base}/v1/games/{game_id}/events")
    follower.start()
    assert follower.opened.wait(15), "the stream did not open"
    started = time.monotonic()
    final, moves = play_whole_game(session, base, game_id, token)
    name = f"whole_game ({WHOLE_GAME['variant']} seed {WHOLE_GAME['seed']})"
    record(section, **{f"{name}: status": (final["status"], one_of("won", "lost")),
                       f"{name}: moves": (moves, between(1, MAX_MOVES)),
                       f"{name}: seconds": (round(time.monotonic() - started, 1),
                                            at_most(WHOLE_GAME_WITHIN))})
    follower.join(30)
    assert not follower.is_alive(), "the stream did not end with the game"
    assert follower.error is None, repr(follower.error)
    events = follower.events()
    assert [message.event for message in events] == ["move"] * moves + ["end"]
    assert [message.json()["version"] for message in events[:-1]] == list(range(1, moves + 1))
    assert events[-1].json()["game"]["status"] == final["status"]
    return game_id, final, events


@dataclass
class Answer:
    """One request of a :class:`Player`: when (monotonic), what, and how it ended."""

    started: float
    ended: float
    game: str
    kind: str  # "read" or "write"
    status: int | None  # None: no HTTP answer (the error says why)
    retry_after: str | None = None
    error: str | None = None
    #: Sent a second time: the first went on a kept-alive connection that closed before
    #: any byte of its answer arrived.
    resent: bool = False
    #: (Its last sending) went on a connection kept alive from an earlier request.
    kept_alive: bool = False

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def acceptable_failure(self) -> bool:
        """503 with Retry-After: what the service promises while a part is down."""
        return self.status == 503 and self.retry_after is not None


@dataclass
class Game:
    id: str
    token: str
    acknowledged: int = 0  # writes answered 200, each once
    next_write: str = "deal"
    pending_key: str | None = None  # a write answered otherwise: sent again with this key
    keys: set = field(default_factory=set)


@dataclass
class Account:
    """A player's account (``POST /v1/players``): its token, the games whose create was
    acknowledged to it (answered 201) with their own tokens, and what it has still to do
    (:class:`Owners`): ``("create", variant)``, or ``("resign", the number of one of its
    games)`` sent with the player's token, or ``("resign with the game's token",
    number)`` (another device holding the game's own token)."""

    id: str
    token: str
    games: list[str] = field(default_factory=list)
    game_tokens: dict[str, str] = field(default_factory=dict)
    plan: list[tuple[str, object]] = field(default_factory=list)
    pending_key: str | None = None  # a step answered otherwise: sent again with this key
    refused: int = 0  # steps answered 503 with Retry-After (then sent again)


def register(session: requests.Session, base: str, name: str) -> Account:
    answer = session.post(f"{base}/v1/players", json={"name": name}, timeout=10)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return Account(body["player"]["id"], body["player_token"])


def register_many(base: str, count: int, threads: int = 4) -> list[Account]:
    """``count`` accounts, registered by ``threads`` clients at once."""
    def some(numbers: range) -> list[Account]:
        with requests.Session() as session:
            return [register(session, base, f"Player {number}") for number in numbers]

    with ThreadPoolExecutor(threads) as pool:
        shares = pool.map(some, [range(number, count, threads) for number in range(threads)])
        return [account for share in shares for account in share]


def salic_law_games(session: requests.Session, base: str, count: int,
                    owners: list[Account] | None = None) -> list[Game]:
    """Salic Law games with full undo: a player can deal and take it back for ever.  With
    ``owners``, game number n is created by ``owners[n]`` (its player token, an
    Idempotency-Key) and is theirs; the game's own token plays it all the same."""
    games = []
    for number in range(count):
        owner = owners[number] if owners else None
        headers = None if owner is None else auth(owner.token,
                                                  **{"Idempotency-Key": uuid.uuid4().hex})
        game_id, token = create(session, base, headers, variant="salic-law",
                                seed=1000 + number, undo="full")
        if owner is not None:
            owner.games.append(game_id)
        games.append(Game(game_id, token))
    return games


class _Counted:
    """A response's file object that counts the bytes read from it."""

    def __init__(self, raw):
        self.raw = raw
        self.count = 0

    def _counted(self, data):
        self.count += len(data)
        return data

    def readline(self, *args):
        return self._counted(self.raw.readline(*args))

    def read(self, *args):
        return self._counted(self.raw.read(*args))

    def read1(self, *args):
        return self._counted(self.raw.read1(*args))

    def readinto(self, buffer):
        size = self.raw.readinto(buffer)
        self.count += size or 0
        return size

    def __getattr__(self, name):
        return getattr(self.raw, name)


class Connection(http.client.HTTPConnection):
    """One HTTP/1.1 connection, kept alive between requests, that tells of its last
    request how many bytes of the answer arrived (:attr:`received`, even when reading
    the answer failed)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.received: _Counted | None = None

    def response_class(self, sock, *args, **kwargs):
        response = http.client.HTTPResponse(sock, *args, **kwargs)
        self.received = response.fp = _Counted(response.fp)
        return response

    @property
    def kept_alive(self) -> bool:
        """The next request goes on the connection of an earlier one."""
        return self.sock is not None

    def exchange(self, method: str, path: str, body: bytes | None,
                 headers: dict) -> tuple[http.client.HTTPResponse, bytes]:
        """Sends one request: the response and its body."""
        self.received = None
        self.request(method, path, body=body, headers=headers)
        response = self.getresponse()
        return response, response.read()

    @property
    def bytes_received(self) -> int:
        return 0 if self.received is None else self.received.count


class Player(threading.Thread):
    """Plays ``games`` in turn until ``stop`` is set: reads the game, then writes (a
    ``deal``, then its undo, and so on), every write with an Idempotency-Key.  A write not
    answered 200 is sent again with the same key (after ``pause``) before that game's
    next write: so the game's version at the end must be the number of writes answered
    200."""

    def __init__(self, base: str, games: list[Game], stop: threading.Event,
                 pause: float = 0.1, timeout: float = 10.0):
        super().__init__(daemon=True)
        self.base, self.games, self.stop, self.pause = base, games, stop, pause
        self.timeout = timeout
        self.answers: list[Answer] = []
        address = urlsplit(base)
        self.connection = Connection(address.hostname, address.port, timeout=timeout)
        self.body: bytes | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for game in itertools.cycle(self.games):
                if self.stop.is_set():
                    return
                self.read(game)
                self.write(game)
        except BaseException as error:  # the test reports it
            self.error = error
        finally:
            self.connection.close()

    def _request(self, game_id: str, kind: str, method: str, path: str,
                 body: dict | None = None, headers: dict | None = None) -> Answer:
        """One request; sent once more, as browsers do, only if it went on a kept-alive
        connection that closed before any byte of its answer arrived (a read, or a write
        with its Idempotency-Key: safe to send again).  Such a close is HTTP's own race,
        not a refusal: either side may close an idle connection at any time, and a
        request sent as it closes gets no answer.  Anything else (a new connection
        refused or closed, a timeout, a partial answer) is a failure.  The answer says
        whether it was sent again; the body of the last answer is :attr:`body` (None
        without one)."""
        started = time.monotonic()
        self.body = None
        data = None if body is None else json.dumps(body).encode()
        headers = {**(headers or {}), **({"Content-Type": "application/json"} if data else {})}
        for resent in (False, True):
            reused = self.connection.kept_alive
            try:
                response, content = self.connection.exchange(method, path, data, headers)
            except (OSError, http.client.HTTPException) as error:
                self.connection.close()
                if (not resent and reused and isinstance(error, ConnectionError)
                        and self.connection.bytes_received == 0):
                    continue
                answer = Answer(started, time.monotonic(), game_id, kind, None,
                                error=f"{type(error).__name__}: {error}", resent=resent,
                                kept_alive=reused)
            else:
                self.body = content
                answer = Answer(started, time.monotonic(), game_id, kind, response.status,
                                response.getheader("Retry-After"),
                                None if response.status == 200
                                else content.decode(errors="replace")[:300],
                                resent=resent, kept_alive=reused)
            break
        self.answers.append(answer)
        return answer

    def read(self, game: Game) -> Answer:
        return self._request(game.id, "read", "GET", f"/v1/games/{game.id}")

    def write(self, game: Game) -> Answer:
        key = game.pending_key or uuid.uuid4().hex
        game.keys.add(key)
        headers = auth(game.token, **{"Idempotency-Key": key})
        if game.next_write == "deal":
            answer = self._request(game.id, "write", "POST", f"/v1/games/{game.id}/moves",
                                   body={"type": "deal"}, headers=headers)
        else:
            answer = self._request(game.id, "write", "POST", f"/v1/games/{game.id}/undo",
                                   headers=headers)
        if answer.ok:
            game.acknowledged += 1
            game.pending_key = None
            game.next_write = "undo" if game.next_write == "deal" else "deal"
        else:
            game.pending_key = key
            time.sleep(self.pause)
        return answer

    def settle(self, seconds: float = 30.0) -> None:
        """Sends every pending write again until it is answered 200."""
        deadline = time.monotonic() + seconds
        for game in self.games:
            while game.pending_key is not None:
                assert time.monotonic() < deadline, f"{game.id}: a write still unanswered"
                self.write(game)


def writes_taken(base: str, creates: int = 16) -> bool:
    """``creates`` games created in a row, each answered 201 (random ids: 16 reach all
    three shards of a cluster but for a 0.2 % chance); False at the first answered 503
    with Retry-After (a shard not ready for writes yet), the only other answer allowed."""
    with requests.Session() as session:
        for _ in range(creates):
            answer = session.post(f"{base}/v1/games", json={"variant": "clock"}, timeout=10)
            if answer.status_code != 201:
                assert answer.status_code == 503, answer.text
                assert answer.headers.get("Retry-After"), answer.headers
                return False
    return True


def run_players(base: str, games: list[Game], threads: int, *, pause: float = 0.1):
    """``threads`` players sharing ``games`` out (each game played by one of them)."""
    stop = threading.Event()
    players = [Player(base, games[number::threads], stop, pause=pause)
               for number in range(threads)]
    for player in players:
        player.start()
    return stop, players


def stop_players(stop: threading.Event, players: list[Player]) -> list[Answer]:
    stop.set()
    for player in players:
        player.join(60)
        assert not player.is_alive(), "a player did not stop"
        assert player.error is None, repr(player.error)
    for player in players:
        player.settle()
    return sorted((answer for player in players for answer in player.answers),
                  key=lambda answer: answer.started)


class Owners(Player):
    """Accounts doing their plans (:class:`Account`), in turn, one step of each at a
    time, ``pause`` apart: a create (``POST /v1/games`` with the account's token) or a
    resignation (``POST .../moves`` ``resign``, with the account's token or the game's
    own), each with an Idempotency-Key.  A step not acknowledged (201 for a create, 200
    for a resignation) is sent again with the same key at the account's next turn, until
    it is: so a game is the account's once, whatever was refused meanwhile.  Every
    answer is kept (:attr:`answers`, the account's id for a create's game).  With
    ``go``, they begin once it is set."""

    def __init__(self, base: str, accounts: list[Account], pause: float = 0.05,
                 seconds: float = 90.0, go: threading.Event | None = None):
        super().__init__(base, [], threading.Event(), pause=pause)
        self.accounts, self.seconds, self.go = accounts, seconds, go

    def run(self) -> None:
        if self.go is not None:
            self.go.wait(self.seconds)
        deadline = time.monotonic() + self.seconds
        try:
            while any(account.plan for account in self.accounts):
                for account in self.accounts:
                    if account.plan:
                        assert time.monotonic() < deadline, \
                            f"{account.id}: still {account.plan} after {self.seconds} s"
                        self.step(account)
                        time.sleep(self.pause)
        except BaseException as error:  # the test reports it
            self.error = error
        finally:
            self.connection.close()

    def step(self, account: Account) -> Answer:
        kind, argument = account.plan[0]
        key = account.pending_key or uuid.uuid4().hex
        headers = auth(account.token, **{"Idempotency-Key": key})
        if kind == "create":
            answer = self._request(account.id, "create", "POST", "/v1/games",
                                   body={"variant": argument}, headers=headers)
            done = answer.status == 201
            if done:
                created = json.loads(self.body)
                account.games.append(created["game"]["id"])
                account.game_tokens[created["game"]["id"]] = created["player_token"]
        else:
            game_id = account.games[argument]
            if kind != "resign":
                headers = auth(account.game_tokens[game_id], **{"Idempotency-Key": key})
            answer = self._request(game_id, "resign", "POST", f"/v1/games/{game_id}/moves",
                                   body={"type": "resign"}, headers=headers)
            done = answer.ok
        if done:
            account.plan.pop(0)
            account.pending_key = None
        else:
            account.pending_key = key
            account.refused += answer.acceptable_failure
        return answer


def run_owners(base: str, accounts: list[Account], threads: int, *, pause: float = 0.05,
               go: threading.Event | None = None) -> list[Owners]:
    """``threads`` :class:`Owners` sharing ``accounts`` out, started (doing their plans
    once ``go`` is set, when given)."""
    owners = [Owners(base, accounts[number::threads], pause=pause, go=go)
              for number in range(threads)]
    for owner in owners:
        owner.start()
    return owners


def join_owners(owners: list[Owners], seconds: float = 90.0) -> list[Answer]:
    deadline = time.monotonic() + seconds
    for owner in owners:
        owner.join(max(0.0, deadline - time.monotonic()))
        assert not owner.is_alive(), "an account's plan is not done"
        assert owner.error is None, repr(owner.error)
    return sorted((answer for owner in owners for answer in owner.answers),
                  key=lambda answer: answer.started)


def _shared(base: str, items: list, read, threads: int) -> list:
    """``read(session, item)`` of every item, by ``threads`` clients at once, in order."""
    def some(share: list) -> list:
        with requests.Session() as session:
            return [read(session, item) for item in share]

    shares = [items[number::threads] for number in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(some, shares))
    found = [None] * len(items)
    for number, share in enumerate(answers):
        found[number::threads] = share
    return found


#: The figures of a player's statistics (per variant) that :func:`tally` counts.
COUNTED = ("played", "won", "lost", "resigned", "in_play")


def _player_view(base: str):
    def read(session: requests.Session, account: Account) -> tuple[list[dict], dict]:
        listing = session.get(f"{base}/v1/players/me/games",
                              headers=auth(account.token, Accept="application/x-ndjson"),
                              timeout=30)
        assert listing.status_code == 200, listing.text
        summaries = [json.loads(line) for line in listing.text.splitlines() if line.strip()]
        stats = session.get(f"{base}/v1/players/me/stats", headers=auth(account.token),
                            timeout=10)
        assert stats.status_code == 200, stats.text
        return summaries, {entry["variant"]: {name: entry[name] for name in COUNTED}
                           for entry in stats.json()["variants"]}
    return read


def player_views(base: str, accounts: list[Account],
                 threads: int = 4) -> dict[str, tuple[list[dict], dict]]:
    """Each account's list of games (every summary, as NDJSON: one request) and
    statistics (the :data:`COUNTED` figures per variant), as the service answers now."""
    views = _shared(base, accounts, _player_view(base), threads)
    return {account.id: view for account, view in zip(accounts, views, strict=True)}


def read_games(base: str, game_ids: list[str], threads: int = 4) -> dict[str, dict]:
    """Each game as the service reads it now."""
    def read(session: requests.Session, game_id: str) -> dict:
        answer = session.get(f"{base}/v1/games/{game_id}", timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()

    return dict(zip(game_ids, _shared(base, game_ids, read, threads), strict=True))


def tally(games: list[dict]) -> dict[str, dict[str, int]]:
    """The :data:`COUNTED` figures per variant recomputed from ``games`` themselves."""
    counts: dict[str, Counter] = {}
    for game in games:
        counted = counts.setdefault(game["variant"], Counter())
        if game["status"] == "playing":
            counted["in_play"] += 1
        else:
            counted[game["status"]] += 1
            counted["played"] += 1
    return {variant: {name: counted[name] for name in COUNTED}
            for variant, counted in counts.items()}


def versions(base: str, games: list[Game]) -> dict[str, int]:
    """Each game's version as the service reads it now."""
    found = {}
    with requests.Session() as session:
        for game in games:
            answer = session.get(f"{base}/v1/games/{game.id}", timeout=10)
            assert answer.status_code == 200, answer.text
            found[game.id] = answer.json()["version"]
    return found


def summary(answers: list[Answer]) -> dict:
    """Counts and latencies of ``answers``."""
    failed = [answer for answer in answers if not answer.ok]
    latencies = sorted(answer.seconds for answer in answers)
    return {
        "requests": len(answers),
        "failed": len(failed),
        "answered_503_with_retry_after": sum(a.acceptable_failure for a in failed),
        "sent_again": sum(a.resent for a in answers),
        # The share of requests that went on a kept-alive connection: the only ones
        # that may be sent again.
        "kept_alive_share": round(sum(a.kept_alive for a in answers) / len(answers), 2)
                            if answers else None,
        "other_failures": [f"{a.kind} {a.status} {a.error}" for a in failed
                           if not a.acceptable_failure][:10],
        "max_latency_s": round(latencies[-1], 3) if latencies else None,
        "median_latency_s": round(latencies[len(latencies) // 2], 4) if latencies else None,
    }


def recoveries(answers: list[Answer], games: set[str], kind: str) -> dict[str, float | None]:
    """Game by game (of ``games``) whose requests of ``kind`` failed, from its own
    requests: when (monotonic) they were answered again, the end of its first success
    after its last failure (None: no success after it).  A game whose requests of
    ``kind`` never failed is left out."""
    logs: dict[str, list[Answer]] = {}
    for answer in sorted(answers, key=lambda answer: answer.started):
        if answer.game in games and answer.kind == kind:
            logs.setdefault(answer.game, []).append(answer)
    found = {}
    for game, log in logs.items():
        failures = [number for number, answer in enumerate(log) if not answer.ok]
        if failures:
            found[game] = next((answer.ended for answer in log[failures[-1] + 1:]
                                if answer.ok), None)
    return found


def spread(seconds: list[float]) -> tuple[float | None, float | None]:
    """The largest and the median of ``seconds``, rounded (None, None for none)."""
    if not seconds:
        return None, None
    return round(max(seconds), 2), round(statistics.median(seconds), 2)


#: Seconds a :class:`ResumingFollower` waits before it reconnects (an EventSource waits
#: the `retry:` hint, 3000 ms; a client may come back sooner).
RECONNECT_AFTER = 0.5


class ResumingFollower(threading.Thread):
    """Follows a game's events through the load balancer as an EventSource does: when
    its stream ends or a connection fails it reconnects, with ``Last-Event-ID`` once it
    has an event; it stops at the game's ``deleted`` event (or a 404, the same news).
    Each event is kept with the time it came, and each failure with its time."""

    def __init__(self, base: str, game_id: str):
        super().__init__(daemon=True)
        self.url = f"{base}/v1/games/{game_id}/events"
        self.game_id = game_id
        self.events: list[Message] = []
        self.times: list[float] = []
        self.failures: list[tuple[float, str]] = []
        self.opened = threading.Event()
        self.error: BaseException | None = None

    def run(self):
        try:
            while not self._follow():
                time.sleep(RECONNECT_AFTER)
        except BaseException as error:  # the test reports it
            self.error = error
        finally:
            self.opened.set()

    def _follow(self) -> bool:
        """One stream: True once the game is deleted, False when the stream ended or
        could not be opened (a failure recorded)."""
        headers = {"Accept": "text/event-stream"}
        if self.events:
            headers["Last-Event-ID"] = self.events[-1].id
        try:
            with requests.get(self.url, headers=headers, stream=True,
                              timeout=(5, 30)) as response:
                if response.status_code == 404:
                    return True
                if response.status_code != 200:
                    self.failures.append((time.monotonic(), f"answered {response.status_code}"))
                    return False
                for message in messages(response.iter_content(chunk_size=None)):
                    if message.retry is not None:
                        self.opened.set()
                    if message.event == "deleted":
                        return True
                    if message.event is not None:
                        self.events.append(message)
                        self.times.append(time.monotonic())
            self.failures.append((time.monotonic(), "ended"))
        except requests.RequestException as error:
            self.failures.append((time.monotonic(), type(error).__name__))
        return False

    def resumed(self) -> float | None:
        """When the first event came after the last failure (None without failures)."""
        if not self.failures:
            return None
        last = self.failures[-1][0]
        return next((moment for moment in self.times if moment > last), None)
