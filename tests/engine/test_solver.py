"""The solver: its answers, its winning lines replayed through the engine, and every
pruning rule checked against the plain exhaustive search on positions small enough to
exhaust."""

from __future__ import annotations

import pytest

from service.engine import LOST as LOST_STATUS
from service.engine import RESIGN, Move, get_variant
from service.engine import WON as WON_STATUS
from service.engine.solver import (
    LOST,
    RESULTS,
    UNDECIDED,
    WON,
    Budget,
    Solution,
    exhaustive_search,
    replay,
    solve,
    solve_state,
)

from .positions import VARIANT_IDS


def _replays_to_a_win(state, solution: Solution) -> None:
    assert solution.result == WON
    for step in solution.line:
        state, again = state.apply(step.move)
        assert again == step
    assert state.status == WON_STATUS


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_search_answers_within_its_position_budget(variant_id):
    solution = solve(variant_id, 3, max_positions=300, max_seconds=5)
    assert solution.result in RESULTS
    assert solution.searched <= 300
    assert solution.seconds >= 0
    assert (solution.line is not None) == (solution.result == WON)
    if solution.result == WON:
        _replays_to_a_win(get_variant(variant_id).deal(3), solution)


def test_a_won_line_replays_through_the_engine_to_a_won_game():
    state = get_variant("salic-law").deal(2)
    solution = solve_state(state)
    _replays_to_a_win(state, solution)


def test_the_exhaustive_search_finds_a_line_the_engine_accepts():
    state = get_variant("salic-law").deal(2)
    result, moves = exhaustive_search(state, Budget(100_000, 30))
    assert result == WON
    assert replay(state, moves)[-1] is not None


def test_a_finished_game_needs_no_search():
    state = get_variant("clock").deal(1)
    lost = type(state)(state.variant, state.piles, LOST_STATUS, state.turn)
    assert solve_state(lost).result == LOST
    assert solve_state(lost).searched == 0
    resigned, _ = state.apply(Move(RESIGN))
    assert solve_state(resigned, max_positions=50).result == UNDECIDED
