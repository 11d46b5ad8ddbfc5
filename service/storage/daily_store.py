"""The daily deal's keys in Redis (names: :func:`.keys.daily`): every key of one
variant's daily deal carries the hash tag ``{daily:<variant>}``, so each call below is
one round trip to one slot, and each write one command or one script there.

Per variant and day ``<day>`` (its id):

- ``<day>:deal`` STRING: ``<seed>:<salt>:<winnable 0|1>``, written once (``SET NX``):
  secret until the day is over, like any seed the server chooses;
- ``<day>:attempts`` HASH: player -> the id of their ranked game, written once
  (``HSETNX``): one attempt per player and day;
- ``<day>:board`` ZSET: the entries (each the player's id, then the entry's JSON) ->
  score (lower is better), and ``<day>:entries`` HASH: player -> the entry's score,
  written together once by :data:`~.scripts.PROJECT_BOARD`
  (:data:`~.scripts.DAY_BOARD_LUA` says why, and how a board of the older form, the
  player alone in the board and the entry in the hash, still reads; ``board_form``
  :data:`PLAYERS` writes that form, for a rolling upgrade from a version that reads
  only it);
- ``<day>:top`` HASH: the board's first pages as their answers give their entries,
  per limit, their next cursors and the board's size they were made at
  (:data:`~.scripts.BOARD_TOP` writes them when read and answers them while they are
  the board's, :data:`~.scripts.PROJECT_BOARD` deletes them when an entry lands within
  them);
- ``<day>:feed`` STREAM: the board's changes within its top (``DAILY_LIVE_TOP``); the
  script that adds an entry publishes its id on the board's channel, of the same name
  (:func:`.keys.board_channel`), which its followers' hubs subscribe to
  (:mod:`service.live.board`).

Per variant: ``days`` ZSET (day id -> its index: the days there is something of, for
the close and the trim), ``closed`` SET (the days closed), ``week:<week>`` HASH and
``week:<week>:board`` ZSET (the weekly board), ``streaks`` HASH and ``streaks:board``
ZSET (the streaks of consecutive days won).

The writes that a ranked game's end brings wait for ``wait_replicas`` replicas like a
game's write.
"""

from __future__ import annotations

from service.storage import keys
from service.storage.backend import Backend, Call, Script
from service.storage.game_store import StorageUnavailable, storage_errors
from service.storage.scripts import (
    BOARD_AROUND,
    BOARD_PAGE,
    BOARD_TOP,
    DAY_AROUND,
    DAY_PAGE,
    PROJECT_BOARD,
)

__all__ = ["BOARD_FORMS", "DailyStore"]

_PROJECT, _PAGE, _TOP = Script(PROJECT_BOARD), Script(BOARD_PAGE), Script(BOARD_TOP)
_DAY_PAGE, _AROUND = Script(DAY_PAGE), Script(DAY_AROUND)
_BOARD_AROUND = Script(BOARD_AROUND)
#: The forms a day's board's entries are written in (:data:`~.scripts.PROJECT_BOARD`):
#: each its player's id then its JSON as the board's member, the score in the entries
#: hash; or the older form every earlier version reads, the player's id as the member
#: and the entry in the hash.  The reads read both, and a board holding both.
ENTRIES, PLAYERS = "entries", "players"
BOARD_FORMS = (ENTRIES, PLAYERS)
#: The largest first page of a day's board kept as its answer (``<day>:top``): the
#: largest ``limit`` a board's query takes.  A larger one is read from the board.
TOP_PAGE_LIMIT = 100
#: Entries of a day's feed kept (about: MAXLEN ~).
FEED_LENGTH = 1000
#: How a board read gives its entries: the answer's rows already (each with its rank,
#: joined by commas), the entries' bodies (a list: each entry in its answer's form
#: without its opening brace), or their stored JSON joined by the separator (``{}`` for
#: one missing).
ROWS, BODIES, STORED = "rows", "bodies", "stored"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entries(found) -> list[tuple[str, dict]]:
    return [(_text(entry_id), {_text(k): _text(v) for k, v in _pairs(fields)})
            for entry_id, fields in found]


