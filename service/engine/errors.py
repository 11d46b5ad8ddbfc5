"""The engine's exceptions.  Both are ``ValueError``s carrying a stable ``code``.

``InvalidMoveError``: the move (or snapshot) is malformed: it names no move at all.
``IllegalMoveError``: the move is well formed but breaks a rule of the game; ``code``
names the rule (see :data:`RULE_CODES`).
"""

from __future__ import annotations

#: The rule codes every game shares, and what they mean.
COMMON_RULE_CODES: dict[str, str] = {
    "game_over": "the game has ended: no move is accepted",
    "not_in_variant": "this kind of move does not exist in this game",
    "unknown_pile": "the pile id does not exist in this game",
    "same_pile": "a card cannot move onto the pile it comes from",
    "not_a_source": "cards never leave this pile by a move",
    "not_a_target": "cards never arrive on this pile by a move",
    "empty_pile": "the pile to take a card from is empty",
    "wrong_suit": "the card is not of the suit the target needs",
    "wrong_rank": "the card is not of the rank the target needs",
    "foundation_complete": "the foundation is finished and takes nothing more",
    "stock_empty": "the stock is empty",
    "deal_not_finished": "only allowed once the stock is empty",
}
#: Every rule code an illegal move can be refused with, and what it means: the shared
#: ones, then each game's own (``Variant.rule_codes``) in the order of the games, filled
#: in as the games are registered (importing :mod:`service.engine` registers them all).
RULE_CODES: dict[str, str] = dict(COMMON_RULE_CODES)


class EngineError(ValueError):
    """Base of the engine's errors: a stable machine ``code`` and a human sentence."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class InvalidMoveError(EngineError):
    """Malformed input: not a move, not a card, not a snapshot.  ``fields`` names the
    wrong fields of a move's JSON shape, each with its messages (empty if none applies)."""

    def __init__(self, code: str, message: str, fields: dict[str, list[str]] | None = None):
        super().__init__(code, message)
        self.fields = fields or {}


class IllegalMoveError(EngineError):
    """A well-formed move that breaks a rule; ``code`` is one of :data:`RULE_CODES`."""

    def __init__(self, code: str, message: str):
        if code not in RULE_CODES:  # a programming error, never user input
            raise KeyError(f"unregistered rule code {code!r}")
        super().__init__(code, message)
