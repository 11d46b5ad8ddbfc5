"""The daily deal: :class:`Daily`, what each ``/v1/daily`` endpoint does, and the
projection of a ranked game's end onto its day's board (docs/daily.md).

- **The day's deal** is chosen once per variant and day and stored in the board's slot
  (``SET NX``), taken out of the variant's pool of proved-winnable seeds so that no one
  is ever dealt it unranked.  The Clock and Salic Law: when the pool is empty, a short
  search (``WINNABLE_SEARCH_SECONDS``), else 503 ``daily_deal_unavailable`` with
  Retry-After (the worker fills the pool).  Four Corners: the pool's seed when it has
  one, else a random deal, not proved winnable (``"winnable": false``).  The day's salt
  is every ranked game's of the day: one commitment for all its players.
- **An attempt** (:meth:`Daily.attempt`) is decided by ``HSETNX`` in the day's attempts
  (player -> game id); the ranked game is then created with that id.
- **The board** is written by the script of :meth:`Daily.ended_call` alone (sent
  with the player's ``ended`` by the projector), the handler of the
  ``ranked-ended`` outbox event that a ranked game's end writes with the game
  (:mod:`service.players.projection` applies it, the worker sweeps what is left).
- **The close** (:meth:`Daily.close_due`, the solver's worker): past a day's end and
  ``DAILY_CLOSE_GRACE_SECONDS``, every ranked game of the day still in play is
  abandoned, a normal game write whose end reaches the board the same way.  Days older
  than ``DAILY_KEEP_DAYS`` are trimmed.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from service.daily.calendar import Calendar
from service.engine import Variant, get_variant, variants
from service.game.application import Games
from service.game.errors import GameError
from service.game.idempotency import Reply
from service.game.pipeline import RANKED_ENDED, Write
from service.game.record import deal_commitment, epoch_ms, iso_ms, now_ms
from service.players.accounts import OIDC
from service.players.projection import Projector
from service.storage import keys
from service.storage.backend import Call
from service.storage.daily_store import BODIES, ROWS, DailyStore
from service.storage.player_store import PlayerStore
from service.storage.solver import SolverStore

log = logging.getLogger("patience.daily")

#: ``DAILY_ACCOUNT_RULE``: who may play ranked.
BEFORE_DAY, ANY = "before-day", "any"
ACCOUNT_RULES = (BEFORE_DAY, ANY)
#: The variant whose day's deal may be one not proved winnable.
FOUR_CORNERS = "four-corners"
#: Attempts read per round trip when a day closes (why this many: docs/performance.md,
#: "The close of a day").
CLOSE_BATCH = 2000
#: Seconds an attempt that found the pool empty looks for the deal a racing attempt
#: is storing, and how often.
RACE_WAIT, RACE_POLL = 0.5, 0.05


@dataclass(frozen=True, slots=True)
class BoardPage:
    """A board's answer as the store gives it: its fields before ``entries``
    (``head``), the entries' JSON as the answer gives them (each with its rank and
    ``game_url``), joined by commas, never decoded, and its fields after (``tail``)."""

    head: dict
    entries: bytes
    tail: dict


@dataclass(frozen=True, slots=True)
class DailySettings:
    calendar: Calendar
    account_rule: str = BEFORE_DAY
    close_grace_seconds: int = 300
    keep_days: int = 400
    live_top: int = 10

    @classmethod
    def from_config(cls, config) -> DailySettings:
        rule = config["DAILY_ACCOUNT_RULE"]
        if rule not in ACCOUNT_RULES:
            raise ValueError(f"DAILY_ACCOUNT_RULE must be one of {ACCOUNT_RULES}, "
                             f"not {rule!r}")
        return cls(Calendar(int(config["DAILY_PERIOD_SECONDS"]),
                            int(config["DAILY_OFFSET_SECONDS"])),
                   rule, int(config["DAILY_CLOSE_GRACE_SECONDS"]),
                   int(config["DAILY_KEEP_DAYS"]), int(config["DAILY_LIVE_TOP"]))


def day_not_found(day: str) -> GameError:
    return GameError(404, "day_not_found", f"{day!r} is no day of the daily deal")


def _variant(variant_id: str) -> Variant:
    try:
        return get_variant(variant_id)
    except Exception:
        raise GameError(404, "not_found", f"there is no variant {variant_id!r}") from None


class Daily:
    """The daily deals, attempts and boards.  ``search(variant)``: a seed the solver
    proves winnable within the creation's search budget, or None (the composition root
    gives the solver's)."""

    def __init__(self, store: DailyStore, games: Games, players: PlayerStore,
                 pools: SolverStore, settings: DailySettings,
                 search: Callable[[Variant], int | None] = lambda _variant: None,
                 projector: Projector | None = None):
        self.store = store
        #: What applies the outbox events of the games a close abandons, together.
        self.projector = projector
        self.games = games
        self.players = players
        self.pools = pools
        self.settings = settings
        self.calendar = settings.calendar
        self.search = search

    # --- days ------------------------------------------------------------------------
    def today(self) -> int:
        return self.calendar.index(now_ms())

    def _day(self, day_id: str) -> int:
        index = self.calendar.parse(day_id)
        if index is None:
            raise day_not_found(day_id)
        return index

    def _deal(self, variant: Variant, day_id: str, index: int, *, choose: bool,
              before_search: Callable[[], None] | None = None
              ) -> tuple[int, str, bool] | None:
        """The day's deal (seed, salt, winnable), chosen now if it has none and
        ``choose``; ``before_search`` is called before the wait for a racing attempt's
        deal and the search that an empty pool calls for."""
        found = self.store.deal(variant.id, day_id)
        if found is not None or not choose:
            return found
        seed = self.pools.take_seed(variant.id)
        pooled = seed is not None
        if seed is None and before_search is not None:
            before_search()
        if seed is None and (chosen := self._chosen_meanwhile(variant, day_id)) is not None:
            return chosen
        if seed is None and variant.id != FOUR_CORNERS:
            seed = self.search(variant)
        winnable = seed is not None
        if seed is None:
            if variant.id != FOUR_CORNERS:
                raise GameError(503, "daily_deal_unavailable",
                                f"no deal of {variant.name} proved winnable is ready for "
                                "today yet; retry soon", headers={"Retry-After": "5"})
            seed = secrets.randbits(64)  # docs/daily.md: Four Corners' fallback
        salt = secrets.token_hex(16)
        if not self.store.set_deal(variant.id, day_id, index, seed, salt, winnable):
            if pooled:  # another request chose the day's deal first: never dealt
                self.pools.add_seed(variant.id, seed)
            return self.store.deal(variant.id, day_id)
        return seed, salt, winnable

    def _chosen_meanwhile(self, variant: Variant, day_id: str) -> tuple | None:
        """The day's deal that a racing request chose while this one found the pool
        empty (it popped the pool's seed and is about to store it): looked for for up to
        :data:`RACE_WAIT` seconds."""
        deadline = time.monotonic() + RACE_WAIT
        while True:
            found = self.store.deal(variant.id, day_id)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(RACE_POLL)

    def prepare(self) -> int:
        """Today's deal chosen for every variant whose pool can give one (the worker
        calls it: the commitment is public from the day's start): how many chosen."""
        index = self.today()
        day_id = self.calendar.day_id(index)
        chosen = 0
        for variant in variants():
            if self.store.deal(variant.id, day_id) is None \
                    and self.pools.pool_size(variant.id) > 0:
                self._deal(variant, day_id, index, choose=True)
                chosen += 1
        return chosen

    def overview(self) -> dict:
        """``GET /v1/daily``: today, and per variant its deal's commitment and counts."""
        index = self.today()
        day_id = self.calendar.day_id(index)
        rows = []
        for variant in variants():
            deal = self._deal(variant, day_id, index, choose=False)
            players, entries = self.store.counts(variant.id, day_id)
            rows.append({"variant": variant.id,
                         "deal_commitment": None if deal is None else
                         deal_commitment(variant.id, deal[0], deal[1]),
                         "players": players, "entries": entries,
                         "url": f"/v1/daily/{variant.id}/{day_id}"})
        return {"day": day_id, "start": iso_ms(self.calendar.start_ms(index)),
                "end": iso_ms(self.calendar.end_ms(index)), "variants": rows}

    def day(self, variant_id: str, day_id: str, viewer: str | None) -> dict:
        """``GET /v1/daily/{variant}/{day}``: the day, its deal's commitment (null until
        the deal is chosen: by the worker from the pool, or by the day's first attempt),
        its seed and salt once it is over."""
        variant = _variant(variant_id)
        index = self._day(day_id)
        today = self.today()
        if index > today:
            raise GameError(409, "day_not_open", f"the day {day_id} has not begun")
        over = index < today
        deal = self._deal(variant, day_id, index, choose=False)
        players, entries = self.store.counts(variant.id, day_id)
        attempt = None if viewer is None else self.store.attempt(variant.id, day_id, viewer)
        return {
            "variant": variant.id, "day": day_id,
            "start": iso_ms(self.calendar.start_ms(index)),
            "end": iso_ms(self.calendar.end_ms(index)), "open": not over,
            "deal_commitment": None if deal is None else
            deal_commitment(variant.id, deal[0], deal[1]),
            "winnable": None if deal is None else deal[2],
            "seed": deal[0] if deal is not None and over else None,
            "salt": deal[1] if deal is not None and over else None,
            "players": players, "entries": entries,
            "my_game": None if attempt is None else f"/v1/games/{attempt}",
        }

    # --- attempts ----------------------------------------------------------------------
    def attempt(self, variant_id: str, day_id: str, player: str, bearer: str,
                before_search: Callable[[], None] | None = None) -> Reply:
        """The player's ranked game of the day's deal: 201 with the game, once; 409
        ``attempt_taken`` (its Location) after.  ``before_search`` is called before the
        waits of a day's first attempt when the pool is empty (:meth:`_deal`)."""
        variant = _variant(variant_id)
        index = self._day(day_id)
        today = self.today()
        if index < today:
            raise GameError(409, "day_closed", f"the day {day_id} is over")
        if index > today:
            raise GameError(409, "day_not_open", f"the day {day_id} has not begun")
        self._check_account(player, index)
        seed, salt, winnable = self._deal(variant, day_id, index, choose=True,
                                          before_search=before_search)
        # The first attempt's id (a game there already: 409); one that a failure left
        # without its game is made now.
        game_id = self.store.take_attempt(variant.id, day_id, player,
                                          secrets.token_urlsafe(16))
        if self.games.store.exists(game_id):
            raise _attempt_taken(game_id)
        ranked = {"day": day_id, "index": index, "deadline_ms": self.calendar.end_ms(index)}
        try:
            return self.games.create_ranked(Write(bearer, None, None, None, player), game_id,
                                            variant.id, seed, salt, winnable=winnable,
                                            ranked=ranked)
        except GameError as error:
            if error.code == "write_conflict":  # a racing attempt of the player made it
                raise _attempt_taken(game_id) from None
            raise

    def _check_account(self, player: str, index: int) -> None:
        if self.settings.account_rule == ANY:
            return
        profile = self.players.profile(player) or {}
        if profile.get(keys.PLAYER_KIND) == OIDC:
            return
        created = profile.get(keys.PLAYER_CREATED)
        if created is None or epoch_ms(created) >= self.calendar.start_ms(index):
            raise GameError(403, "account_too_new",
                            "ranked play is open to accounts made before the day began")

    # --- the board's projection ------------------------------------------------------
    def ended_call(self, game_id: str, payload: bytes) -> Call:
        """The call of the board's script that writes a ranked game's end (the
        ``ranked-ended`` outbox event) to its day's board, week and streaks, once (the
        entry is its marker): the projector sends it with the player's ``ended`` and
        clears the event from the outbox once the replicas confirm both.  The player's
        name travels in the payload (an event written without it: read now)."""
        data = orjson.loads(payload)
        end = self._end(game_id, data, data["name"] if "name" in data else
                        self.players.names([data["player"]])[0])
        return self.store.project_call(
            end["variant"], end["day"], end["index"], end["week"], end["player"],
            end["entry"], end["score"], end["won"], end["moves"],
            live_top=self.settings.live_top)

    def apply_ended(self, game_id: str, payload: bytes) -> None:
        """:meth:`ended_call` run alone, confirmed by the replicas."""
        (outcome,) = self.players.run_calls([self.ended_call(game_id, payload)])
        log.info("board", extra={"game_id": game_id, "outcome": outcome})

    def apply_ended_many(self, ends: list[tuple[str, bytes]]) -> None:
        """:meth:`apply_ended` of many games (the close of a day): the players' names
        that their events lack read in one round trip per master, the entries written
        in one per variant."""
        decoded = [(game_id, orjson.loads(payload)) for game_id, payload in ends]
        unnamed = [data["player"] for _game_id, data in decoded if "name" not in data]
        read = iter(self.players.names(unnamed) if unnamed else [])
        names = [data["name"] if "name" in data else next(read)
                 for _game_id, data in decoded]
        by_variant: dict[str, list[dict]] = {}
        for (game_id, data), name in zip(decoded, names, strict=True):
            by_variant.setdefault(data["variant"], []).append(self._end(game_id, data, name))
        for batch in by_variant.values():
            self.store.project_many(batch, live_top=self.settings.live_top)

    def _end(self, game_id: str, data: dict, name: str | None) -> dict:
        """What the board's script takes of a ranked game's end."""
        entry = {"player_id": data["player"], "name": name, "game_id": game_id,
                 "outcome": data["outcome"], "moves": data["moves"],
                 "time_ms": data["time_ms"], "cards_home": data["cards_home"],
                 "score": data["score"], "ended_at": iso_ms(data["ended_ms"]),
                 "game_url": f"/v1/games/{game_id}"}
        return {"variant": data["variant"], "day": data["day"], "index": data["index"],
                "week": self.calendar.week_id(data["index"]), "player": data["player"],
                "entry": orjson.dumps(entry), "score": data["score"],
                "won": data["outcome"] == "won", "moves": data["moves"]}

    def handlers(self) -> dict[str, Callable[[str, bytes], Call]]:
        return {RANKED_ENDED: self.ended_call}

    def batch_handlers(self) -> dict[str, Callable[[list[tuple[str, bytes]]], None]]:
        return {RANKED_ENDED: self.apply_ended_many}

    # --- boards ------------------------------------------------------------------------
    def board(self, variant_id: str, day_id: str, *, limit: int, cursor: str | None
              ) -> BoardPage:
        variant = _variant(variant_id)
        self._day(day_id)
        return self._board_page(variant.id, day_id, limit, cursor,
                                {"variant": variant.id, "day": day_id})

    def week(self, variant_id: str, week_id: str, *, limit: int, cursor: str | None
             ) -> BoardPage:
        variant = _variant(variant_id)
        return self._board_page(variant.id, f"week:{week_id}", limit, cursor,
                                {"variant": variant.id, "week": week_id})

    def streaks(self, variant_id: str, *, limit: int, cursor: str | None) -> dict:
        variant = _variant(variant_id)
        today = self.today()
        page = self._board_page(variant.id, "streaks", limit, cursor,
                                {"variant": variant.id})
        return {**page.head, "entries": self._streak_entries(page.entries, today),
                **page.tail}

    def _streak_entries(self, entries: bytes, today: int) -> list[dict]:
        """The streaks' entries of an answer (``entries``: as :func:`answer_entries`
        makes them) decoded: their last day won's index as its id, a streak broken by a
        day without a win since as current 0."""
        decoded = orjson.loads(b"[" + entries + b"]")
        for entry in decoded:
            last = entry.pop("last")
            entry["last_day_won"] = self.calendar.day_id(last)
            if last < today - 1:  # a day without a win since: the streak is broken
                entry["current"] = 0
        return decoded

    def _board_page(self, variant_id: str, name: str, limit: int, cursor: str | None,
                    head: dict) -> BoardPage:
        position = None
        if cursor is not None:
            score, _, player = cursor.partition(":")
            position = (score, player)
        count, offset, entries, following, form = self.store.board(
            variant_id, name, position, limit, SEPARATOR)
        return BoardPage({**head, "count": count}, board_rows(offset, entries, form),
                         {"next_cursor": None if following is None
                          else ":".join(following)})

    def events(self, variant_id: str, day_id: str, after: str) -> dict:
        """The day's board's feed after the event ``after`` ('0': from the first): each
        entry that landed in the top ``DAILY_LIVE_TOP`` (moving those below it down), in
        order, with its rank when it landed."""
        variant = _variant(variant_id)
        self._day(day_id)
        found = self.store.feed(variant.id, day_id, after)
        events = [feed_event(event_id, fields) for event_id, fields in found]
        return {"variant": variant.id, "day": day_id, "top": self.settings.live_top,
                "events": events,
                "last_event_id": events[-1]["id"] if events else after}

    def board_feed(self, variant_id: str, day_id: str) -> tuple[str, str]:
        """The board of ``day_id`` whose feed is followed (its variant's id, the day's
        id); 404 for an unknown variant or a day id that is none."""
        variant = _variant(variant_id)
        self._day(day_id)
        return variant.id, day_id

    def around(self, variant_id: str, day_id: str, player: str, k: int) -> BoardPage:
        variant = _variant(variant_id)
        self._day(day_id)
        found = self.store.around(variant.id, day_id, player, k, SEPARATOR)
        if found is None:
            raise GameError(404, "not_on_board",
                            f"the player has no entry on the board of {day_id}")
        rank, count, offset, entries, form = found
        return BoardPage({"variant": variant.id, "day": day_id, "player_id": player,
                          "rank": rank, "count": count}, board_rows(offset, entries, form), {})

    def week_around(self, variant_id: str, week_id: str, player: str, k: int) -> BoardPage:
        variant = _variant(variant_id)
        rank, count, entries = self._board_around(variant.id, f"week:{week_id}", player, k,
                                                  f"the board of the week {week_id}")
        return BoardPage({"variant": variant.id, "week": week_id, "player_id": player,
                          "rank": rank, "count": count}, entries, {})

    def streaks_around(self, variant_id: str, player: str, k: int) -> dict:
        variant = _variant(variant_id)
        today = self.today()
        rank, count, entries = self._board_around(variant.id, "streaks", player, k,
                                                  "the streaks' board")
        return {"variant": variant.id, "player_id": player, "rank": rank, "count": count,
                "entries": self._streak_entries(entries, today)}

    def _board_around(self, variant_id: str, name: str, player: str, k: int, board: str
                      ) -> tuple[int, int, bytes]:
        """The player's rank on a week's or the streaks' board, its size and the
        answer's entries of the player and the k either side; 404 ``not_on_board``."""
        found = self.store.board_around(variant_id, name, player, k, SEPARATOR)
        if found is None:
            raise GameError(404, "not_on_board", f"the player has no entry on {board}")
        rank, count, offset, stored = found
        return rank, count, answer_entries(offset, stored)

    # --- the close and the trim (the solver's worker) ----------------------------------
    def close_due(self, at_ms: int | None = None) -> int:
        """Every day past its end and the grace, not closed yet: its ranked games still
        in play abandoned (their ends reach the board through their outboxes), then the
        day marked closed; days older than ``DAILY_KEEP_DAYS`` trimmed.  How many games
        were abandoned."""
        at_ms = now_ms() if at_ms is None else at_ms
        grace = self.settings.close_grace_seconds * 1000
        today = self.calendar.index(at_ms)
        abandoned = 0
        for variant in variants():
            closed = self.store.closed(variant.id)
            for day_id, index in self.store.days(variant.id, today - 1):
                if index < today - self.settings.keep_days:
                    self._trim(variant.id, day_id, index, today)
                    continue
                if self.calendar.end_ms(index) + grace > at_ms or day_id in closed:
                    continue
                abandoned += self.close_day(variant.id, day_id)
                self.store.mark_closed(variant.id, day_id)
        return abandoned

    def close_day(self, variant_id: str, day_id: str) -> int:
        """The day's games still in play abandoned, :data:`CLOSE_BATCH` at a time: each
        batch read in one round trip per master, written in one, its players' events
        applied in one, its board's in one (the board is one slot), its outboxes
        cleared in one."""
        abandoned, cursor = 0, 0
        while True:
            cursor, attempts = self.store.attempts_page(variant_id, day_id, cursor,
                                                        CLOSE_BATCH)
            abandoned += self._close_batch(attempts)
            if cursor == 0:
                return abandoned

    def _close_batch(self, attempts: list[tuple[str, str]]) -> int:
        """A batch of the close (attempts: (player, game id) pairs): how many games it
        abandoned.  Two closes of the same games at once (a close run again while the
        first still runs) abandon each once: its write is a compare-and-set."""
        written = self.games.abandon_many([(game_id, player) for player, game_id in attempts])
        if written:
            self.projector.apply_many(written)
        return len(written)

    def _trim(self, variant_id: str, day_id: str, index: int, today: int) -> None:
        week = self.calendar.week_id(index)
        kept = self.calendar.week_id(today - self.settings.keep_days)
        self.store.trim(variant_id, day_id, week if week < kept else None)


