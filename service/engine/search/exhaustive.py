"""The plain search: the reference every game's own search is tested against."""

from __future__ import annotations

from ..base import WON, State
from ..moves import Move
from .budget import Budget
from .results import Answer, Outcome


def exhaustive_search(state: State, budget: Budget) -> Answer:
    """The plain search: depth first over the engine's legal moves, no move forced, no
    pruning but a table of the positions already expanded (a position seen before
    leads nowhere new: its piles and turn counter decide everything that follows).

    It is the solver's search of a variant that registers none of its own
    (:mod:`.registry`), and the reference the variants' own searches are tested against.
    """
    variant = state.variant
    seen = {(state.piles, state.turn)}
    # Each frame: the state and the moves of it still to try; ``line`` the moves taken.
    stack = [(state, iter(variant.legal_moves(state)))]
    line: list[Move] = []
    if not budget.spend():
        return Outcome.UNDECIDED, None
    while stack:
        node, moves = stack[-1]
        move = next(moves, None)
        if move is None:
            stack.pop()
            if line:
                line.pop()
            continue
        after, _step = variant.apply(node, move)
        if after.status == WON:
            line.append(move)
            return Outcome.WON, line
        key = (after.piles, after.turn)
        if key in seen:
            continue
        seen.add(key)
        if not budget.spend():
            return Outcome.UNDECIDED, None
        line.append(move)
        stack.append((after, iter(variant.legal_moves(after))))
    return Outcome.LOST, None
