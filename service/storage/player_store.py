"""The players' keys in Redis: profiles, "my games", the summaries and the statistics.

Every key of one player carries the hash tag ``{<player id>}`` (:mod:`.keys`), so each
call below is one round trip to the player's slot.  The store knows a profile and a
summary as field values and JSON; :mod:`service.players` gives them their meaning.
The writes (an account made, a token changed, an event of an owned game applied,
a player dropped) wait for ``wait_replicas`` replicas like a game's write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import orjson

from service.storage import keys
from service.storage.backend import Backend, Call, Script
from service.storage.game_store import confirmed, storage_errors
from service.storage.scripts import (
    DROP_PLAYER,
    GAMES_PAGE,
    NEW_PLAYER,
    PROJECT,
    REINDEX_PLAYER,
    SET_TOKEN,
)

__all__ = ["PlayerStore", "Unindexed"]

_NEW, _PROJECT, _PAGE, _DROP = (Script(NEW_PLAYER), Script(PROJECT), Script(GAMES_PAGE),
                                Script(DROP_PLAYER))
_SET_TOKEN, _REINDEX = Script(SET_TOKEN), Script(REINDEX_PLAYER)


class Unindexed(Exception):
    """The player's list was written before its indexes were: build them
    (:meth:`PlayerStore.reindex`) and read again."""


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _projection_keys(player_id: str, variant: str) -> list[str]:
    """The keys :data:`~service.storage.scripts.PROJECT` writes for an event of a game of
    ``variant``: the player's list, summaries, statistics, results, markers and the
    filters' indexes."""
    return [keys.player(player_id), keys.player_games(player_id),
            keys.player_summaries(player_id), keys.player_stats(player_id),
            keys.player_results(player_id, variant), keys.player_applied(player_id),
            keys.player_index(player_id, variant),
            *(keys.player_index(player_id, status=status) for status in keys.GAME_STATUSES),
            *(keys.player_index(player_id, variant, status)
              for status in keys.GAME_STATUSES)]