def _attempt_taken(game_id: str) -> GameError:
    return GameError(409, "attempt_taken",
                     f"you have made your ranked attempt at this deal already: game "
                     f"{game_id}", headers={"Location": f"/v1/games/{game_id}"})


def feed_event(event_id: str, fields: dict) -> dict:
    """An event of a day's board's feed (its stream entry ``event_id``, ``fields``): the
    same for a JSON read and a stream."""
    rank = int(fields["rank"])
    return {"id": event_id, "player_id": fields["player"], "rank": rank,
            "entry": _entry(rank, orjson.loads(fields["entry"]))}


#: What the store joins a board's stored entries with: never within compact JSON.
SEPARATOR = b"\n"
_GAME_ID = b'"game_id":"'
#: The last field of an entry stored in its answer's form (:meth:`Daily._end`).
_GAME_URL = b'"game_url":"'
_RANKED = b'{"rank":%d,%b'.__mod__


def board_rows(offset: int, entries: bytes | list[bytes], form: str) -> bytes:
    """The entries of a board's answer from a board read's (the first's rank is
    ``offset`` + 1), in the store's form: the rows as they are, the bodies ranked
    (:func:`ranked_rows`), the stored JSON made the answer's (:func:`answer_entries`)."""
    if form == ROWS:
        return entries
    if form == BODIES:
        return ranked_rows(offset, entries)
    return answer_entries(offset, entries)


