"""The Four Corners quick hint once the stock is out: the endgame search behind
``endgame_line`` gets ``ENDGAME_POSITIONS`` positions, and the more cards
home it finds show in the hint and in the play of a player who follows it."""

from __future__ import annotations

import pytest

from service.engine import Move, State, new_game
from service.engine.hints import autoplay, heuristic_hint, hint
from service.engine.playout import cards_home
from service.engine.search import hint_line
from service.engine.search.endgame import ENDGAME_POSITIONS, SOLVER_BUDGET, solve

#: Deal 16 played by quick hints to the end of the stock: an endgame the search does
#: not settle within its default budget, where the larger one finds a longer line home.
SEED = 16


@pytest.fixture(scope="module")
def dealt_out() -> State:
    """Deal ``SEED`` played by quick hints (a move home, else deal) until the stock is
    out, then autoplay's safe moves."""
    state = new_game("four-corners", SEED)
    while state.stock_count:
        suggestion = heuristic_hint(state)
        state, _step = state.apply(suggestion.move if suggestion else Move("deal"))
    state, _steps = autoplay(state)
    return state


def test_the_endgame_search_gets_its_own_budget(dealt_out):
    assert ENDGAME_POSITIONS > SOLVER_BUDGET
    line = hint_line(dealt_out)
    short = solve(dealt_out)
    assert not short.complete
    assert short.nodes <= SOLVER_BUDGET
    assert line.nodes <= ENDGAME_POSITIONS
    assert not line.won
    assert line.home > short.home > cards_home(dealt_out)
    assert line == solve(dealt_out, ENDGAME_POSITIONS)


def test_the_hint_names_the_longer_line(dealt_out):
    line = hint_line(dealt_out)
    gained = line.home - cards_home(dealt_out)
    for answer in (heuristic_hint(dealt_out), hint(dealt_out)):
        assert answer.move in dealt_out.legal_moves()
        assert answer.reason.endswith(
            f"the first move of the line found that brings the most cards home "
            f"({gained} more); no winning line found")


def test_following_the_hints_brings_that_many_home_and_ends(dealt_out):
    line = hint_line(dealt_out)
    state, seen = dealt_out, set()
    while not state.is_over:
        assert state.piles not in seen, "a position came back"
        seen.add(state.piles)
        suggestion = heuristic_hint(state)
        if suggestion is None:
            break
        state, _step = state.apply(suggestion.move)
    assert cards_home(state) >= line.home
