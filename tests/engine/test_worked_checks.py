"""docs/rules.md, "Worked checks": each one a named test, on crafted positions and
real deals."""

import random

import pytest

from service.engine import FOUNDATION, WON, Move, holds_every_card, new_game
from tests.engine.positions import (
    CLOCK_BASES,
    VARIANT_IDS,
    assert_refused,
    clock,
    counts_every_card,
    craft,
    text,
    walk,
)
from tests.notation import cards_on

RANKS = "A23456789TJQK"


def clock_finished() -> tuple:
    """A Clock position with the stock and talon empty where packet *h* holds exactly the
    cards foundation *h* still needs (next one on top), played out to the end by random
    foundation moves.  Returns (start, end)."""
    piles = {}
    for hour in range(1, 13):
        base = CLOCK_BASES[f"foundation-{hour}"]
        rank, suit, run = RANKS.index(base[0]) + 1, base[1], []
        while rank != hour:
            rank = rank % 13 + 1
            run.append(RANKS[rank - 1] + suit)
        piles[f"packet-{hour}"] = "".join(reversed(run))
    start = state = clock(piles, rest=None)
    assert holds_every_card(start)
    rng = random.Random(7)
    kinds, index = state.variant.kinds, state.variant.index
    while not state.is_over:
        to_foundation = [m for m in state.legal_moves() if kinds[index[m.target]] == FOUNDATION]
        state, _ = state.apply(rng.choice(to_foundation))
    return start, state


def test_clock_foundations_ix_to_xii_take_seven_cards_i_to_viii_eight():
    start, end = clock_finished()
    assert end.status == WON
    for hour in range(1, 13):
        added = len(cards_on(end, f"foundation-{hour}")) - 1
        assert added == (7 if hour >= 9 else 8), f"foundation {hour} took {added}"
    assert sum(len(cards_on(end, f"foundation-{h}")) for h in range(1, 13)) == 104


def test_clock_finished_layout_reads_ace_to_queen_round_the_dial():
    _start, end = clock_finished()
    tops = [str(cards_on(end, f"foundation-{hour}")[-1])[0] for hour in range(1, 13)]
    assert "".join(tops) == "A23456789TJQ"
    assert end.legal_moves() == []


def test_clock_marriage_onto_two_card_packet_is_illegal():
    state = clock({"packet-1": "2S3S4H", "packet-2": "9C5H", "packet-3": "KCKS5H"})
    assert_refused(state, "packet-1>packet-2", "packet_too_short", "4H", "packet-1", "packet-2")
    assert Move.parse("packet-1>packet-3") in state.legal_moves()
    after, step = state.apply(Move.parse("packet-1>packet-3"))
    assert (text(after, "packet-1"), text(after, "packet-3")) == ("2S3S", "KCKS5H4H")


def test_clock_marriage_onto_short_packet_never_listed_on_real_deals():
    seen = 0
    for seed in range(40):
        for state, _step, _after in walk("clock", seed):
            for move in state.legal_moves():
                if move.type == "move" and move.target.startswith("packet-"):
                    assert len(cards_on(state, move.target)) >= 3
                    seen += 1
    assert seen > 100  # marriages do come up in real play


def test_clock_draw_with_short_packet_is_illegal():
    state = clock({"packet-4": "2S3S", "packet-9": "4H"})
    assert_refused(state, "draw", "gaps_must_be_refilled", "packet-4", "packet-9")
    assert Move("refill") in state.legal_moves()


def test_clock_draw_with_short_packet_is_illegal_on_real_deals():
    found = 0
    for seed in range(100):
        state = new_game("clock", seed)
        plays = [m for m in state.legal_moves() if m.target and m.target.startswith("found")]
        if not plays:
            continue
        state, _ = state.apply(plays[0])
        assert state.stock_count > 0
        assert_refused(state, "draw", "gaps_must_be_refilled", plays[0].source)
        assert Move("refill") in state.legal_moves()
        found += 1
    assert found >= 5


@pytest.mark.parametrize("seed", range(30))
def test_salic_queen_or_ace_never_lands_on_king_pile(seed):
    deals = 0
    for _state, step, _after in walk("salic-law", seed):
        if step.move.type != "deal":
            continue
        deals += 1
        (event,) = step.events
        rank = str(event.card)[0]
        expected = {"Q": "queen-", "A": "foundation-"}.get(rank, "king-")
        assert event.target.startswith(expected), event
    assert deals == 103


def test_salic_cards_after_eighth_king_land_on_king_8():
    after_eighth = 0
    for seed in range(30):
        for state, step, _after in walk("salic-law", seed):
            if step.move.type != "deal" or not cards_on(state, "king-8"):
                continue
            (event,) = step.events
            if str(event.card)[0] not in "AQ":
                assert event.target == "king-8", (seed, event)
                after_eighth += 1
    assert after_eighth > 100  # the eighth king usually comes with cards still to deal


