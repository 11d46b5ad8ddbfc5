"""A hint and autoplay tell the same story, and each variant says what they do.

A hint that calls a move home safe ("nothing else will ever need it") names a move that
autoplay plays first; a hint never calls a move safe that autoplay would leave; and
``GET /v1/variants`` carries each game's own words for both (``autoplay_rule``,
``hint_rule``), from the game's module.
"""

from __future__ import annotations

import functools

import pytest

from service.engine import get_variant
from service.engine.hints import autoplay, heuristic_hint, safe_moves
from service.engine.search import endgame
from service.engine.search.endgame import SOLVER_BUDGET
from tests.engine.positions import VARIANT_IDS, followed, walk

SAFE_WORDS = "nothing else will ever need it"

#: A hint of each position once (a Four Corners endgame hint runs a search).  The quick
#: hint: the sampled one answers a safe move exactly as it does (test_hints_sampled.py).
_hint = functools.lru_cache(maxsize=None)(heuristic_hint)


def _positions(variant_id: str):
    for seed in range(2):
        for state, _step, _after in walk(variant_id, seed, max_idle=60):
            yield state
    # Games played by hints reach the endgames that random walks rarely do.  Deal 16 of
    # Four Corners, followed by hints, reaches safe moves home once its stock is out (few
    # deals do); its endgame hints are searched, so one game is enough.
    for seed in (16,) if variant_id == "four-corners" else (0, 1):
        yield from followed(variant_id, seed, _hint, max_moves=400)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_hint_calls_safe_exactly_what_autoplay_plays_first(variant_id, monkeypatch):
    # A safe move comes before any search; the Four Corners endgame is searched with
    # the solver's default budget here, which keeps deal 16 on its line with 4 or more
    # safe moves and the test quick.
    monkeypatch.setattr(endgame, "ENDGAME_POSITIONS", SOLVER_BUDGET)
    seen_safe = 0
    for state in _positions(variant_id):
        suggestion = _hint(state)
        safe = safe_moves(state)
        if safe:
            # A safe move is always the hint, and it is autoplay's first move.
            assert suggestion is not None
            assert suggestion.move == safe[0], state.to_dict()
            assert SAFE_WORDS in suggestion.reason
            _final, steps = autoplay(state)
            assert steps[0].move == suggestion.move
            seen_safe += 1
        elif suggestion is not None:
            assert SAFE_WORDS not in suggestion.reason, suggestion.reason
            assert autoplay(state)[1] == []
    assert seen_safe > 3


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_each_variant_describes_its_autoplay_and_hint(variant_id):
    variant = get_variant(variant_id)
    described = variant.describe()
    assert described["autoplay_rule"] == type(variant).autoplay_rule
    assert described["hint_rule"] == type(variant).hint_rule
    for text in (described["autoplay_rule"], described["hint_rule"]):
        assert text.endswith(".")
        assert "_" not in text  # words, not code names such as is_safe_home
    others = [get_variant(v).describe() for v in VARIANT_IDS if v != variant_id]
    assert all(o["autoplay_rule"] != described["autoplay_rule"] for o in others)
    assert all(o["hint_rule"] != described["hint_rule"] for o in others)
