"""The Clock: the rules of docs/rules.md, "The Clock", pinned on crafted positions and
real deals."""

import pytest

from service.engine import LOST, PLAYING, Move, holds_every_card, new_game, shuffled_pack
from service.engine.cards import cards_text
from tests.engine.positions import CLOCK_BASES, assert_refused, clock, events_text, text, walk
from tests.notation import cards_on


@pytest.mark.parametrize("seed", [*range(20), 2**64 - 1])
def test_opening_takes_bases_nearest_the_top_and_deals_packets_of_three(seed):
    pack = [str(card) for card in shuffled_pack(seed)]
    for base in CLOCK_BASES.values():
        del pack[max(i for i, card in enumerate(pack) if card == base)]
    state = new_game("clock", seed)
    for foundation, base in CLOCK_BASES.items():
        assert text(state, foundation) == base
    for hour in range(1, 13):
        # three cards at a time from the top: the first one dealt lies at the bottom
        assert text(state, f"packet-{hour}") == "".join(pack[-1:-4:-1])
        del pack[-3:]
    assert text(state, "stock") == "".join(pack)
    assert (state.stock_count, text(state, "talon")) == (104 - 12 - 36, "")
    assert state.legal_moves()[-1] == Move("draw")


# Full packets for the refill tests, with cards that play nowhere.
FULL = dict(zip([f"packet-{h}" for h in (2, 4, 6, 7, 8, 9, 10, 11)],
                ["ASAS5S", "5S6S6S", "7S7S9S", "9STSTS", "JSJSKS", "KSAHAH", "2H2HKH", "KHQHQH"],
                strict=True))


def test_refill_tops_up_in_order_until_the_stock_is_empty():
    state = clock({**FULL, "packet-1": "", "packet-3": "2S", "packet-5": "2S3S",
                   "packet-12": "", "stock": "4H5H6H7H8H9HTHJH"}, rest="talon")
    assert state.legal_moves()[-1] == Move("refill")
    after, step = state.apply(Move("refill"))
    assert events_text(step) == [
        "JH:stock>packet-1", "TH:stock>packet-1", "9H:stock>packet-1",
        "8H:stock>packet-3", "7H:stock>packet-3", "6H:stock>packet-5",
        "5H:stock>packet-12", "4H:stock>packet-12"]
    assert [text(after, f"packet-{h}") for h in (1, 3, 5, 12)] == ["JHTH9H", "2S8H7H",
                                                                   "2S3S6H", "5H4H"]
    assert after.stock_count == 0
    assert_refused(after, "refill", "stock_empty", "refill")
    assert_refused(after, "draw", "stock_empty", "draw")


def test_refill_leaves_long_packets_alone_and_stops_when_none_is_short():
    state = clock({**FULL, "packet-1": "2S", "packet-3": "3S3S4S8C", "packet-5": "4D",
                   "packet-12": "3D3DJH"})
    stock = text(state, "stock")
    after, step = state.apply(Move("refill"))
    assert len(step.events) == 4
    assert text(after, "packet-1") == "2S" + stock[-2:] + stock[-4:-2]
    assert text(after, "packet-3") == "3S3S4S8C"
    assert text(after, "packet-5") == "4D" + stock[-6:-4] + stock[-8:-6]
    assert text(after, "stock") == stock[:-8]
    assert all(len(cards_on(after, f"packet-{h}")) >= 3 for h in range(1, 13))
    assert after.legal_moves()[-1] == Move("draw")
    assert_refused(after, "refill", "no_gaps", "refill")


def test_draw_turns_the_top_stock_card_onto_the_talon():
    state = new_game("clock", 11)
    stock = text(state, "stock")
    after, step = state.apply(Move("draw"))
    assert events_text(step) == [f"{stock[-2:]}:stock>talon"]
    assert text(after, "talon") == stock[-2:]
    after, _ = after.apply(Move("draw"))
    assert text(after, "talon") == stock[-2:] + stock[-4:-2]


def test_foundations_are_circular_ace_follows_king():
    state = clock({"foundation-5": "TCJCQCKC", "packet-1": "3S3SAC", "packet-2": "6S6S2C"})
    assert Move.parse("packet-1>foundation-5") in state.legal_moves()
    state = state.apply(Move.parse("packet-1>foundation-5"))[0]
    state = state.apply(Move.parse("packet-2>foundation-5"))[0]
    assert text(state, "foundation-5") == "TCJCQCKCAC2C"


