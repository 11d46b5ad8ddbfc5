"""Every refusal: each rule code of RULE_CODES on a position where it applies, and every
kind of malformed input (InvalidMoveError)."""

import pytest

from service.engine import (
    LOST,
    PLAYING,
    RULE_CODES,
    WON,
    EngineError,
    IllegalMoveError,
    InvalidMoveError,
    Move,
    State,
    get_variant,
    new_game,
)
from service.engine.cards import Card
from tests.engine.positions import assert_refused, clock, craft

CLOCK_FOUNDATION_1_DONE = "6C7C8C9CTCJCQCKCAC"


def resigned_clock():
    return new_game("clock", 0).apply(Move("resign"))[0]


def salic_dealt(**piles):
    """A Salic Law position with the stock dealt out."""
    return craft("salic-law", {"king-1": "KS", **piles})


def four_corners(stock: str = "", status: str = PLAYING, **piles):
    return craft("four-corners", {"ace-1": "AS", "king-1": "KS", **piles, "stock": stock},
                 status=status)


# (code, variant, position, move, strings the message must quote)
CASES = [
    ("game_over", "clock", resigned_clock, "draw", ("resigned", "draw")),
    ("game_over", "clock", resigned_clock, "resign", ("resigned", "resign")),
    ("game_over", "salic-law", lambda: craft("salic-law", {}, status=WON, rest="stock"),
     "deal", ("won", "deal")),
    ("game_over", "four-corners", lambda: four_corners(**{"corner-tl": "2S"}, status=LOST),
     "corner-tl>ace-1", ("lost", "corner-tl>ace-1")),
    ("not_in_variant", "clock", lambda: new_game("clock", 1), "deal", ("deal",)),
    ("not_in_variant", "salic-law", lambda: new_game("salic-law", 1), "draw", ("draw",)),
    ("not_in_variant", "salic-law", lambda: new_game("salic-law", 1), "refill", ("refill",)),
    ("not_in_variant", "four-corners", lambda: new_game("four-corners", 1), "draw", ("draw",)),
    ("not_in_variant", "four-corners", lambda: new_game("four-corners", 1), "refill",
     ("refill",)),
    ("unknown_pile", "clock", lambda: new_game("clock", 1), "packet-1>foundation-13",
     ("foundation-13",)),
    ("unknown_pile", "clock", lambda: new_game("clock", 1), "waste>foundation-1", ("waste",)),
    ("unknown_pile", "salic-law", lambda: new_game("salic-law", 1), "king-9>foundation-1",
     ("king-9",)),
    ("unknown_pile", "four-corners", lambda: new_game("four-corners", 1), "left-1>ace-5",
     ("ace-5",)),
    ("same_pile", "clock", lambda: new_game("clock", 1), "packet-1>packet-1",
     ("packet-1>packet-1",)),
    ("same_pile", "salic-law", lambda: new_game("salic-law", 1), "king-1>king-1",
     ("king-1>king-1",)),
    ("same_pile", "four-corners", lambda: new_game("four-corners", 1), "ace-1>ace-1",
     ("ace-1>ace-1",)),
    ("not_a_source", "clock", lambda: new_game("clock", 1), "foundation-1>packet-1",
     ("foundation-1",)),
    ("not_a_source", "clock", lambda: new_game("clock", 1), "stock>talon", ("stock",)),
    ("not_a_source", "salic-law", lambda: salic_dealt(**{"queen-1": "QH", "king-2": "KD"}),
     "queen-1>king-2", ("queen-1",)),
    ("not_a_source", "salic-law", lambda: salic_dealt(**{"foundation-1": "AS2H"}),
     "foundation-1>king-1", ("foundation-1",)),
    ("not_a_source", "four-corners", lambda: four_corners(), "ace-1>corner-tl", ("ace-1",)),
    ("not_a_source", "four-corners", lambda: new_game("four-corners", 1), "stock>corner-tl",
     ("stock",)),
    ("not_a_target", "clock", lambda: new_game("clock", 1), "packet-1>talon", ("talon",)),
    ("not_a_target", "clock", lambda: new_game("clock", 1), "packet-1>stock", ("stock",)),
    ("not_a_target", "salic-law", lambda: salic_dealt(**{"king-2": "KD5C"}), "king-2>queen-1",
     ("queen-1",)),
    ("not_a_target", "salic-law", lambda: salic_dealt(**{"king-2": "KD5C"}), "king-2>stock",
     ("stock",)),
    ("not_a_target", "four-corners", lambda: new_game("four-corners", 1), "corner-tl>stock",
     ("stock",)),
    ("empty_pile", "clock", lambda: new_game("clock", 1), "talon>foundation-1", ("talon",)),
    ("empty_pile", "salic-law", lambda: new_game("salic-law", 1), "king-2>foundation-1",
     ("king-2",)),
    ("empty_pile", "four-corners", lambda: four_corners(**{"corner-tl": "2S"}), "left-1>ace-1",
     ("left-1",)),
    ("wrong_suit", "clock", lambda: clock({"packet-1": "2S3S7D"}), "packet-1>foundation-1",
     ("7D", "packet-1", "foundation-1")),
    ("wrong_suit", "clock", lambda: clock({"packet-1": "2S3S4S", "packet-3": "KCKS5H"}),
     "packet-1>packet-3", ("4S", "packet-1", "packet-3", "5H")),
    ("wrong_suit", "four-corners", lambda: four_corners("4D", **{"corner-tl": "2H"}),
     "corner-tl>ace-1", ("2H", "corner-tl", "ace-1")),
    ("wrong_suit", "four-corners",
     lambda: four_corners(**{"corner-tl": "5S", "left-1": "6H"}),
     "corner-tl>left-1", ("5S", "corner-tl", "left-1", "6H")),
    ("wrong_rank", "clock", lambda: clock({"packet-1": "2S3S8C"}), "packet-1>foundation-1",
     ("8C", "packet-1", "foundation-1", "7C")),
    ("wrong_rank", "clock", lambda: clock({"packet-1": "2S3S3H", "packet-3": "KCKS5H"}),
     "packet-1>packet-3", ("3H", "packet-1", "packet-3", "5H", "4H")),
    ("wrong_rank", "clock", lambda: clock({"packet-1": "2S3SQH", "packet-3": "KCKSAH"}),
     "packet-1>packet-3", ("QH", "AH", "KH")),
    ("wrong_rank", "salic-law", lambda: salic_dealt(**{"king-2": "KD3C", "foundation-1": "AH"}),
     "king-2>foundation-1", ("3C", "king-2", "foundation-1", "rank 2")),
    ("wrong_rank", "salic-law", lambda: salic_dealt(**{"king-2": "KD2C"}),
     "king-2>foundation-1", ("2C", "king-2", "foundation-1", "empty")),
    ("wrong_rank", "four-corners", lambda: four_corners("4D", **{"corner-tl": "3S"}),
     "corner-tl>ace-1", ("3S", "corner-tl", "ace-1", "2S")),
    ("wrong_rank", "four-corners",
     lambda: four_corners(**{"corner-tl": "7S", "left-1": "5S"}),
     "corner-tl>left-1", ("7S", "corner-tl", "left-1", "5S")),
    ("wrong_rank", "four-corners",  # marriages are not circular
     lambda: four_corners(**{"corner-tl": "AS", "left-1": "KS"}),
     "corner-tl>left-1", ("AS", "KS")),
    ("foundation_complete", "clock",
     lambda: clock({"foundation-1": CLOCK_FOUNDATION_1_DONE, "packet-1": "3S3S2C"}),
     "packet-1>foundation-1", ("2C", "packet-1", "foundation-1", "complete")),
    ("foundation_complete", "salic-law",
     lambda: salic_dealt(**{"foundation-1": "AS2S3S4S5S6S7S8S9STSJS", "king-2": "KD2H"}),
     "king-2>foundation-1", ("2H", "king-2", "foundation-1", "complete")),
    ("foundation_complete", "four-corners",
     lambda: four_corners(**{"ace-1": "AS2S3S4S5S6S7S8S9STSJSQSKS", "corner-tl": "AS"}),
     "corner-tl>ace-1", ("AS", "corner-tl", "ace-1", "complete")),
    ("packet_too_short", "clock", lambda: clock({"packet-1": "2S3S4H", "packet-2": "9C5H"}),
     "packet-1>packet-2", ("4H", "packet-1", "packet-2")),
    ("talon_cannot_marry", "clock",
     lambda: clock({"talon": "4H", "packet-3": "KCKS5H"}),
     "talon>packet-3", ("4H", "talon", "packet-3")),
    ("gaps_must_be_refilled", "clock", lambda: clock({"packet-5": "2S3S"}), "draw",
     ("draw", "packet-5")),
    ("no_gaps", "clock", lambda: new_game("clock", 1), "refill", ("refill",)),
    ("stock_empty", "clock",
     lambda: clock({f"packet-{h}": "" for h in range(1, 13)}, rest="talon"), "refill",
     ("refill",)),
    ("stock_empty", "clock", lambda: clock({}, rest="talon"), "draw", ("draw",)),
    ("stock_empty", "salic-law", lambda: salic_dealt(**{"king-2": "KD3C"}), "deal", ("deal",)),
    ("stock_empty", "four-corners", lambda: four_corners(**{"corner-tl": "3C"}), "deal",
     ("deal",)),
    ("king_cannot_move", "salic-law", lambda: new_game("salic-law", 1), "king-1>king-2",
     ("king-1", "K")),
    ("king_cannot_move", "salic-law", lambda: salic_dealt(**{"king-2": "KD"}),
     "king-1>foundation-1", ("KS", "king-1")),
    ("deal_not_finished", "salic-law",
     lambda: craft("salic-law", {"king-1": "KS5H", "king-2": "KD", "stock": "9C"}),
     "king-1>king-2", ("5H", "king-1", "king-2")),
    ("deal_not_finished", "four-corners",
     lambda: four_corners("9C", **{"corner-tl": "5S", "left-1": "6S"}),
     "corner-tl>left-1", ("5S", "corner-tl", "left-1")),
    ("not_a_free_king", "salic-law", lambda: salic_dealt(**{"king-1": "KS5H", "king-2": "KD3C"}),
     "king-1>king-2", ("5H", "king-1", "king-2")),
    ("not_adjacent", "four-corners", lambda: four_corners("9C", **{"left-2": "2S"}),
     "left-2>ace-1", ("2S", "left-2", "ace-1", "ace-2")),
    ("not_adjacent", "four-corners", lambda: four_corners("9C", **{"right-4": "QS"}),
     "right-4>king-1", ("QS", "right-4", "king-1", "king-4")),
    ("target_empty", "four-corners", lambda: four_corners(**{"corner-tl": "5S"}),
     "corner-tl>left-1", ("5S", "corner-tl", "left-1")),
]


