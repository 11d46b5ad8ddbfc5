"""Four Corners: the rules of docs/rules.md, "Four Corners", pinned on crafted positions
and real deals."""

import pytest

from service.engine import LOST, WON, Move, holds_every_card, new_game, shuffled_pack
from tests.engine.positions import assert_refused, craft, events_text, text, walk
from tests.notation import cards_on, next_deal

ORDER = ("corner-tl", "left-1", "left-2", "left-3", "left-4", "corner-bl",
         "corner-tr", "right-1", "right-2", "right-3", "right-4", "corner-br")
SIDES = {"left-1": "ace-1", "left-2": "ace-2", "left-3": "ace-3", "left-4": "ace-4",
         "right-1": "king-1", "right-2": "king-2", "right-3": "king-3", "right-4": "king-4"}
ROW = {"S": "1", "H": "2", "D": "3", "C": "4"}
FOUNDATIONS = [f"{kind}-{row}" for kind in ("ace", "king") for row in "1234"]


def reference_deal(pack: list[str], piles: dict[str, list[str]], packet: str) -> list[str]:
    """docs/rules.md, "Four Corners", written out again: deal to ``packet``; an ace or
    king whose foundation is empty goes there instead and the next card comes to the
    same packet."""
    events = []
    while pack:
        card = pack.pop()
        foundation = {"A": "ace-", "K": "king-"}.get(card[0], "") + ROW[card[1]]
        if card[0] in "AK" and not piles[foundation]:
            piles[foundation].append(card)
            events.append(f"{card}:stock>{foundation}")
            continue
        piles[packet].append(card)
        events.append(f"{card}:stock>{packet}")
        break
    return events


@pytest.mark.parametrize("seed", [*range(25), 2**64 - 1])
def test_opening_round_and_dealing_follow_the_order(seed):
    pack = [str(card) for card in shuffled_pack(seed)]
    piles = {pid: [] for pid in (*ORDER, *FOUNDATIONS)}
    for packet in ORDER:
        reference_deal(pack, piles, packet)
    state = new_game("four-corners", seed)
    for pid, cards in piles.items():
        assert text(state, pid) == "".join(cards), pid
    assert all(len(cards_on(state, packet)) == 1 for packet in ORDER)
    assert state.turn == 0
    assert next_deal(state) == "corner-tl"
    # then each deal serves the next packet in turn, round after round
    for n in range(40):
        packet = ORDER[n % 12]
        assert next_deal(state) == packet
        state, step = state.apply(Move("deal"))
        assert events_text(step) == reference_deal(pack, piles, packet)
        assert state.turn == (n + 1) % 12


def test_a_whole_deal_without_play_puts_every_card_in_place():
    state = new_game("four-corners", 8)
    while state.stock_count:
        state = state.apply(Move("deal"))[0]
    assert next_deal(state) is None
    assert holds_every_card(state)
    for foundation in FOUNDATIONS:
        assert len(cards_on(state, foundation)) == 1  # only the first ace or king of each suit
    assert sum(len(cards_on(state, p)) for p in ORDER) == 104 - 8


def test_first_ace_or_king_goes_straight_up_and_the_packet_gets_the_next_card():
    seen = twins = 0
    for seed in range(40):
        state = new_game("four-corners", seed)
        while state.stock_count:
            packet = next_deal(state)
            before = state
            state, step = state.apply(Move("deal"))
            *automatic, last = step.events
            assert last.target == packet or not state.stock_count
            started = {f for f in FOUNDATIONS if cards_on(before, f)}
            for event in automatic:
                seen += 1
                assert str(event.card)[0] in "AK"
                assert event.target.startswith("ace-" if event.card.rank == 1 else "king-")
                assert event.target not in started
                started.add(event.target)
            if str(last.card)[0] in "AK" and last.target == packet:
                twins += 1  # the second copy: its foundation is already started
                foundation = ("ace-" if last.card.rank == 1 else "king-") + ROW[last.card.suit]
                assert foundation in started
    assert seen > 20
    assert twins > 20


def test_replacement_after_a_packet_plays_to_a_foundation():
    replaced = 0
    for seed in range(60):
        for state, step, after in walk("four-corners", seed):
            if step.move.type != "move" or not state.stock_count:
                continue
            replaced += 1
            first, *dealt = step.events
            assert (first.source, first.target) == (step.move.source, step.move.target)
            assert dealt, "the packet is refilled at once"
            assert all(event.source == "stock" for event in dealt)
            assert dealt[-1].target == step.move.source or not after.stock_count
            assert after.turn == state.turn
            assert next_deal(after) in (next_deal(state), None)
    assert replaced > 50