def _pairs(found) -> list[tuple]:
    """A reply of field/value (or member/score) pairs, as RESP2 or RESP3 gives it."""
    if isinstance(found, dict):
        return list(found.items())
    if found and isinstance(found[0], list | tuple):
        return [tuple(pair) for pair in found]
    return list(zip(found[::2], found[1::2], strict=True))



def _page_reply(reply, separator: bytes
                ) -> tuple[int, int, bytes | list[bytes], tuple[str, str] | None, str]:
    following = (_text(reply[0]), _text(reply[1])) if _text(reply[0]) else None
    entries, form = _board_entries(reply, 4, separator)
    return int(reply[2]), int(reply[3]), entries, following, form


def _board_entries(reply, at: int, separator: bytes) -> tuple[bytes | list[bytes], str]:
    """The entries of a board script's reply at ``at`` and their form (:data:`ROWS`,
    :data:`BODIES`, :data:`STORED`), as the flag after them gives it (``DAY_BOARD_LUA``'s
    ``rows_of``: '1' the answer's rows, 'm' a day's board members, each the player's id
    then the entry; none or '' their stored JSON)."""
    flag = bytes(reply[at + 1]) if len(reply) > at + 1 else b""
    if flag == b"m":
        return [member.partition(b"{")[2] for member in reply[at].split(separator)], BODIES
    return bytes(reply[at]), ROWS if flag == b"1" else STORED


def _board_keys(variant: str, day: str, week: str) -> list[str]:
    """The keys :data:`~.scripts.PROJECT_BOARD` writes for an end of ``day``: the day's
    entries, board and feed, the week's, the streaks', the days' and the day's top
    pages."""
    return [keys.daily(variant, f"{day}:entries"), keys.daily(variant, f"{day}:board"),
            keys.daily(variant, f"week:{week}"), keys.daily(variant, f"week:{week}:board"),
            keys.daily(variant, "streaks"), keys.daily(variant, "streaks:board"),
            keys.daily(variant, f"{day}:feed"), keys.daily(variant, "days"),
            keys.daily(variant, f"{day}:top")]

