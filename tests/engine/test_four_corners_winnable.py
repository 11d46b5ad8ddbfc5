"""A Four Corners deal the solver proved winnable (tests/four_corners_won.py): its line
wins through the engine, move by move, and the solver finds a win again within the
positions the worker gives a deal."""

from __future__ import annotations

import math

from service.engine import PLAYING, WON, get_variant, holds_every_card
from service.engine.search import Outcome, solve
from tests.four_corners_won import SEED, moves
from tests.notation import cards_on

VARIANT = get_variant("four-corners")


def test_the_line_wins_the_deal_through_the_engine():
    state = VARIANT.deal(SEED)
    line = moves()
    assert len(line) == 304
    for number, (move, card) in enumerate(line, start=1):
        assert state.status == PLAYING, number
        assert move in VARIANT.legal_moves(state), (number, str(move))
        moved = state.card_of(move)
        assert (None if moved is None else str(moved)) == card, number
        state, _step = state.apply(move)
        assert holds_every_card(state), number
    assert state.status == WON
    for row in range(1, 5):
        assert len(cards_on(state, f"ace-{row}")) == len(cards_on(state, f"king-{row}")) == 13
    assert state.stock_count == 0


def test_the_solver_wins_the_deal_within_its_positions():
    # Positions only (no clock): the same answer however busy the machine is.  The
    # worker gives a deal 50,000 positions (WINNABLE_DEAL_POSITIONS); this one is won
    # within them.
    solution = solve(VARIANT, SEED, max_positions=50_000, max_seconds=math.inf)
    assert solution.result == Outcome.WON
    assert solution.searched < 50_000
    state = VARIANT.deal(SEED)
    for step in solution.line:  # solve() replayed it already; again, from the deal
        state, _step = state.apply(step.move)
    assert state.status == WON