class PlayerStore:
    """The players in the Redis of ``backend``."""

    def __init__(self, backend: Backend, *, wait_replicas: int, wait_timeout_ms: int):
        self.backend = backend
        self._fast = backend.connections
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms

    def _write(self, script: Script, names: list, args: tuple):
        if self.wait_replicas:
            return confirmed(self._fast, script, names, args, self.wait_replicas,
                             self.wait_timeout_ms)
        return script.run(self._fast, names, args)

    # --- profiles -------------------------------------------------------------------
    @storage_errors
    def create(self, player_id: str, fields: dict[str, str]) -> bool:
        """Store a new profile (its list's indexes follow it from the start); False if
        the player exists already."""
        args = (*(item for pair in fields.items() for item in pair), keys.PLAYER_INDEXED, "1")
        return bool(self._write(_NEW, [keys.player(player_id)], args))

    @storage_errors
    def profile(self, player_id: str) -> dict[str, str] | None:
        found = self._fast.execute("HGETALL", keys.player(player_id))
        if isinstance(found, dict):
            pairs = found.items()
        else:
            pairs = zip(found[::2], found[1::2], strict=True)
        profile = {_text(name): _text(value) for name, value in pairs}
        return profile or None

    @storage_errors
    def token_hash(self, player_id: str) -> str | None:
        """The SHA-256 of the player's token (None: no such player, or revoked)."""
        found = self._fast.execute("HGET", keys.player(player_id), keys.PLAYER_TOKEN)
        return None if found is None else _text(found)

    @storage_errors
    def token_and_name(self, player_id: str) -> tuple[str | None, str | None]:
        """The SHA-256 of the player's token (None: no such player, or revoked) and
        their display name (None: none), in one read."""
        hashed, name = self._fast.execute("HMGET", keys.player(player_id),
                                          keys.PLAYER_TOKEN, keys.PLAYER_NAME)
        return (None if hashed is None else _text(hashed),
                None if name is None else _text(name))

    @storage_errors
    def set_token(self, player_id: str, hashed: str | None) -> None:
        """Replace the player's token hash (None: revoke it)."""
        self._write(_SET_TOKEN, [keys.player(player_id)], (keys.PLAYER_TOKEN, hashed or ""))

    # --- the projection of owned games ------------------------------------------------
    @storage_errors
    def project(self, player_id: str, game_id: str, event: str, summary: bytes, *,
                variant: str, status: str, moves: int, ended_ms: int | None,
                win_ms: int | None, created_ms: int = 0) -> str:
        """Apply an event of an owned game to its player's keys, once
        (:data:`~service.storage.scripts.PROJECT`): ``applied``, ``done`` (applied
        before) or ``gone`` (no such player)."""
        names = _projection_keys(player_id, variant)
        args = (game_id, event, summary, variant, status, moves,
                "" if ended_ms is None else ended_ms, "" if win_ms is None else win_ms,
                created_ms)
        return _text(self._write(_PROJECT, names, args))

    def project_call(self, player_id: str, game_id: str, event: str, summary: bytes, *,
                     variant: str, status: str, moves: int, ended_ms: int | None,
                     win_ms: int | None, created_ms: int = 0) -> Call:
        """:meth:`project` as a call for :meth:`run_calls`, with the calls of other
        slots (a ranked game's board): its reply is the outcome."""
        return Call(_PROJECT, _projection_keys(player_id, variant), (
            game_id, event, summary, variant, status, moves,
            "" if ended_ms is None else ended_ms, "" if win_ms is None else win_ms,
            created_ms))

    @storage_errors
    def run_calls(self, calls: list[Call]) -> list[str]:
        """Script calls of any slots (each one slot's) in one round trip per master
        (one on one Redis), each round trip confirmed by the replicas like a write
        (StorageUnavailable unless it is, or if any call failed): their replies, as
        text.  A call that raised or was not confirmed may still have run: each is
        idempotent (by its marker)."""
        from service.storage.batches import run_many, script_call

        items = [script_call(call.script, call.keys, call.args) for call in calls]
        wait = (self.wait_replicas, self.wait_timeout_ms) if self.wait_replicas else None
        scripts = {call.script.sha: call.script for call in calls}
        return [_text(reply) for reply in run_many(self._fast, items, wait=wait,
                                                   scripts=tuple(scripts.values()),
                                                   load=False)]

    @storage_errors
    def project_many(self, events: list[dict]) -> list[str]:
        """Many :meth:`project` calls (each its keyword arguments) in one round trip per
        master, confirmed by the replicas (:mod:`.batches`): their outcomes."""
        from service.storage.batches import run_many, script_call

        items = []
        for event in events:
            player, variant = event["player_id"], event["variant"]
            names = _projection_keys(player, variant)
            ended, won = event["ended_ms"], event["win_ms"]
            items.append(script_call(_PROJECT, names, (
                event["game_id"], event["event"], event["summary"], variant,
                event["status"], event["moves"], "" if ended is None else ended,
                "" if won is None else won, event.get("created_ms", 0))))
        wait = (self.wait_replicas, self.wait_timeout_ms) if self.wait_replicas else None
        return [_text(reply) for reply in run_many(self._fast, items, wait=wait,
                                                   scripts=(_PROJECT,))]

    @storage_errors
    def names(self, player_ids: list[str]) -> list[str | None]:
        """The display names of the players (None: no such player), in one round trip
        per master."""
        from service.storage.batches import run_many

        items = [(keys.player(player), ("HGET", keys.player(player), keys.PLAYER_NAME))
                 for player in player_ids]
        return [None if name is None else _text(name) for name in run_many(self._fast, items)]

    # --- reads ----------------------------------------------------------------------
    @storage_errors
    def stats(self, player_id: str) -> dict[str, int]:
        found = self._fast.execute("HGETALL", keys.player_stats(player_id))
        pairs = found.items() if isinstance(found, dict) else zip(found[::2], found[1::2],
                                                                  strict=True)
        return {_text(name): int(value) for name, value in pairs}

    @storage_errors
    def page(self, player_id: str, *, cursor: int | None, limit: int, variant: str | None,
             status: str | None, separator: bytes = b",", with_token: bool = False
             ) -> tuple[bytes, int | None, str | None]:
        """Newest first from ``cursor`` (None: the top), at most ``limit`` summaries
        (JSON) of the list, or of the index of ``variant`` and/or ``status``, in one
        round trip: the summaries joined by ``separator`` (empty: none), the cursor to
        go on from (None: the end of the list), and with ``with_token`` the stored
        token's SHA-256 (None: no such player, or no token), read in the same script.
        :class:`Unindexed` when a filter asks for an index not built."""
        filtered = variant is not None or status is not None
        reply = _PAGE.run(self._fast,
                          [keys.player(player_id), keys.player_index(player_id, variant, status),
                           keys.player_summaries(player_id)],
                          ("" if cursor is None else cursor, limit, separator,
                           "1" if filtered else "", "1" if with_token else ""))
        if len(reply) == 1:
            raise Unindexed(player_id)
        following, joined, hashed = reply
        following = _text(following)
        return (bytes(joined), int(float(following)) if following else None,
                _text(hashed) if hashed else None)

    @storage_errors
    def reindex(self, player_id: str, variants: Sequence[str]) -> bool:
        """Build the indexes of the player's list again from the list (one script, for
        a list written before the indexes were); False: no such player."""
        names = [keys.player(player_id), keys.player_games(player_id),
                 keys.player_summaries(player_id), *keys.player_indexes(player_id, variants)]
        return bool(self._write(_REINDEX, names, tuple(variants)))

    @storage_errors
    def summaries(self, player_id: str) -> dict[str, dict]:
        """Every summary of the player's list: game id -> summary."""
        found = self._fast.execute("HGETALL", keys.player_summaries(player_id))
        pairs = found.items() if isinstance(found, dict) else zip(found[::2], found[1::2],
                                                                  strict=True)
        return {_text(name): orjson.loads(value) for name, value in pairs}

    # --- erasure --------------------------------------------------------------------
    @storage_errors
    def drop(self, player_id: str, variants: Iterable[str]) -> None:
        """Delete every key of the player, in one script."""
        variants = list(variants)
        names = [keys.player(player_id), keys.player_games(player_id),
                 keys.player_summaries(player_id), keys.player_stats(player_id),
                 keys.player_applied(player_id),
                 *(keys.player_results(player_id, variant) for variant in variants),
                 *keys.player_indexes(player_id, variants)]
        self._write(_DROP, names, ())
