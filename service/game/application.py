"""The application between HTTP and the rules engine: what each endpoint of a game does.

Nothing here knows Flask.  The views validate a request, call one method of
:class:`Games` and send what it returns.  A read returns ``(version, body)``; a write
runs one command (:mod:`service.game.commands`) through the write pipeline
(:mod:`service.game.pipeline`) and returns a :class:`~service.game.idempotency.Reply`.
Refusals are :class:`~service.game.errors.GameError` or the engine's
``IllegalMoveError``; storage failures are the store's ``StorageUnavailable``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from service.engine import State, Variant, get_variant, variants
from service.engine.hints import DEFAULT_BUDGET
from service.engine.hints import hint as engine_hint
from service.engine.moves import Move
from service.game import commands
from service.game.errors import (
    game_not_found,
    ranked_analysis_refused,
    ranked_game_hidden,
    ranked_hint_refused,
)
from service.game.idempotency import IdempotencyRecords, Reply
from service.game.pipeline import Pipeline, Projection, Write, count, outbox_events
from service.game.record import StoredGame, Viewer, now
from service.game.replay import replay
from service.storage import keys
from service.storage.backend import client_options, open_backend
from service.storage.game_store import CONFLICT, GameStore

_STAT_NAMES = ("created", "won", "lost", "resigned")


def _listed(state: State, move: Move) -> dict:
    """``move`` as ``GET .../moves`` lists it: a card move names its ``card``."""
    listed = move.to_dict()
    card = state.card_of(move)
    if card is not None:
        listed["card"] = str(card)
    return listed


def open_store(config) -> GameStore[StoredGame]:
    """The game repository of the settings (``REDIS_*``, ``GAME_TTL_SECONDS``,
    ``IDEMPOTENCY_TTL_SECONDS``), on the backend that ``REDIS_URL`` names (its
    :attr:`~service.storage.game_store.GameStore.backend`, which the caller closes)."""
    backend = open_backend(config["REDIS_URL"], client_options(config))
    return GameStore.from_settings(backend, config, decode=StoredGame.from_stored)


class WinnableDeals(Protocol):
    """Where the seeds of ``"winnable": true`` creations come from (the solver's
    :class:`service.solver.features.Winnable`, given by the composition root)."""

    def seed(self, variant: Variant) -> int:
        """A seed of ``variant`` proved winnable; a :class:`~service.game.errors.GameError`
        when none can be found."""


class Games:
    """Create, read and change games stored in a :class:`GameStore`."""

    def __init__(self, store: GameStore[StoredGame], *, secret_key: str, retries: int = 16,
                 hint_seconds: float = DEFAULT_BUDGET.seconds,
                 winnable: WinnableDeals | None = None, projection: Projection | None = None):
        self.store = store
        self.hint_budget = replace(DEFAULT_BUDGET, seconds=hint_seconds)
        self.pipeline = Pipeline(store, IdempotencyRecords(secret_key), retries=retries,
                                 projection=projection)
        #: Where the seeds of winnable deals come from (:class:`WinnableDeals`).
        self.winnable = winnable

    # --- reads ----------------------------------------------------------------------
    # ``viewer``: who reads (None: anonymous).  A ranked game is its owner's only while
    # its day is open (403 ranked_game_hidden).
    def _load(self, game_id: str, viewer: Viewer | None = None) -> StoredGame:
        game = self.store.load(game_id)
        if game is None:
            raise game_not_found(game_id)
        check_visible(game, viewer)
        return game

    def get(self, game_id: str, viewer: Viewer | None = None) -> tuple[int, dict]:
        game = self._load(game_id, viewer)
        return game.version, game.public(game_id)

    def legal_moves(self, game_id: str, viewer: Viewer | None = None) -> tuple[int, dict]:
        game = self._load(game_id, viewer)
        state = game.record.engine_state()
        moves = [_listed(state, move) for move in state.legal_moves()]
        return game.version, {"version": game.version, "moves": moves}

    def history(self, game_id: str, viewer: Viewer | None = None) -> tuple[int, dict]:
        found = self.store.load_with_journal(game_id)
        if found is None:
            raise game_not_found(game_id)
        game, journal = found
        check_visible(game, viewer)
        moves = [{"version": version, "move": step.move.to_dict(),
                  "events": [event.to_dict() for event in step.events]}
                 for version, step in replay(game, journal)[0].history]
        return game.version, {"moves": moves}

    def hint(self, game_id: str, viewer: Viewer | None = None) -> tuple[int, dict]:
        """``{"move": ListedMove | None, "reason": str}``, from what the player sees only:
        the engine's hint (a card move), else the action move (deal, draw, refill) when
        no card move helps, else null.  None for a ranked game while its day is open
        (409 ``ranked_hint_refused``)."""
        game = self._load(game_id, viewer)
        if game.record.day_open:
            raise ranked_hint_refused()
        state = game.record.engine_state()
        if state.is_over:
            return game.version, {"move": None, "reason": f"the game is over ({state.status})"}
        found = engine_hint(state, self.hint_budget)
        if found is not None:
            return game.version, {"move": _listed(state, found.move), "reason": found.reason}
        reasons = state.variant.action_reasons
        action = next((move for move in state.legal_moves() if move.type in reasons), None)
        if action is not None:
            return game.version, {"move": action.to_dict(), "reason": reasons[action.type]}
        return game.version, {"move": None,
                              "reason": "no move helps now: only moves that bring nothing "
                                        "home are left (or resign)"}

    def stats(self) -> dict:
        """Per variant: games created, won, lost, resigned, and won / finished."""
        counters = self.store.stats()
        result = []
        for variant in variants():
            row = {"variant": variant.id}
            for name in _STAT_NAMES:
                row[name] = max(0, counters.get(keys.stat(variant.id, name), 0))
            finished = row["won"] + row["lost"] + row["resigned"]
            row["win_rate"] = row["won"] / finished if finished else None
            result.append(row)
        return {"variants": result}

    # --- writes ---------------------------------------------------------------------
    def create(self, write: Write, variant_id: str, seed: int | None, undo: str, *,
               winnable: bool = False) -> Reply:
        """``winnable``: deal a seed the solver proved winnable (``seed`` is None).  The
        pipeline runs the command only once the write is known not to be a retry of an
        earlier one, so a retry takes no second seed out of the pool."""
        def create(_game, _journal, at):
            proved = self.winnable.seed(get_variant(variant_id)) if winnable else None
            return commands.create(variant_id, seed, undo, at, winnable_seed=proved,
                                   owner=write.player)

        return self.pipeline.create(write, create)

    def move(self, game_id: str, write: Write, move: Move, *, card: str | None = None
             ) -> Reply:
        return self.pipeline.write(
            game_id, write, lambda game, _journal, at: commands.move(game, move, at, card=card))

    def undo(self, game_id: str, write: Write) -> Reply:
        return self.pipeline.write(game_id, write, commands.undo, journal=True)

    def autoplay(self, game_id: str, write: Write) -> Reply:
        return self.pipeline.write(
            game_id, write, lambda game, _journal, at: commands.autoplay(game, at))

    def delete(self, game_id: str, write: Write) -> Reply:
        return self.pipeline.write(
            game_id, write, lambda game, _journal, _at: commands.delete(game))

    def claim(self, game_id: str, write: Write, player_id: str) -> Reply:
        """The anonymous game made ``player_id``'s; ``write.token`` is the game's own
        token, which proves it."""
        return self.pipeline.write(
            game_id, write, lambda game, _journal, _at: commands.claim(game, player_id))

    def create_ranked(self, write: Write, game_id: str, variant_id: str, seed: int,
                      salt: str, *, winnable: bool, ranked: dict) -> Reply:
        """The ranked game of a daily deal (docs/daily.md), under the id its day's
        attempts decided, owned by ``write.player``: the day's secret seed and salt (one
        commitment for every player of the day), undo off."""
        def create(_game, _journal, at):
            return commands.create(
                variant_id, None, "off", at, winnable_seed=seed if winnable else None,
                secret_seed=None if winnable else seed, salt=salt, owner=write.player,
                ranked=ranked)

        return self.pipeline.create(write, create, game_id=game_id)

    def abandon(self, game_id: str, owner: str) -> bool:
        """The ranked game ended by the server as its day closes, if still in play
        (a normal write: its end reaches the board through the outbox): whether it
        was."""
        game = self.store.load(game_id)
        if game is None or game.record.ranked is None or game.record.is_over \
                or game.record.owner != owner:
            return False
        self.pipeline.write(game_id, Write("", None, None, None, owner),
                            lambda current, _journal, at: commands.abandon(current, at))
        return True

    def abandon_many(self, games: list[tuple[str, str]]) -> dict[str, dict[str, bytes]]:
        """:meth:`abandon` of many ranked games ((game id, owner) pairs) in a few round
        trips: read together, written together (each a compare-and-set, confirmed by the
        replicas), their outbox events not applied (the caller applies them together:
        :meth:`service.players.projection.Projector.apply_many`).  A game that changed
        meanwhile is abandoned alone (:meth:`abandon`, which applies its events).  The
        outbox events of each game written here."""
        found = self.store.load_many([game_id for game_id, _owner in games])
        writes, changes = [], []
        at = now()
        for (game_id, owner), game in zip(games, found, strict=True):
            if game is None or game.record.ranked is None or game.record.is_over \
                    or game.record.owner != owner:
                continue
            change = commands.abandon(game, at)
            events = outbox_events(game_id, change, game)
            writes.append({"game_id": game_id, "expected": game.version,
                           "version": change.version, "record": change.record.to_json(),
                           "journal": change.journal,
                           "stat": keys.stat(change.variant, change.stat),
                           "outbox": events})
            changes.append((game_id, owner, change, events))
        written = {}
        for (game_id, owner, change, events), outcome in zip(
                changes, self.store.commit_many(writes), strict=True):
            if outcome == "ok":
                count(change)
                written[game_id] = events
            elif outcome == CONFLICT:  # a move came first: the game read again
                self.abandon(game_id, owner)
        return written

    def detach(self, game_id: str, owner: str) -> None:
        detach(self.store, game_id, owner, retries=self.pipeline.retries)


def check_visible(game: StoredGame, viewer: Viewer | None) -> None:
    """403 ``ranked_game_hidden`` unless ``viewer`` may read the game now."""
    if game.record.hidden_from(viewer):
        raise ranked_game_hidden()


def check_analysable(game: StoredGame) -> None:
    """409 ``ranked_analysis_refused`` for a ranked game while its day is open."""
    if game.record.day_open:
        raise ranked_analysis_refused()


def detach(store: GameStore[StoredGame], game_id: str, owner: str, *, retries: int = 16
           ) -> None:
    """The game made anonymous again if ``owner`` owns it (its player is erased): still
    playable with its own token.  Not a change a client sees: the same version, nothing
    published, no outbox event."""
    for _attempt in range(retries):
        game = store.load(game_id)
        if game is None or game.record.owner != owner:
            return
        result = store.commit(game_id, expected=game.version, version=game.version,
                              record=game.record.replace(owner=None).to_json())
        if result.outcome != CONFLICT:
            return
