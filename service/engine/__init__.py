"""The engine, the core of Patience Server: the games' rules, the searches built on them
and the help for players (pure Python, no I/O).

Each layer reads only those before it: ``errors``, ``cards``, ``moves``; ``registry``
(the variants by id) and ``base`` (the state and the variant), ``rules/`` (one module
per game),
``journal``, ``visible``; ``search/`` (the solver and the hints' searched lines, each
game's registered for its variant); ``hints``; ``playout``.  This package exports the
rules' public names; the searches' are in :mod:`.search`, the hints' in :mod:`.hints`.

>>> state = new_game("clock", 42)
>>> move = state.legal_moves()[0]
>>> state, step = state.apply(move)
"""

from . import rules  # noqa: F401  (register the variants)
from .base import (
    FOUNDATION,
    LOST,
    PILE_KINDS,
    PLAYING,
    RESERVE,
    RESIGNED,
    SNAPSHOT_FORMAT,
    STATUSES,
    STOCK,
    TABLEAU,
    WASTE,
    WON,
    PileSpec,
    State,
    Variant,
    holds_every_card,
)
from .cards import ALL_CARDS, Card, canonical_pack, shuffled_pack
from .errors import RULE_CODES, EngineError, IllegalMoveError, InvalidMoveError
from .moves import DEAL, DRAW, MOVE, MOVE_TYPES, REFILL, RESIGN, Event, Move, Step
from .registry import get_variant, new_game, variants

__all__ = [
    "ALL_CARDS", "DEAL", "DRAW", "FOUNDATION", "LOST", "MOVE", "MOVE_TYPES", "PILE_KINDS",
    "PLAYING", "REFILL", "RESERVE", "RESIGN", "RESIGNED", "RULE_CODES", "SNAPSHOT_FORMAT",
    "STATUSES", "STOCK", "TABLEAU", "WASTE", "WON", "Card", "EngineError", "Event",
    "IllegalMoveError", "InvalidMoveError", "Move", "PileSpec", "State", "Step", "Variant",
    "canonical_pack", "get_variant", "holds_every_card", "new_game", "shuffled_pack",
    "variants",
]
