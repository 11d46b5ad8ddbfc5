"""A ranked game's result and score (docs/daily.md): pure functions of the game the
server validated, written into the game's record when it ends, so that the record and
the board give the same score.

One score per game, lower is better, exact in a double:

- won: ``moves * 10**9 + min(time_ms, 10**9 - 1)``: fewer moves first, then less time;
- not won: ``10**15 + (1000 - cards_home) * 10**9 + moves``: more cards home first,
  then fewer moves (every loss after every win with fewer than 10**6 moves).
"""

from __future__ import annotations

from service.engine import WON
from service.engine.base import FOUNDATION

#: Outcomes of a ranked game.
OUTCOMES = ("won", "lost", "resigned", "abandoned")
ABANDONED = "abandoned"
#: Below every loss: a win's score is less than this.
LOSS_BASE = 10**15
MOVE_UNIT = 10**9
MAX_MOVES = 10**6 - 1


def score(outcome: str, moves: int, time_ms: int, cards_home: int) -> int:
    """The board's score of a ranked game (lower is better)."""
    moves = min(max(0, moves), MAX_MOVES)
    if outcome == WON:
        return moves * MOVE_UNIT + min(max(0, time_ms), MOVE_UNIT - 1)
    return LOSS_BASE + (1000 - min(max(0, cards_home), 1000)) * MOVE_UNIT + moves


def cards_home(kinds: tuple[str, ...], piles: list[str]) -> int:
    """The cards on the foundations of a snapshot's piles (two characters a card)."""
    return sum(len(text) // 2 for kind, text in zip(kinds, piles, strict=True)
               if kind == FOUNDATION)


def result(outcome: str, moves: int, time_ms: int, home: int) -> dict:
    """The ``ranked.result`` of a game's record."""
    return {"outcome": outcome, "moves": moves, "time_ms": time_ms, "cards_home": home,
            "score": score(outcome, moves, time_ms, home)}
