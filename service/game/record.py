"""The game record: the one place that knows what a game stores and what a client sees.

A :class:`GameRecord` is stored as JSON in the game's hash (:mod:`service.storage.keys`) next to
its version and its journal.  It holds secrets: the engine snapshot (with the stock
order), the seed (when the server chose it), the salt and the player token's SHA-256.
:meth:`GameRecord.public` renders the Game of ``openapi.yaml`` without them: the seed
only when the client chose it or the game is over, the salt only when it is over, the
stock's count but never its cards.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from service.engine import PLAYING, STOCK, InvalidMoveError, State, Variant, get_variant
from service.engine.cards import pile_codes

UNDO_POLICIES = ("full", "safe", "off")
DEFAULT_UNDO = "safe"


class CorruptGame(RuntimeError):
    """A stored game that does not parse or does not replay: a bug or a damaged store."""


def now() -> str:
    """The current UTC time as ``2026-11-29T16:04:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def deal_commitment(variant_id: str, seed: int, salt: str) -> str:
    """The SHA-256 of ``"<variant>:<seed>:<salt>"``, lowercase hex (docs/rules.md)."""
    return hashlib.sha256(f"{variant_id}:{seed}:{salt}".encode()).hexdigest()


def now_ms() -> int:
    """The current time in milliseconds since 1970 (this process's clock)."""
    return round(time.time() * 1000)


def iso_ms(at_ms: int) -> str:
    """Milliseconds since 1970 as a time of :func:`now`."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def epoch_ms(at: str) -> int:
    """A time of :func:`now` as milliseconds since 1970."""
    return round(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)


def token_hash(token: str) -> str:
    """How a player token is stored: its SHA-256, never the token."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who reads a game: the player a player token names (None: none), and the bearer
    token as sent (a game's own token proves its game)."""

    player: str | None = None
    token: str | None = None


@dataclass(frozen=True, slots=True)
class GameRecord:
    """What is stored of a game besides its version and journal.

    ``state`` is the engine snapshot (:meth:`State.to_dict`), kept as the dict it is
    stored as: reading a game never builds an engine state.  ``token`` is the SHA-256 of
    the player token; ``moves`` counts the moves not undone, ``undos`` the undos."""

    variant: str
    seed: int
    chosen: bool  # the client chose the seed
    salt: str
    commitment: str
    token: str
    undo: str
    undos: int
    moves: int
    created: str
    updated: str
    state: dict
    winnable: bool = False  # dealt from a seed the solver proved winnable
    owner: str | None = None  # the player who owns the game (docs/players.md)
    started: str | None = None  # the time of its first move
    #: A ranked game of a daily deal (docs/daily.md): ``{"day", "index", "deadline_ms"}``
    #: (its day's id and number, the day's end), and ``"result"``
    #: (:func:`service.game.ranked.result`) once it has ended.
    ranked: dict | None = None

    #: Fields stored only when set: a record without them reads as before.
    _OPTIONAL = ("owner", "started", "ranked")

    # --- stored form ----------------------------------------------------------------
    @classmethod
    def from_json(cls, data: dict) -> GameRecord:
        try:
            return cls(**data)
        except TypeError as error:
            raise CorruptGame(f"a stored game record has the wrong fields: {error}") from None

    def to_json(self) -> dict:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                if field.name not in self._OPTIONAL or getattr(self, field.name) is not None}

    def replace(self, **changes) -> GameRecord:
        return dataclasses.replace(self, **changes)

    # --- reading --------------------------------------------------------------------
    @property
    def status(self) -> str:
        return self.state["status"]

    @property
    def is_over(self) -> bool:
        return self.status != PLAYING

    @property
    def day_open(self) -> bool:
        """A ranked game whose day is not over: its deal is secret, and so is the game
        to anyone but its owner."""
        return self.ranked is not None and now_ms() < self.ranked["deadline_ms"]

    def hidden_from(self, viewer: Viewer | None) -> bool:
        """Whether ``viewer`` may not read the game now: a ranked game while its day is
        open is its owner's only (their player token, or the game's own token)."""
        if not self.day_open:
            return False
        if viewer is None:
            return True
        if viewer.player is not None and self.owner is not None \
                and secrets.compare_digest(viewer.player, self.owner):
            return False
        return not (viewer.token is not None
                    and secrets.compare_digest(self.token, token_hash(viewer.token)))

    @property
    def game_variant(self) -> Variant:
        return get_variant(self.variant)

    def engine_state(self) -> State:
        """The engine's position (with the stock order: never for a client)."""
        try:
            return State.from_dict(self.state)
        except (InvalidMoveError, KeyError, TypeError) as error:
            raise CorruptGame(f"a stored game snapshot is corrupt: {error!r}") from None

    def summary(self, game_id: str, version: int) -> dict:
        """What a player's list holds of the game (docs/players.md): no secret."""
        return {"id": game_id, "variant": self.variant, "status": self.status,
                "version": version, "moves": self.moves, "created": self.created,
                "ended": self.updated if self.is_over else None}

    def public(self, game_id: str, version: int) -> dict:
        """The Game of ``openapi.yaml``, without anything secret: the snapshot's piles
        are printed card codes, shown as they are (each pile's ``cards`` a tuple, for
        the JSON encoder)."""
        variant = self.game_variant
        # A ranked game's deal is secret until its day is over, even once it has ended.
        over = self.is_over and not self.day_open
        texts = self.state["piles"]
        game = {
            "id": game_id,
            "variant": variant.id,
            "version": version,
            "status": self.status,
            "seed": self.seed if self.chosen or over else None,
            "salt": self.salt if over else None,
            "deal_commitment": self.commitment,
            "winnable": True if self.winnable else None,
            "undo": self.undo,
            "undos": self.undos,
            "moves_made": self.moves,
            "piles": [
                {"id": spec.id, "kind": spec.kind, "count": len(text) // 2,
                 "cards": () if spec.kind == STOCK else pile_codes(text)}
                for spec, text in zip(variant.layout, texts, strict=True)
            ],
        }
        game.update(variant.public_fields(self.state["turn"], len(texts[variant.stock]) // 2))
        game["created_at"] = self.created
        game["updated_at"] = self.updated
        if self.ranked is not None:
            game["ranked"] = {"day": self.ranked["day"],
                              "deadline": iso_ms(self.ranked["deadline_ms"]),
                              "result": self.ranked.get("result")}
        return game


@dataclass(frozen=True, slots=True)
class StoredGame:
    """A game as the repository holds it: its version and its record."""

    version: int
    record: GameRecord

    @classmethod
    def from_stored(cls, version: int, record: dict) -> StoredGame:
        """The game of a stored version and record (its JSON object): what the
        repository (:class:`service.storage.game_store.GameStore`) makes of a game it reads."""
        return cls(version, GameRecord.from_json(record))

    def public(self, game_id: str) -> dict:
        return self.record.public(game_id, self.version)
