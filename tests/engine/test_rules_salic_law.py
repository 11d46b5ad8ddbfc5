"""Salic Law: the rules of docs/rules.md, "Salic Law", pinned on crafted positions and
real deals."""

import pytest

from service.engine import LOST, PLAYING, WON, Move, holds_every_card, new_game, shuffled_pack
from tests.engine.positions import assert_refused, craft, events_text, text, walk
from tests.notation import cards_on

RANKS = "A23456789TJQK"


@pytest.mark.parametrize("seed", [*range(30), 2**64 - 1])
def test_first_king_is_the_king_nearest_the_top(seed):
    pack = [str(card) for card in shuffled_pack(seed)]
    top_king = max(i for i, card in enumerate(pack) if card[0] == "K")
    state = new_game("salic-law", seed)
    assert text(state, "king-1") == pack[top_king]
    assert text(state, "stock") == "".join(pack[:top_king] + pack[top_king + 1:])
    assert all(not cards_on(state, pid) for pid in state.variant.pile_ids
               if pid not in ("king-1", "stock"))
    assert state.legal_moves() == [Move("deal")]


@pytest.mark.parametrize("seed", range(20))
def test_dealing_out_sends_each_card_where_the_rules_say(seed):
    """Deal the whole stock without playing: kings start king-2..8 in order, aces fill
    the foundations and queens the queen places left to right, everything else goes
    onto the newest king pile."""
    state = new_game("salic-law", seed)
    counts = {"K": 1, "A": 0, "Q": 0}
    newest = 1
    while state.stock_count:
        card = str(cards_on(state, "stock")[-1])
        state, step = state.apply(Move("deal"))
        rank = card[0]
        if rank == "K":
            counts["K"] += 1
            newest = counts["K"]
            expected = f"king-{newest}"
        elif rank == "A":
            counts["A"] += 1
            expected = f"foundation-{counts['A']}"
        elif rank == "Q":
            counts["Q"] += 1
            expected = f"queen-{counts['Q']}"
        else:
            expected = f"king-{newest}"
        assert events_text(step) == [f"{card}:stock>{expected}"]
    assert counts == {"K": 8, "A": 8, "Q": 8}
    assert all(len(cards_on(state, f"queen-{i}")) == 1 for i in range(1, 9))
    assert state.status in (PLAYING, LOST)


def test_king_pile_top_goes_to_a_foundation_regardless_of_suit():
    state = craft("salic-law", {"foundation-1": "AS2H", "foundation-2": "AD", "king-1": "KC",
                                "king-3": "KC3D", "king-4": "KH2S", "stock": "5C"})
    moves = state.legal_moves()
    assert set(moves) == {Move.parse("king-3>foundation-1"), Move.parse("king-4>foundation-2"),
                          Move("deal")}
    after, step = state.apply(Move.parse("king-3>foundation-1"))
    assert events_text(step) == ["3D:king-3>foundation-1"]
    assert (text(after, "foundation-1"), text(after, "king-3")) == ("AS2H3D", "KC")


def test_foundation_stops_at_the_jack():
    state = craft("salic-law", {"foundation-1": "AS2S3S4S5S6S7S8S9STS", "king-1": "KC",
                                "king-2": "KDJH"})
    after = state.apply(Move.parse("king-2>foundation-1"))[0]
    assert text(after, "foundation-1").endswith("TSJH")
    assert not [m for m in after.legal_moves() if m.target == "foundation-1"]


def test_free_king_moves_only_once_the_stock_is_empty():
    piles = {"king-1": "KS5H", "king-2": "KH", "king-3": "KD9C", "king-4": "KC"}
    state = craft("salic-law", piles)
    assert set(state.legal_moves()) == {Move.parse(m) for m in (
        "king-1>king-2", "king-1>king-4", "king-3>king-2", "king-3>king-4")}
    dealing = craft("salic-law", {**piles, "stock": "7D"})
    assert dealing.legal_moves() == [Move("deal")]
    for move in ("king-1>king-2", "king-3>king-4"):
        assert_refused(dealing, move, "deal_not_finished", move.split(">")[1])


def test_free_king_card_can_come_back():
    """A card laid on a free king may go back: such shuttles are why play-outs resign."""
    state = craft("salic-law", {"king-1": "KS5H", "king-2": "KH"})
    there = state.apply(Move.parse("king-1>king-2"))[0]
    back = there.apply(Move.parse("king-2>king-1"))[0]
    assert back == state


def won_position():
    """All done but one jack: foundation *i* built A..J in suit S H D C S H D C, minus
    the last JC, which lies on king-1; queens out, kings bare."""
    suits = "SHDCSHDC"
    piles = {f"foundation-{i}": "".join(r + suits[i - 1] for r in "A23456789TJ")
             for i in range(1, 9)}
    piles["foundation-8"] = piles["foundation-8"][:-2]
    piles |= {f"queen-{i}": "Q" + suits[i - 1] for i in range(1, 9)}
    piles |= {f"king-{i}": "K" + suits[i - 1] for i in range(1, 9)}
    piles["king-1"] += "JC"
    return craft("salic-law", piles)


def test_won_when_every_foundation_shows_a_jack():
    state = won_position()
    assert holds_every_card(state)
    after, step = state.apply(Move.parse("king-1>foundation-8"))
    assert after.status == WON
    assert after.legal_moves() == []
    assert_refused(after, "king-2>king-1", "game_over", "won")
    assert after.undo(step) == state


def test_lost_when_no_move_is_left():
    state = craft("salic-law", {"king-1": "KS5C2H", "king-2": "KH9D", "foundation-1": "AS"})
    assert state.legal_moves() == [Move.parse("king-1>foundation-1")]
    after = state.apply(Move.parse("king-1>foundation-1"))[0]
    assert after.status == LOST
    assert after.legal_moves() == []


def test_no_move_ever_lifts_a_king_or_touches_queens_on_real_deals():
    for seed in range(30):
        for state, step, after in walk("salic-law", seed):
            for event in step.events:
                assert not event.source.startswith(("queen", "foundation"))
                assert str(event.card)[0] != "K" or event.source == "stock"
            for k in range(1, 9):
                pile = cards_on(after, f"king-{k}")
                assert not pile or str(pile[0])[0] == "K"
                assert all(str(card)[0] not in "KQA" for card in pile[1:])
            assert len(cards_on(after, "king-1")) >= 1
            assert state.stock_count >= after.stock_count
