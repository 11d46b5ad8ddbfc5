"""The quick heuristic hint (the fallback of the sampled hint, see test_hints_sampled.py)
and autoplay: always legal, blind to the stock order, and safe as defined."""

from __future__ import annotations

import random

import pytest

from service.engine import MOVE, Move, State
from service.engine.hints import autoplay, safe_moves
from service.engine.hints import heuristic_hint as hint
from tests.engine.positions import VARIANT_IDS, craft, followed, walk


def _positions(variant_id: str, seeds=range(6)):
    for seed in seeds:
        for state, _step, _after in walk(variant_id, seed, max_idle=60):
            yield state


def _with_stock_shuffled(state: State, seed: int) -> State:
    """The same visible position with another order of the (hidden) stock."""
    piles = list(state.piles)
    stock = list(piles[state.variant.stock])
    random.Random(seed).shuffle(stock)
    piles[state.variant.stock] = tuple(stock)
    return State(state.variant, tuple(piles), state.status, state.turn)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_hint_is_always_a_legal_card_move_or_none(variant_id):
    seen = 0
    for state in _positions(variant_id):
        suggestion = hint(state)
        if suggestion is not None:
            seen += 1
            assert suggestion.move.type == MOVE
            assert suggestion.move in state.legal_moves()
            assert suggestion.card == str(state.card_of(suggestion.move))
            assert suggestion.card in suggestion.reason
    assert seen > 20


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_hint_never_depends_on_the_stock_order(variant_id):
    for i, state in enumerate(_positions(variant_id, seeds=range(3))):
        if state.stock_count > 1:
            assert hint(state) == hint(_with_stock_shuffled(state, i)), state.to_dict()


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_autoplay_plays_only_safe_moves_home_and_stops(variant_id):
    for state in _positions(variant_id, seeds=range(4)):
        final, steps = autoplay(state)
        current = state
        for step in steps:
            assert step.move in safe_moves(current)
            assert state.variant.index[step.move.target] in state.variant.foundations
            current, replayed = current.apply(step.move)
            assert replayed == step
        assert current == final
        assert final.is_over or not safe_moves(final)


def test_following_hints_never_loops():
    for variant_id in VARIANT_IDS:
        for seed in range(5):
            seen = set()
            for state in followed(variant_id, seed, hint):
                key = (state.piles, state.turn)
                assert key not in seen, f"{variant_id} {seed}: position repeated"
                seen.add(key)


# --- the definitions of "safe", one crafted position each ----------------------------

CLOCK_BASES = ["6C", "7H", "8S", "9D", "TC", "JH", "QS", "KD", "2C", "3H", "4S", "5D"]


def _clock(**piles: str) -> State:
    """A Clock position: the twelve bases, then the named piles (``foundation_9=...``)."""
    named = {f"foundation-{h}": card for h, card in enumerate(CLOCK_BASES, start=1)}
    named.update({k.replace("_", "-"): v for k, v in piles.items()})
    return craft("clock", named, rest="stock")


def test_clock_not_safe_when_two_foundations_want_the_card():
    # IX (2C..9C) shows 6C and wants 7C; I (6C..AC) shows 6C and wants 7C too.
    state = _clock(foundation_9="2C3C4C5C6C", packet_1="KH8D7C")
    move = Move.parse("packet-1>foundation-9")
    assert move in state.legal_moves()
    assert move not in safe_moves(state)


def test_clock_safe_when_the_other_copy_below_is_home():
    # IX wants 7C; I has passed 7C and holds the other 6C: nothing can park on 7C.
    state = _clock(foundation_9="2C3C4C5C6C", foundation_1="6C7C", packet_1="KH8D7C")
    assert Move.parse("packet-1>foundation-9") in safe_moves(state)


def test_clock_safe_depends_on_the_other_copy_below():
    # IX wants 6C (the other 6C is I's base).  One 5C is on IX; the other 5C:
    state = _clock(foundation_9="2C3C4C5C", foundation_5="TCJCQCKCAC2C3C4C",
                   packet_1="KH8D6C")
    move = Move.parse("packet-1>foundation-9")
    assert move in state.legal_moves()
    assert move in safe_moves(state)        # ... is wanted by V right now: safe
    state = _clock(foundation_9="2C3C4C5C", foundation_5="TCJCQC", packet_1="KH8D6C")
    assert move not in safe_moves(state)    # ... may still want to park on 6C: not safe


