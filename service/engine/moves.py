"""Moves, events and steps: small immutable values with a text and a JSON form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .cards import Card
from .errors import InvalidMoveError

MOVE = "move"
DEAL = "deal"
DRAW = "draw"
REFILL = "refill"
RESIGN = "resign"
MOVE_TYPES = (MOVE, DEAL, DRAW, REFILL, RESIGN)
_MAX_PILE_ID = 32


@dataclass(frozen=True, slots=True)
class Move:
    """One player action (docs/rules.md, "Moves").

    ``Move("move", "packet-1", "foundation-3")`` takes the top card of ``source`` onto
    ``target``; ``Move("deal")``, ``Move("draw")``, ``Move("refill")``, ``Move("resign")``
    carry no piles.  Its text form is ``packet-1>foundation-3`` or the bare type.
    """

    type: str
    source: str | None = None
    target: str | None = None

    def __post_init__(self):
        problems = _field_problems(self.type, self.source, self.target)
        if problems:
            raise InvalidMoveError("invalid_move", _sentence(problems), problems)

    @classmethod
    def parse(cls, text: str) -> Move:
        """The move written ``packet-1>foundation-3``, ``deal``, ``draw``, ... (the
        inverse of ``str(move)``)."""
        source, sep, target = text.partition(">")
        return cls(MOVE, source, target) if sep else cls(text)

    @classmethod
    def from_dict(cls, data: dict) -> Move:
        """The move in its JSON shape (docs/rules.md, "Moves"); ``InvalidMoveError`` when
        malformed, its ``fields`` naming every wrong field.  This is the one check of a
        posted move: the HTTP layer calls it."""
        if not isinstance(data, dict):
            raise InvalidMoveError("invalid_move", "a move is a JSON object")
        kind = data.get("type")
        problems = _field_problems(kind, data.get("from"), data.get("to"))
        if "type" not in problems:
            allowed = ("type", "from", "to") if kind == MOVE else ("type",)
            for name in data:
                if name not in allowed and name not in problems:
                    problems[name] = [f"A {kind!r} move has no field {name!r}."]
        if problems:
            raise InvalidMoveError("invalid_move", _sentence(problems), problems)
        return cls(kind, data.get("from"), data.get("to"))

    def to_dict(self) -> dict:
        if self.type == MOVE:
            return {"type": MOVE, "from": self.source, "to": self.target}
        return {"type": self.type}

    def __str__(self) -> str:
        return f"{self.source}>{self.target}" if self.type == MOVE else self.type

    def __repr__(self) -> str:
        return f"Move.parse({str(self)!r})"


def _field_problems(kind, source, target) -> dict[str, list[str]]:
    """What is wrong with a move of type ``kind`` from ``source`` to ``target``, by the
    field of its JSON shape (``type``, ``from``, ``to``); empty when it is well formed."""
    if not isinstance(kind, str) or kind not in MOVE_TYPES:
        named = repr(kind) if isinstance(kind, str) and len(kind) <= _MAX_PILE_ID else "this"
        return {"type": [f"{named} is not a move type ({', '.join(MOVE_TYPES)})."]}
    problems = {}
    for name, pile in (("from", source), ("to", target)):
        if kind == MOVE:
            if not isinstance(pile, str) or not 0 < len(pile) <= _MAX_PILE_ID:
                problems[name] = [f"A card move needs a 'from' and a 'to' pile id of 1 to "
                                  f"{_MAX_PILE_ID} characters."]
        elif pile is not None:
            problems[name] = [f"A {kind!r} move names no piles."]
    return problems


def _sentence(problems: dict[str, list[str]]) -> str:
    return " ".join(message for messages in problems.values() for message in messages)


class Event(NamedTuple):
    """One card changing place: ``card`` went from pile ``source`` onto pile ``target``."""

    card: Card
    source: str
    target: str

    def to_dict(self) -> dict:
        return {"card": str(self.card), "from": self.source, "to": self.target}


@dataclass(frozen=True, slots=True)
class Step:
    """An accepted move with everything it caused, enough to take it back exactly.

    ``events`` lists every card that changed place, in order, automatic ones included;
    ``turn`` is the variant's turn counter before the move (Four Corners' next packet).
    """

    move: Move
    events: tuple[Event, ...]
    turn: int = 0

    @property
    def reveals(self) -> bool:
        """True when the step turned a stock card face up."""
        return any(event.source == "stock" for event in self.events)