def ranked_rows(offset: int, bodies) -> bytes:
    """The answer's rows of entries in their answer's form given without their opening
    brace (the first's rank is ``offset`` + 1): ``{"rank":<n>,`` before each."""
    return b",".join(map(_RANKED, zip(itertools.count(offset + 1), bodies)))


def answer_entries(offset: int, stored: bytes) -> bytes:
    """The entries of a board's answer (:func:`_entry`'s, joined by commas) made of
    their stored JSON (``stored``: joined by :data:`SEPARATOR`; the first's rank is
    ``offset`` + 1) with bytes operations, never decoded.  An entry is stored in its
    answer's form but for its rank (its ``game_url`` last, :meth:`Daily._end`): only
    ``{"rank":<n>,`` goes before its fields.  Every entry of a page in that form (the
    count of ``"game_url":"`` outside strings is the count of entries) is spliced in
    one pass; else each in turn (:func:`_answer_entry`)."""
    if not stored:
        return b""
    fields = stored[1:].split(SEPARATOR + b"{")  # each entry without its opening brace
    if stored.count(_GAME_URL) == len(fields):
        return ranked_rows(offset, fields)
    return b",".join([_answer_entry(rank, entry) for rank, entry
                      in enumerate(stored.split(SEPARATOR), offset + 1)])