class DailyStore:
    """The daily deals and boards in the Redis of ``backend``."""

    def __init__(self, backend: Backend, *, wait_replicas: int, wait_timeout_ms: int,
                 board_form: str = ENTRIES):
        """``board_form``: the form a day's board's entries are written in,
        :data:`ENTRIES` or :data:`PLAYERS` (:data:`BOARD_FORMS`)."""
        if board_form not in BOARD_FORMS:
            raise ValueError(f"a board's form is one of {BOARD_FORMS}, not {board_form!r}")
        self.backend = backend
        self._fast = backend.connections
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.board_form = board_form

    def _write(self, key: str, commands: list[tuple]) -> list:
        """``commands`` (of ``key``'s slot) in one round trip, followed by a WAIT when
        writes wait for replicas: their replies (StorageUnavailable unless confirmed)."""
        if self.wait_replicas:
            commands = [*commands, ("WAIT", self.wait_replicas, self.wait_timeout_ms)]
        replies = self._fast.run(key, commands)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        if self.wait_replicas:
            count = replies.pop()
            if count < self.wait_replicas:
                raise StorageUnavailable(
                    f"the write reached {count} of {self.wait_replicas} replicas within "
                    f"{self.wait_timeout_ms} ms")
        return replies

    # --- the day's deal ----------------------------------------------------------------
    @storage_errors
    def deal(self, variant: str, day: str) -> tuple[int, str, bool] | None:
        found = self._fast.execute("GET", keys.daily(variant, f"{day}:deal"))
        if found is None:
            return None
        seed, salt, winnable = _text(found).split(":")
        return int(seed), salt, winnable == "1"

    @storage_errors
    def set_deal(self, variant: str, day: str, index: int, seed: int, salt: str,
                 winnable: bool) -> bool:
        """Store the day's deal unless it has one: whether this one is it."""
        key = keys.daily(variant, f"{day}:deal")
        stored, _added = self._write(key, [
            ("SET", key, f"{seed}:{salt}:{int(winnable)}", "NX"),
            ("ZADD", keys.daily(variant, "days"), index, day)])
        return stored is not None

    # --- attempts ----------------------------------------------------------------------
    @storage_errors
    def take_attempt(self, variant: str, day: str, player: str, game_id: str) -> str:
        """The id of the player's ranked game of the day: ``game_id`` if this is their
        first attempt (HSETNX), else the one of their first."""
        key = keys.daily(variant, f"{day}:attempts")
        _taken, found = self._write(key, [("HSETNX", key, player, game_id),
                                          ("HGET", key, player)])
        return _text(found)

    @storage_errors
    def attempt(self, variant: str, day: str, player: str) -> str | None:
        found = self._fast.execute("HGET", keys.daily(variant, f"{day}:attempts"), player)
        return None if found is None else _text(found)

    @storage_errors
    def attempts_page(self, variant: str, day: str, cursor: int, count: int
                      ) -> tuple[int, list[tuple[str, str]]]:
        """A page of the day's attempts (HSCAN): (next cursor, 0 at the end; [(player,
        game id)])."""
        following, found = self._fast.execute(
            "HSCAN", keys.daily(variant, f"{day}:attempts"), cursor, "COUNT", count)
        return int(following), [(_text(a), _text(b)) for a, b in _pairs(found)]

    @storage_errors
    def counts(self, variant: str, day: str) -> tuple[int, int]:
        """(players who made an attempt, entries on the board)."""
        players = self._fast.execute("HLEN", keys.daily(variant, f"{day}:attempts"))
        entries = self._fast.execute("ZCARD", keys.daily(variant, f"{day}:board"))
        return int(players), int(entries)

    # --- boards --------------------------------------------------------------------------
    def project_call(self, variant: str, day: str, index: int, week: str, player: str,
                     entry: bytes, score: int, won: bool, moves: int, *, live_top: int
                     ) -> Call:
        """A ranked game's end written to its day's board, week and streaks, once, as a
        call to send with others (:meth:`.PlayerStore.run_calls`): its reply is
        ``applied`` or ``done`` (:data:`~.scripts.PROJECT_BOARD`)."""
        return Call(_PROJECT, _board_keys(variant, day, week), self._project_args(
            variant, day, index, player, entry, score, won, moves, live_top))

    def _project_args(self, variant: str, day: str, index: int, player: str, entry: bytes,
                      score: int, won: bool, moves: int, live_top: int) -> tuple:
        """:data:`~.scripts.PROJECT_BOARD`'s arguments for a ranked game's end."""
        return (player, entry, str(score), "1" if won else "", moves, index, live_top,
                FEED_LENGTH, day, keys.board_channel(variant, day), TOP_PAGE_LIMIT,
                self.board_form)

    @storage_errors
    def project_many(self, ends: list[dict], *, live_top: int) -> list[str]:
        """Many :meth:`project_call` calls (each its arguments but ``live_top``) in
        one round trip (a variant's boards are one slot), confirmed by the replicas."""
        from service.storage.batches import run_many, script_call

        items = []
        for end in ends:
            variant, day = end["variant"], end["day"]
            names = _board_keys(variant, day, end["week"])
            items.append(script_call(_PROJECT, names, self._project_args(
                variant, day, end["index"], end["player"], end["entry"], end["score"],
                end["won"], end["moves"], live_top)))
        wait = (self.wait_replicas, self.wait_timeout_ms) if self.wait_replicas else None
        return [_text(reply) for reply in run_many(self._fast, items, wait=wait,
                                                   scripts=(_PROJECT,))]

    @storage_errors
    def board(self, variant: str, name: str, cursor: tuple[str, str] | None, limit: int,
              separator: bytes = b"\n"
              ) -> tuple[int, int, bytes | list[bytes], tuple[str, str] | None, str]:
        """A page of a board (``name``: ``<day>``, ``week:<week>`` or ``streaks``) in
        one round trip: the board's size, the rank of its first entry less one, its
        entries, the cursor of the next page (None: the end), and the entries' form:
        :data:`ROWS` (a day's kept first page, :data:`~.scripts.BOARD_TOP`),
        :data:`BODIES` (a day's page, :data:`~.scripts.DAY_PAGE`) or :data:`STORED`
        (a week's or the streaks', or a day's holding an entry of the oldest form;
        joined by ``separator``)."""
        args = ("", "") if cursor is None else cursor
        if name.startswith("week:") or name == "streaks":
            reply = _PAGE.run(self._fast, [keys.daily(variant, f"{name}:board"),
                                           keys.daily(variant, name)],
                              (*args, limit, separator))
            return _page_reply(reply, separator)
        board, entries = (keys.daily(variant, f"{name}:board"),
                          keys.daily(variant, f"{name}:entries"))
        if cursor is None and limit <= TOP_PAGE_LIMIT:
            reply = _TOP.run(self._fast, [board, entries, keys.daily(variant, f"{name}:top")],
                             (limit, separator))
        else:
            reply = _DAY_PAGE.run(self._fast, [board, entries], (*args, limit, separator))
        return _page_reply(reply, separator)

    @storage_errors
    def around(self, variant: str, day: str, player: str, k: int, separator: bytes = b"\n"
               ) -> tuple[int, int, int, bytes | list[bytes], str] | None:
        """The player's rank on the day's board, the board's size, the rank of the
        first entry either side less one, the k entries either side and their form (as
        :meth:`board` gives them), in one round trip (None: no entry of the player)."""
        reply = _AROUND.run(self._fast, [keys.daily(variant, f"{day}:board"),
                                         keys.daily(variant, f"{day}:entries")],
                            (player, k, separator))
        if not reply:
            return None
        return int(reply[0]), int(reply[1]), int(reply[2]), *_board_entries(reply, 3, separator)

    @storage_errors
    def board_around(self, variant: str, name: str, player: str, k: int,
                     separator: bytes = b"\n") -> tuple[int, int, int, bytes] | None:
        """The player's rank on a week's or the streaks' board (``name``: ``week:<week>``
        or ``streaks``), the board's size, the rank of the first entry either side less
        one and the k entries either side, their stored JSON joined by ``separator`` (as
        :meth:`board` gives a page of these boards), in one round trip (None: no entry
        of the player)."""
        reply = _BOARD_AROUND.run(self._fast, [keys.daily(variant, f"{name}:board"),
                                               keys.daily(variant, name)],
                                  (player, k, separator))
        if not reply:
            return None
        return int(reply[0]), int(reply[1]), int(reply[2]), bytes(reply[3])

    @storage_errors
    def feed(self, variant: str, day: str, after: str, count: int = 1000
             ) -> list[tuple[str, dict]]:
        """The day's feed after the entry ``after`` ('0': from the start), ``count``
        entries at most."""
        found = self._fast.execute("XRANGE", keys.daily(variant, f"{day}:feed"),
                                   f"({after}" if after != "0" else "-", "+", "COUNT", count)
        return _entries(found)

    @storage_errors
    def feed_tail(self, variant: str, day: str, count: int) -> list[tuple[str, dict]]:
        """The last ``count`` entries of the day's feed, in order."""
        found = self._fast.execute("XREVRANGE", keys.daily(variant, f"{day}:feed"), "+", "-",
                                   "COUNT", count)
        return _entries(found)[::-1]

    # --- the close and the trim ----------------------------------------------------------
    @storage_errors
    def days(self, variant: str, until: int) -> list[tuple[str, int]]:
        """The days of the variant up to the index ``until``: [(day id, index)]."""
        found = self._fast.execute("ZRANGE", keys.daily(variant, "days"), "-inf", until,
                                   "BYSCORE", "WITHSCORES")
        return [(_text(day), int(float(index))) for day, index in _pairs(found)]

    @storage_errors
    def closed(self, variant: str) -> set[str]:
        """The days of the variant closed (and not trimmed yet)."""
        return {_text(day) for day in
                self._fast.execute("SMEMBERS", keys.daily(variant, "closed"))}

    @storage_errors
    def mark_closed(self, variant: str, day: str) -> None:
        self._fast.execute("SADD", keys.daily(variant, "closed"), day)

    @storage_errors
    def trim(self, variant: str, day: str, week: str | None) -> None:
        """Delete the day's keys (and ``week``'s, when no kept day is in it)."""
        names = [keys.daily(variant, f"{day}:{part}")
                 for part in ("deal", "attempts", "board", "entries", "feed", "top")]
        if week is not None:
            names += [keys.daily(variant, f"week:{week}"),
                      keys.daily(variant, f"week:{week}:board")]
        self._fast.execute("DEL", *names)
        self._fast.execute("ZREM", keys.daily(variant, "days"), day)
        self._fast.execute("SREM", keys.daily(variant, "closed"), day)