def test_foundation_viii_takes_the_ace_straight_after_its_king():
    state = clock({"packet-7": "3S3SAD"})
    after = state.apply(Move.parse("packet-7>foundation-8"))[0]
    assert text(after, "foundation-8") == "KDAD"


def test_foundation_i_ends_at_the_ace():
    state = clock({"foundation-1": "6C7C8C9CTCJCQCKC", "packet-1": "3S2CAC",
                   "talon": "7C"})
    after = state.apply(Move.parse("packet-1>foundation-1"))[0]
    assert text(after, "foundation-1").endswith("KCAC")
    assert_refused(after, "packet-1>foundation-1", "foundation_complete", "2C")
    assert_refused(after, "talon>foundation-1", "foundation_complete", "7C")
    assert not [m for m in after.legal_moves() if m.target == "foundation-1"]


def test_king_marries_onto_ace():
    state = clock({"packet-2": "2S3SAH", "packet-4": "9C9CKH"})
    assert Move.parse("packet-4>packet-2") in state.legal_moves()
    after, step = state.apply(Move.parse("packet-4>packet-2"))
    assert events_text(step) == ["KH:packet-4>packet-2"]
    assert (text(after, "packet-2"), text(after, "packet-4")) == ("2S3SAHKH", "9C9C")


def test_marriage_from_a_short_packet_onto_a_full_one_is_legal():
    state = clock({"packet-2": "2S3S6D", "packet-4": "5D"})
    assert Move.parse("packet-4>packet-2") in state.legal_moves()


def test_only_the_talon_top_plays_and_only_to_a_foundation():
    state = clock({"talon": "7C5H", "packet-3": "KCKS6H"})
    assert not [m for m in state.legal_moves() if m.source == "talon"]
    assert_refused(state, "talon>foundation-1", "wrong_suit", "5H")
    assert_refused(state, "talon>packet-3", "talon_cannot_marry", "5H")
    state = clock({"talon": "4H7C"})
    assert Move.parse("talon>foundation-1") in state.legal_moves()


def test_lost_when_no_move_is_left():
    state = clock({f"packet-{h}": "" for h in range(1, 13)} | {"packet-1": "7C"},
                  rest="talon")
    assert holds_every_card(state)
    assert text(state, "talon").endswith("KC")
    assert state.legal_moves() == [Move.parse("packet-1>foundation-1")]
    after, step = state.apply(Move.parse("packet-1>foundation-1"))
    assert after.status == LOST
    assert after.legal_moves() == []
    assert_refused(after, "resign", "game_over", "lost")
    back = after.undo(step)
    assert back == state
    assert back.status == PLAYING


def test_legal_moves_on_a_real_deal_are_exactly_what_the_rules_allow():
    """perft-like: for 30 deals and every position of a random game, the listed card moves
    are exactly those a reference written from docs/rules.md allows."""
    ranks = "A23456789TJQK"

    def reference(state):
        allowed = set()
        tops = {pid: str(cards_on(state, pid)[-1]) for pid in state.variant.pile_ids
                if cards_on(state, pid)}
        for hour in range(1, 13):
            top = tops[f"foundation-{hour}"]
            if ranks.index(top[0]) + 1 == hour:
                continue
            wanted = ranks[(ranks.index(top[0]) + 1) % 13] + top[1]
            allowed |= {(src, f"foundation-{hour}") for src, card in tops.items()
                        if card == wanted and src.startswith(("packet", "talon"))}
        for target in (f"packet-{h}" for h in range(1, 13)):
            if len(cards_on(state, target)) < 3:
                continue
            top = tops[target]
            wanted = ranks[(ranks.index(top[0]) - 1) % 13] + top[1]
            allowed |= {(src, target) for src, card in tops.items()
                        if card == wanted and src.startswith("packet") and src != target}
        return allowed

    positions = 0
    for seed in range(30):
        for state, _step, _after in walk("clock", seed):
            listed = {(m.source, m.target) for m in state.legal_moves() if m.type == "move"}
            assert listed == reference(state), cards_text(cards_on(state, "talon"))
            positions += 1
    assert positions > 1000
