"""The variants' public hooks (``Variant.card_moves``, ``public_fields``,
``idle_move_reason``), the searches' ``hint_line`` and the order of the registry."""

from __future__ import annotations

import pytest

from service.engine import MOVE, RULE_CODES, Move, variants
from service.engine.errors import COMMON_RULE_CODES
from service.engine.search import hint_line
from service.engine.search.clock import card_line
from service.engine.search.endgame import solve
from tests.engine.positions import VARIANT_IDS, clock, walk


def test_variants_come_in_their_declared_order():
    assert tuple(v.id for v in variants()) == ("clock", "salic-law", "four-corners")


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_card_moves_are_the_legal_card_moves(variant_id):
    for state, _step, after in walk(variant_id, 3, max_idle=40):
        for position in (state, after):
            ids = position.variant.pile_ids
            listed = [Move(MOVE, ids[s], ids[t]) for s, t in position.variant.card_moves(position)]
            assert listed == [m for m in position.legal_moves() if m.type == MOVE]


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_public_fields_name_the_next_deal_in_four_corners_only(variant_id):
    for state, _step, _after in walk(variant_id, 5, max_idle=40):
        fields = state.variant.public_fields(state.turn, state.stock_count)
        if variant_id == "four-corners":
            order = [spec.id for spec in state.variant.layout if spec.kind == "tableau"]
            assert fields == {"next_deal": order[state.turn] if state.stock_count else None}
        else:
            assert fields == {}


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_four_corners_searches_with_the_stock_out_the_clock_its_card_moves(variant_id):
    searched = 0
    for state, _step, _after in walk(variant_id, 2, max_idle=60):
        line = hint_line(state)
        if variant_id == "four-corners" and not state.stock_count:
            assert line == solve(state)
            searched += 1
        elif variant_id == "clock":
            assert line == card_line(state)
            searched += line is not None
        else:
            assert line is None
    assert searched or variant_id == "salic-law"


def test_the_clock_hints_a_marriage_that_leaves_a_packet_short():
    # packet-1 holds three cards: moving its top 4S onto 5S on packet-2 leaves it short.
    state = clock({"packet-1": "KHQH4S", "packet-2": "2D3D5S"})
    variant = state.variant
    source, target = variant.index["packet-1"], variant.index["packet-2"]
    assert (source, target) in set(variant.card_moves(state))
    assert variant.idle_move_reason(state, source, target) == (
        "moving 4S onto packet-2 leaves packet-1 short, so the stock refills it")
    bigger = clock({"packet-1": "KHQHJH4S", "packet-2": "2D3D5S"})
    assert bigger.variant.idle_move_reason(bigger, source, target) is None


def test_every_action_of_a_variant_has_a_hint_reason():
    for variant in variants():
        assert set(variant.action_reasons) == set(variant.actions), variant.id
        assert all(reason.startswith("no card move helps now: ")
                   for reason in variant.action_reasons.values())


def test_rule_codes_are_the_shared_ones_then_each_games_own_in_order():
    expected = dict(COMMON_RULE_CODES)
    for variant in variants():
        assert not set(variant.rule_codes) & set(expected), variant.id
        expected.update(variant.rule_codes)
    assert list(RULE_CODES.items()) == list(expected.items())