def test_salic_move_to_bare_king_before_stock_empty_is_illegal():
    # A real deal: deal until a second king stands bare while king-1 has cards on it.
    for seed in range(50):
        state = new_game("salic-law", seed)
        while state.stock_count and not (cards_on(state, "king-2")
                                         and len(cards_on(state, "king-1")) > 1):
            state, _ = state.apply(Move("deal"))
        if len(cards_on(state, "king-2")) == 1 and state.stock_count:
            break
    else:
        pytest.fail("no deal with a bare second king")
    card = str(cards_on(state, "king-1")[-1])
    assert_refused(state, "king-1>king-2", "deal_not_finished", card, "king-1", "king-2")
    assert not [m for m in state.legal_moves() if m.target and m.target.startswith("king-")]


def test_salic_move_to_bare_king_after_stock_empty_is_legal():
    piles = {"king-1": "KS5H", "king-2": "KH", "king-3": "KD9C"}
    state = craft("salic-law", piles)
    assert Move.parse("king-1>king-2") in state.legal_moves()
    assert Move.parse("king-3>king-2") in state.legal_moves()
    after = state.apply(Move.parse("king-1>king-2"))[0]
    assert (text(after, "king-1"), text(after, "king-2")) == ("KS", "KH5H")
    # with one card left in the stock the same move is refused
    dealing = craft("salic-law", {**piles, "stock": "2C"})
    assert_refused(dealing, "king-1>king-2", "deal_not_finished", "5H", "king-2")


FOUR_CORNERS_ROW1 = {"ace-1": "AS", "king-1": "KS", "ace-2": "AH", "king-2": "KH"}


def test_four_corners_side_packet_other_row_blocked_while_stock():
    piles = {**FOUR_CORNERS_ROW1, "left-2": "2S", "right-3": "QS", "stock": "5C"}
    state = craft("four-corners", piles)
    assert_refused(state, "left-2>ace-1", "not_adjacent", "2S", "left-2", "ace-1", "ace-2")
    assert_refused(state, "right-3>king-1", "not_adjacent", "QS", "right-3", "king-1", "king-3")
    # a corner packet plays to any row
    cornered = craft("four-corners", {**piles, "corner-br": "2S"})
    assert Move.parse("corner-br>ace-1") in cornered.legal_moves()


def test_four_corners_side_packet_other_row_allowed_after_stock():
    piles = {**FOUR_CORNERS_ROW1, "left-2": "2S", "right-3": "QS"}
    state = craft("four-corners", piles)
    moves = state.legal_moves()
    assert Move.parse("left-2>ace-1") in moves
    assert Move.parse("right-3>king-1") in moves
    after = state.apply(Move.parse("left-2>ace-1"))[0]
    assert (text(after, "ace-1"), text(after, "left-2")) == ("AS2S", "")


def test_four_corners_side_packet_rule_on_real_deals():
    blocked = allowed = 0
    for seed in range(60):
        for state, _step, _after in walk("four-corners", seed):
            legal = set(state.legal_moves())
            for source in ("left-1", "left-2", "left-3", "left-4",
                           "right-1", "right-2", "right-3", "right-4"):
                pile = cards_on(state, source)
                if not pile:
                    continue
                row = source[-1]
                beside = ("ace-" if source.startswith("left") else "king-") + row
                for target in (f"{kind}-{r}" for kind in ("ace", "king") for r in "1234"):
                    if target == beside:
                        continue
                    fits = fits_foundation(state, target, str(pile[-1]))
                    move = Move("move", source, target)
                    if fits and state.stock_count:
                        blocked += 1
                        assert move not in legal
                        assert_refused(state, move, "not_adjacent", str(pile[-1]))
                    elif fits:
                        allowed += 1
                        assert move in legal
    assert blocked > 10
    assert allowed > 0


def fits_foundation(state, foundation: str, card: str) -> bool:
    """Four Corners, written out again: the card a foundation takes next."""
    suit = "SHDC"[int(foundation[-1]) - 1]
    pile = [str(c) for c in cards_on(state, foundation)]
    if foundation.startswith("ace"):
        wanted = 1 if not pile else RANKS.index(pile[-1][0]) + 2
    else:
        wanted = 13 if not pile else RANKS.index(pile[-1][0])
    return 1 <= wanted <= 13 and card == RANKS[wanted - 1] + suit


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_card_conservation_at_every_moment(variant_id):
    moves = 0
    for seed in range(25):
        start = new_game(variant_id, seed)
        assert holds_every_card(start)
        assert counts_every_card(start)
        for _state, _step, after in walk(variant_id, seed):
            assert holds_every_card(after)
            assert counts_every_card(after)
            moves += 1
    assert moves > 1000