def test_clock_a_talon_card_home_is_safe_when_only_one_foundation_wants_it():
    state = _clock(talon="8H")              # II shows 7H and alone wants 8H
    assert Move.parse("talon>foundation-2") in safe_moves(state)


def test_salic_a_move_home_is_safe_when_no_foundation_lags_behind():
    started = dict(zip([f"foundation-{f}" for f in range(3, 9)],
                       ["AS2S3S", "AS2S3S", "AC2C", "AC2C", "AH2H3H", "AD2D"], strict=True))
    state = craft("salic-law", {**started, "foundation-1": "AH2H", "foundation-2": "AD2D3D",
                                "king-1": "KS3C", "king-2": "KH9C4C"}, rest="stock")
    # Every foundation shows 2 or more: a 3 goes home safely, onto any 2.
    assert safe_moves(state) == [Move.parse(f"king-1>foundation-{f}") for f in (1, 5, 6, 8)]
    # A 4 may go onto a 3, but foundation-1 lags at 2: not safe.
    assert Move.parse("king-2>foundation-2") in state.legal_moves()
    assert Move.parse("king-2>foundation-2") not in safe_moves(state)


def test_salic_a_move_home_is_not_safe_while_a_foundation_is_not_started():
    state = craft("salic-law", {"foundation-1": "AS", "foundation-2": "AH",
                                "king-1": "KS2D", "king-2": "KH9C2C"}, rest="stock")
    assert Move.parse("king-1>foundation-1") in state.legal_moves()
    assert safe_moves(state) == []


def test_salic_which_card_goes_home_first_can_decide_the_game():
    # One foundation at 6, one at 2, two 7s on offer: the 7 over the 8 must go first
    # (the solver's tests prove it); neither 7 is safe, so autoplay leaves the choice.
    done = {f"foundation-{f}": "AS2S3S4S5S6S7S8S9STSJS" for f in range(3, 9)}
    state = craft("salic-law", {**done, "foundation-1": "AH2H3H4H5H6H",
                                "foundation-2": "AD2D", "king-1": "KSJC", "king-2": "KSJC",
                                "king-3": "KH5C7C", "king-4": "KH6CTC", "king-5": "KD8C7C",
                                "king-6": "KD4C9C", "king-7": "KC8C3C9C", "king-8": "KCTC"})
    assert Move.parse("king-3>foundation-1") in state.legal_moves()
    assert Move.parse("king-5>foundation-1") in state.legal_moves()
    assert safe_moves(state) == []


def _four_corners_out(piles: dict[str, str]) -> State:
    """A Four Corners position with the stock out: leftover cards pile on corner-br."""
    return craft("four-corners", piles, rest="corner-br")


def test_four_corners_nothing_is_safe_while_the_stock_lasts():
    state = craft("four-corners", {"ace-1": "AS", "king-1": "KSQSJSTS9S8S7S6S5S4S3S",
                                   "corner-tl": "2S"}, rest="stock")
    assert Move.parse("corner-tl>ace-1") in state.legal_moves()
    assert safe_moves(state) == []


def test_four_corners_safe_once_the_other_foundation_has_crossed():
    # ace-1 shows 4S and wants 5S; king-1 is down to 5S: every 4S/6S that could marry onto
    # 5S can go home directly instead.
    state = _four_corners_out({"ace-1": "AS2S3S4S", "king-1": "KSQSJSTS9S8S7S6S5S",
                               "corner-tl": "5S"})
    assert Move.parse("corner-tl>ace-1") in safe_moves(state)
    state = _four_corners_out({"ace-1": "AS2S3S4S", "king-1": "KSQSJSTS9S8S7S6S",
                               "corner-tl": "5S"})
    assert Move.parse("corner-tl>ace-1") in state.legal_moves()
    assert Move.parse("corner-tl>ace-1") not in safe_moves(state)


def test_four_corners_safe_to_the_king_foundation_mirrors():
    state = _four_corners_out({"ace-2": "AH2H3H4H5H6H7H", "king-2": "KHQHJHTH9H8H",
                               "corner-tr": "7H"})
    assert Move.parse("corner-tr>king-2") in safe_moves(state)
    state = _four_corners_out({"ace-2": "AH2H3H4H5H6H", "king-2": "KHQHJHTH9H8H",
                               "corner-tr": "7H"})
    assert Move.parse("corner-tr>king-2") not in safe_moves(state)
