"""The players' keys in Redis: profiles, "my games", the summaries and the statistics.

Every key of one player carries the hash tag ``{<player id>}`` (:mod:`.keys`), so each
call below is one round trip to the player's slot.  The store knows a profile and a
summary as field values and JSON; :mod:`service.players` gives them their meaning.
The writes (an account made, a token changed, an event of an owned game applied,
a player dropped) wait for ``wait_replicas`` replicas like a game's write.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from service.storage import keys
from service.storage.backend import Backend, Script
from service.storage.game_store import confirmed, storage_errors
from service.storage.scripts import DROP_PLAYER, GAMES_PAGE, NEW_PLAYER, PROJECT, SET_TOKEN

__all__ = ["PlayerStore"]

_NEW, _PROJECT, _PAGE, _DROP = (Script(NEW_PLAYER), Script(PROJECT), Script(GAMES_PAGE),
                                Script(DROP_PLAYER))
_SET_TOKEN = Script(SET_TOKEN)
#: The most positions of the list one call of :data:`GAMES_PAGE` looks at.
PAGE_BUDGET = 1000


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


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
        """Store a new profile; False if the player exists already."""
        args = tuple(item for pair in fields.items() for item in pair)
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
        names = [keys.player(player_id), keys.player_games(player_id),
                 keys.player_summaries(player_id), keys.player_stats(player_id),
                 keys.player_results(player_id, variant), keys.player_applied(player_id)]
        args = (game_id, event, summary, variant, status, moves,
                "" if ended_ms is None else ended_ms, "" if win_ms is None else win_ms,
                created_ms)
        return _text(self._write(_PROJECT, names, args))

    @storage_errors
    def project_many(self, events: list[dict]) -> list[str]:
        """Many :meth:`project` calls (each its keyword arguments) in one round trip per
        master, confirmed by the replicas (:mod:`.batches`): their outcomes."""
        from service.storage.batches import run_many, script_call

        items = []
        for event in events:
            player, variant = event["player_id"], event["variant"]
            names = [keys.player(player), keys.player_games(player),
                     keys.player_summaries(player), keys.player_stats(player),
                     keys.player_results(player, variant), keys.player_applied(player)]
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
             status: str | None) -> tuple[list[bytes], int | None]:
        """Newest first from ``cursor`` (None: the top), at most ``limit`` summaries
        (JSON) that match, in one round trip: and the cursor to go on from (None: the
        end of the list)."""
        reply = _PAGE.run(self._fast,
                          [keys.player_games(player_id), keys.player_summaries(player_id)],
                          ("" if cursor is None else cursor, limit, variant or "",
                           status or "", PAGE_BUDGET))
        following = _text(reply[0])
        return list(reply[1:]), (int(float(following)) if following else None)

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
        names = [keys.player(player_id), keys.player_games(player_id),
                 keys.player_summaries(player_id), keys.player_stats(player_id),
                 keys.player_applied(player_id),
                 *(keys.player_results(player_id, variant) for variant in variants)]
        self._write(_DROP, names, ())
