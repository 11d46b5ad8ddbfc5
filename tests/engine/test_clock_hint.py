"""The Clock's quick hint: the line of card moves to the most cards home
(the Clock's ``hint_line``, :func:`service.engine.search.clock.card_line`)."""

from __future__ import annotations

import random

from service.engine import MOVE, Move
from service.engine.hints import heuristic_hint, safe_moves
from service.engine.playout import cards_home
from service.engine.rules.clock import STOCK_PILE
from service.engine.search.clock import card_line
from tests.engine.positions import clock, followed, walk


def _home_after(state, line):
    ids = state.variant.pile_ids
    for source, target in line.moves:
        state, _step = state.apply(Move(MOVE, ids[source], ids[target]))
    return state


def test_the_line_brings_the_most_cards_home_it_can_reach():
    """packet-1 holds 7C over 8C over 9C (hour I wants 7C); packet-2's 2S can go onto
    packet-3's 3S.  The line sends the three clubs home, the most it can; among the
    positions with three more cards home it prefers the one with packet-2 left short
    too (the refill brings a card into play)."""
    state = clock({"packet-1": "9C8C7C", "packet-2": "KH2S", "packet-3": "QD4D3S"})
    line = card_line(state)
    assert line is not None
    assert not line.won
    assert line.complete
    after = _home_after(state, line)
    assert line.home == cards_home(after) == cards_home(state) + 3
    assert sorted(line.moves) == [(12, 0)] * 3 + [(13, 14)]


def test_the_quick_hint_follows_the_line_where_no_move_is_safe():
    """Along a random game: every line is legal, brings its cards home, and the quick
    hint plays its first move whenever no safe move comes first."""
    followed = 0
    for state, _step, _after in walk("clock", 4, max_idle=60):
        line = card_line(state)
        if line is None:
            continue
        after = _home_after(state, line)
        assert cards_home(after) == line.home > cards_home(state)
        if not safe_moves(state):
            ids = state.variant.pile_ids
            source, target = line.moves[0]
            quick = heuristic_hint(state)
            assert quick.move == Move(MOVE, ids[source], ids[target])
            assert "brings the most cards home" in quick.reason
            assert quick.reason.endswith(
                "before the stock is needed" if state.piles[STOCK_PILE] else
                "no winning line found")
            followed += 1
    assert followed >= 3


def test_following_quick_hints_never_meets_a_position_twice():
    for seed in random.Random(17).sample(range(300), 6):
        seen = set()
        for state in followed("clock", seed, heuristic_hint):
            key = (state.piles, state.turn)
            assert key not in seen
            seen.add(key)