def _answer_entry(rank: int, entry: bytes) -> bytes:
    """One stored entry's answer: in its answer's form, its rank before its fields; a
    missing one (``{}``), its rank alone; an entry written before the answer's form
    (no ``game_url``), its rank before its fields and its game's URL after them (the
    stored ``game_id``'s characters as they are; an id holding an escape is decoded
    and encoded again); one of no game (a week's), its rank before its fields."""
    if entry == b"{}":
        return b'{"rank":%d}' % rank
    if _GAME_URL in entry:
        return _RANKED((rank, entry[1:]))
    at = entry.find(_GAME_ID)
    if at < 0:
        return _RANKED((rank, entry[1:]))
    at += len(_GAME_ID)
    game_id = entry[at:entry.index(b'"', at)]
    if b"\\" in game_id:
        return orjson.dumps(_entry(rank, orjson.loads(entry)))
    return b'{"rank":%d,%b,"game_url":"/v1/games/%b"}' % (rank, entry[1:-1], game_id)


def _entry(rank: int, entry: dict) -> dict:
    row = {"rank": rank, **entry}
    if "game_id" in entry:
        row["game_url"] = f"/v1/games/{entry['game_id']}"
    return row


def daily_of(config, games: Games, projector: Projector, pools: SolverStore, *,
             search: Callable[[Variant], int | None] = lambda _variant: None) -> Daily:
    """The daily deal on the game store's backend, with its replicas to wait for (the
    app's, and the solver's worker's, which closes the days); its boards follow the
    ranked games' ends through ``projector``, which it is registered with."""
    store = DailyStore(games.store.backend, wait_replicas=games.store.wait_replicas,
                       wait_timeout_ms=games.store.wait_timeout_ms,
                       board_form=config["DAILY_BOARD_FORM"])
    daily = Daily(store, games, projector.players, pools,
                  DailySettings.from_config(config), search, projector)
    projector.handlers.update(daily.handlers())
    projector.batch_handlers.update(daily.batch_handlers())
    return daily