@pytest.mark.parametrize(("code", "variant_id", "position", "move", "quoted"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CASES])
def test_refusal(code, variant_id, position, move, quoted):
    state = position()
    assert state.variant.id == variant_id
    error = assert_refused(state, move, code, *quoted)
    assert isinstance(error, ValueError)
    assert isinstance(error, EngineError)
    assert repr(error).startswith("IllegalMoveError(")


def test_every_rule_code_is_tested():
    assert {case[0] for case in CASES} == set(RULE_CODES)


def test_unregistered_rule_code_is_a_programming_error():
    with pytest.raises(KeyError):
        IllegalMoveError("no_such_rule", "x")


# --- malformed input: InvalidMoveError ---------------------------------------------------


def assert_invalid(code: str, call, *args):
    with pytest.raises(InvalidMoveError) as caught:
        call(*args)
    assert caught.value.code == code, repr(caught.value)
    assert not isinstance(caught.value, IllegalMoveError)
    assert isinstance(caught.value, ValueError)
    return caught.value


@pytest.mark.parametrize("data", [
    {"type": "jump"},
    {"type": 3},
    {"from": "packet-1", "to": "foundation-1"},
    {"type": "move", "from": "packet-1"},
    {"type": "move", "to": "foundation-1"},
    {"type": "move", "from": 1, "to": "foundation-1"},
    {"type": "move", "from": "", "to": "foundation-1"},
    {"type": "move", "from": "p" * 33, "to": "foundation-1"},
    {"type": "move", "from": "packet-1", "to": "foundation-1", "card": "AS"},
    {"type": "deal", "from": "stock"},
    {"type": "draw", "to": "talon"},
    {"type": "resign", "extra": True},
    "deal",
    None,
    ["move", "packet-1", "foundation-1"],
])
def test_malformed_move_dict(data):
    assert_invalid("invalid_move", Move.from_dict, data)


