"""What the searches answer: the solver's outcome and solution, a hint's searched line,
and the moves the searches' lines are made of."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..base import Variant
from ..moves import MOVE, Move, Step


class Outcome(StrEnum):
    """What a search settles about a position whose every card is known (the stock
    order included).  Not a game status (``service.engine.WON``, ``LOST``: how a game
    stands): an outcome says what the best play from the position leads to.

    The values are the words the solver's answers have always been written with
    (``"won"``, ``"lost"``, ``"undecided"``); an outcome is a ``str``, equal to its word.
    """

    #: A winning line exists: the search found one.
    WON = "won"
    #: Every line was searched (up to the pruning each search proves sound) and none
    #: wins.
    LOST = "lost"
    #: The budget of positions or seconds ran out first.
    UNDECIDED = "undecided"


#: What a search answers: its outcome and, when won, the winning moves from the position
#: searched (else None).
Answer = tuple[Outcome, list[Move] | None]


@dataclass(frozen=True, slots=True)
class Solution:
    """The answer of the solver: ``result`` the :class:`Outcome`; ``line`` the winning
    line (engine steps from the position searched) when won, else None; ``searched``
    how many positions were expanded; ``seconds`` the time the search took."""

    result: Outcome
    line: tuple[Step, ...] | None
    searched: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Line:
    """What the search of a hint's line found (see :func:`.registry.hint_line`).

    ``moves`` are ``(source, target)`` pile indexes from the position searched; ``won``
    when they win the game, else they lead to the position with the most cards home
    the search saw, ``home`` cards.  ``nodes`` counts the positions expanded;
    ``complete`` is True when the search saw every position it may reach (so a line
    that does not win proves no searched line wins).
    """

    moves: tuple[tuple[int, int], ...]
    won: bool
    home: int
    nodes: int
    complete: bool


def move_table(variant: type[Variant] | Variant) -> tuple[tuple[Move | None, ...], ...]:
    """Every card move of a variant's table by pile indexes, ``table[source][target]``
    (None on the diagonal): the searches record their lines with these, built once."""
    ids = [spec.id for spec in variant.layout]
    return tuple(tuple(Move(MOVE, source, target) if source != target else None
                       for target in ids) for source in ids)