def test_replacement_on_a_crafted_position():
    state = craft("four-corners", {"ace-1": "AS", "left-1": "9D2S", "corner-tl": "QH",
                                   "stock": "7C5D"}, turn=6)
    after, step = state.apply(Move.parse("left-1>ace-1"))
    assert events_text(step) == ["2S:left-1>ace-1", "5D:stock>left-1"]
    assert (text(after, "left-1"), after.turn) == ("9D5D", 6)
    assert next_deal(after) == "corner-tr"


def test_replacement_may_send_an_ace_up_first():
    state = craft("four-corners", {"ace-1": "AS", "left-1": "2S", "stock": "7CAH"})
    after, step = state.apply(Move.parse("left-1>ace-1"))
    assert events_text(step) == ["2S:left-1>ace-1", "AH:stock>ace-2", "7C:stock>left-1"]
    assert after.stock_count == 0


def test_while_dealing_sides_play_only_beside_and_no_marriage_is_listed():
    for seed in range(40):
        for state, _step, _after in walk("four-corners", seed):
            if not state.stock_count:
                break
            for move in state.legal_moves():
                if move.type != "move":
                    continue
                assert move.target in FOUNDATIONS
                if move.source in SIDES:
                    assert move.target == SIDES[move.source]


def test_marriages_after_the_stock_in_suit_one_up_or_down_not_circular():
    state = craft("four-corners", {"corner-tl": "5S", "left-1": "6S", "right-1": "4S",
                                   "left-2": "5H", "corner-br": "KD", "right-4": "AD",
                                   "ace-3": "AD2D", "king-3": "KD"})
    marriages = {str(m) for m in state.legal_moves() if m.target in ORDER}
    assert marriages == {"corner-tl>left-1", "corner-tl>right-1", "left-1>corner-tl",
                         "right-1>corner-tl"}
    assert_refused(state, "left-1>right-1", "wrong_rank", "6S", "4S")
    assert_refused(state, "corner-br>right-4", "wrong_rank", "KD", "AD")
    assert_refused(state, "right-4>corner-br", "wrong_rank", "AD", "KD")
    assert_refused(state, "left-2>corner-tl", "wrong_suit", "5H", "5S")
    after = state.apply(Move.parse("right-1>corner-tl"))[0]
    assert (text(after, "corner-tl"), text(after, "right-1")) == ("5S4S", "")


def test_after_the_stock_any_packet_plays_to_any_foundation():
    state = craft("four-corners", {"ace-2": "AH", "king-4": "KC", "left-1": "2H",
                                   "right-2": "QC"})
    assert set(state.legal_moves()) == {Move.parse("left-1>ace-2"),
                                        Move.parse("right-2>king-4")}


def test_empty_packets_stay_empty_on_real_deals():
    checked = 0
    for seed in range(40):
        for state, _step, _after in walk("four-corners", seed):
            for move in state.legal_moves():
                if move.type == "move" and move.target in ORDER:
                    assert cards_on(state, move.target)
                    assert not state.stock_count
                    checked += 1
    assert checked > 100


def test_won_when_all_cards_are_on_the_foundations():
    piles = {f"ace-{row}": "".join(r + suit for r in "A23456789TJQK")
             for suit, row in ROW.items()}
    piles |= {f"king-{row}": "".join(r + suit for r in "KQJT98765432A")
              for suit, row in ROW.items()}
    piles["ace-1"] = piles["ace-1"][:-2]
    piles["right-3"] = "KS"
    state = craft("four-corners", piles)
    assert holds_every_card(state)
    assert state.legal_moves() == [Move.parse("right-3>ace-1")]
    assert_refused(state, "right-3>king-1", "foundation_complete", "KS")
    after, step = state.apply(Move.parse("right-3>ace-1"))
    assert after.status == WON
    assert after.legal_moves() == []
    assert after.undo(step) == state


def test_lost_when_no_move_is_left():
    state = craft("four-corners", {"ace-1": "AS2S3S", "corner-tl": "7S4S", "left-1": "9H"})
    assert state.legal_moves() == [Move.parse("corner-tl>ace-1")]
    after = state.apply(Move.parse("corner-tl>ace-1"))[0]
    assert after.status == LOST
    assert after.legal_moves() == []
    assert_refused(after, "corner-tl>left-1", "game_over", "lost")


def test_next_deal_is_none_once_the_stock_is_empty():
    state = craft("four-corners", {"corner-tl": "5S", "stock": "9C"}, turn=11)
    assert next_deal(state) == "corner-br"
    after, step = state.apply(Move("deal"))
    assert events_text(step) == ["9C:stock>corner-br"]
    assert next_deal(after) is None
    assert after.turn == 0