@pytest.mark.parametrize(("args", "quoted"), [
    (("jump",), "jump"), (("deal", "stock"), "deal"), (("move", "packet-1"), "from"),
    (("move", None, "talon"), "from"), (("refill", None, "packet-1"), "refill"),
])
def test_malformed_move_value(args, quoted):
    error = assert_invalid("invalid_move", Move, *args)
    assert quoted in error.message


@pytest.mark.parametrize("text", ["", "jump", "packet-1>", ">talon", "Deal"])
def test_malformed_move_text(text):
    assert_invalid("invalid_move", Move.parse, text)


def test_well_formed_moves_round_trip():
    for text in ("packet-1>foundation-3", "deal", "draw", "refill", "resign"):
        move = Move.parse(text)
        assert str(move) == text
        assert Move.from_dict(move.to_dict()) == move
        assert eval(repr(move), {"Move": Move}) == move  # a repr one can paste back


@pytest.mark.parametrize("variant_id", ["klondike", "", "Clock", None, 3])
def test_unknown_variant(variant_id):
    assert_invalid("unknown_variant", new_game, variant_id, 1)
    assert_invalid("unknown_variant", get_variant, variant_id)


@pytest.mark.parametrize("seed", [-1, 2**64, 2**100, "1", 1.0, True, None])
@pytest.mark.parametrize("variant_id", ["clock", "salic-law", "four-corners"])
def test_bad_seed(variant_id, seed):
    assert_invalid("invalid_seed", new_game, variant_id, seed)


