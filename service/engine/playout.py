"""Random play-outs: a whole game played by uniformly random legal moves.

Used by the tests (every variant is run through the same generic random play) and by
the benchmark.  Pure Python, no I/O; the only randomness is the ``rng`` passed in.
"""

from __future__ import annotations

from .base import FOUNDATION, State, Variant
from .hints import heuristic_hint, hint
from .moves import RESIGN, Move, Step
from .registry import new_game

#: How many idle moves in a row end a play-out by resigning (see :func:`random_playout`).
DEFAULT_MAX_IDLE = 200

_RESIGN = Move(RESIGN)


def makes_progress(variant: Variant, step: Step) -> bool:
    """True when ``step`` put a card on a foundation or brought a card out of the stock
    (a deal, draw, refill or automatic replacement).  Every other step (a marriage, a
    card laid on a free king) only rearranges the table and may be undone by a later
    one, so a game can go on for ever without such progress."""
    kinds, index = variant.kinds, variant.index
    return any(event.source == "stock" or kinds[index[event.target]] == FOUNDATION
               for event in step.events)


def random_playout(variant_id: str, seed: int, rng, max_idle: int = DEFAULT_MAX_IDLE
                   ) -> tuple[State, int]:
    """Play deal ``seed`` of ``variant_id`` by uniformly random legal moves to its end.

    ``rng`` is anything with a ``random()`` method returning floats in [0, 1) (a
    ``random.Random``); each move is ``moves[int(rng.random() * len(moves))]`` of
    ``state.legal_moves()``, so a play-out is reproducible from the rng's seed.

    Some positions cycle for ever: twin cards married back and forth in the Clock, a
    card shuttled between bare kings in Salic Law, Four Corners marriages up and down.
    So the play-out **resigns** once ``max_idle`` consecutive moves have made no
    progress (see :func:`makes_progress`: no card put on a foundation, nothing dealt,
    drawn, refilled or replaced from the stock).

    Returns ``(final_state, steps)``: the final state's status is ``won``, ``lost`` or
    ``resigned``; ``steps`` counts the moves played, the resignation not included.
    """
    if max_idle < 1:
        raise ValueError("max_idle must be at least 1")
    state = new_game(variant_id, seed)
    variant = state.variant
    steps = idle = 0
    while not state.is_over:
        moves = state.legal_moves()
        state, step = state.apply(moves[int(rng.random() * len(moves))])
        steps += 1
        idle = 0 if makes_progress(variant, step) else idle + 1
        if idle >= max_idle and not state.is_over:
            state, _ = state.apply(_RESIGN)
    return state, steps


def hint_playout(variant_id: str, seed: int, max_steps: int = 5000, *,
                 advise=None) -> tuple[State, int]:
    """Play deal ``seed`` by following hints: the hinted move while there is one, else
    the first action the variant allows (refill, draw or deal), else resign.

    ``advise`` is the hint function (default :func:`.hints.hint`; the benchmark also
    plays :func:`.hints.heuristic_hint`).  Should a position come back, the quick
    heuristic hint, which always makes progress, is followed there instead, so the game
    ends; ``max_steps`` is a guard only.  Returns ``(final_state, steps)`` like
    :func:`random_playout`.
    """
    advise = advise or hint
    state = new_game(variant_id, seed)
    steps = 0
    seen: set = set()
    while not state.is_over and steps < max_steps:
        key = (state.piles, state.turn)
        suggestion = advise(state) if key not in seen else heuristic_hint(state)
        seen.add(key)
        if suggestion is not None:
            move = suggestion.move
        else:
            actions = [m for m in state.legal_moves() if m.type != "move"]
            move = actions[0] if actions else _RESIGN
        state, _step = state.apply(move)
        steps += 1
    if not state.is_over:
        state, _ = state.apply(_RESIGN)
    return state, steps


def cards_home(state: State) -> int:
    """How many cards are on the foundations."""
    return sum(len(pile) for pile, kind in zip(state.piles, state.variant.kinds, strict=True)
               if kind == FOUNDATION)