@pytest.mark.parametrize("seed", [0, 2**64 - 1])
def test_seed_range_ends_are_accepted(seed):
    assert new_game("clock", seed).status == "playing"


def _snapshot(variant_id="four-corners", **changes):
    data = new_game(variant_id, 5).to_dict()
    data.update(changes)
    return data


def _with_pile(variant_id, index, text):
    data = _snapshot(variant_id)
    data["piles"] = list(data["piles"])
    data["piles"][index] = text
    return data


BAD_SNAPSHOTS = {
    "not-a-dict": "clock",
    "none": None,
    "list": [1, "clock"],
    "empty": {},
    "no-piles": {k: v for k, v in _snapshot().items() if k != "piles"},
    "format-2": _snapshot(format=2),
    "format-text": _snapshot(format="1"),
    "unknown-variant": _snapshot(variant="klondike"),
    "other-variant": _snapshot(variant="clock"),
    "too-few-piles": _snapshot(piles=_snapshot()["piles"][:-1]),
    "piles-not-list": _snapshot(piles=7),
    "bad-status": _snapshot(status="paused"),
    "turn-negative": _snapshot(turn=-1),
    "turn-too-big": _snapshot(turn=12),
    "turn-text": _snapshot(turn="0"),
    "turn-in-clock": _snapshot("clock", turn=1),
    "missing-card": _with_pile("four-corners", 20, _snapshot()["piles"][20][2:]),
    "third-twin": _with_pile("clock", 25, "6C"),
    "odd-text": _with_pile("clock", 25, "6"),
    "not-a-card": _with_pile("clock", 25, "ZZ"),
    "not-ascii": _with_pile("clock", 25, "6\u00e9"),
    "card-for-card": _with_pile("clock", 0, "AS" if _snapshot("clock")["piles"][0] != "AS"
                                else "KD"),
    "pile-not-text": _with_pile("clock", 25, 12),
}


@pytest.mark.parametrize("name", list(BAD_SNAPSHOTS))
def test_bad_snapshot(name):
    with pytest.raises(InvalidMoveError) as caught:
        State.from_dict(BAD_SNAPSHOTS[name])
    assert caught.value.code in {"invalid_snapshot", "unknown_variant", "invalid_card"}


def test_undo_of_a_step_that_does_not_fit():
    state = new_game("clock", 3)
    after, step = state.apply(Move("draw"))
    assert_invalid("invalid_step", state.undo, step)  # the drawn card is not on the talon
    assert after.undo(step) == state


@pytest.mark.parametrize("text", ["1S", "AX", "10H", "as", "", None])
def test_bad_card(text):
    assert_invalid("invalid_card", Card.parse, text)
