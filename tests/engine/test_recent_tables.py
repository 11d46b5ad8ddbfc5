"""The tables a process remembers (``RECENT_TABLES``) and the piles it remembers split
(``pile_codes``): what they give back is what parsing gives, and only whole tables are
kept."""

import json
import threading

import pytest

from service.engine import InvalidMoveError, State, new_game
from service.engine.base import RECENT_TABLES
from service.engine.cards import RecentTables, parse_table, pile_codes
from tests.engine.positions import VARIANT_IDS, walk


def _stored(data: dict) -> dict:
    """``data`` as a read from the store gives it: new string objects."""
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_the_table_a_step_printed_is_read_back_as_parsing_reads_it(variant_id):
    checked = 0
    for seed in (3, 11):
        before = _stored(new_game(variant_id, seed).to_dict())
        State.from_dict(before)  # parsed, whole: remembered
        assert tuple(before["piles"]) in RECENT_TABLES
        for _state, step, after in walk(variant_id, seed):
            printed = _stored(after.to_dict_after(before, step))
            assert printed == after.to_dict()
            texts = tuple(printed["piles"])
            assert RECENT_TABLES.get(texts) == parse_table(texts)[0] == after.piles
            read = State.from_dict(printed)
            assert read == after
            assert read.piles is RECENT_TABLES.get(texts)
            before = printed
            checked += 1
    assert checked > 50


def test_a_table_without_every_card_is_never_remembered():
    whole = new_game("salic-law", 5).to_dict()
    piles = list(whole["piles"])
    index = next(i for i, text in enumerate(piles) if len(text) >= 4)
    piles[index] = piles[index][2:]  # one card gone
    broken = {**whole, "piles": piles}
    for _ in range(2):  # refused the second time too
        with pytest.raises(InvalidMoveError) as refused:
            State.from_dict(_stored(broken))
        assert refused.value.code == "invalid_snapshot"
        assert tuple(piles) not in RECENT_TABLES
    # Nor what a step prints from it: a step keeps every card only of a whole table.
    variant = State.from_dict(whole).variant
    short = State(variant, tuple(parse_table(piles)[0]), "playing", 0)
    move = short.legal_moves()[0]
    after, step = short.apply(move)
    printed = after.to_dict_after(broken, step)
    assert tuple(printed["piles"]) not in RECENT_TABLES
    with pytest.raises(InvalidMoveError):
        State.from_dict(_stored(printed))


def test_a_remembered_table_is_still_checked_against_its_snapshot():
    data = _stored(new_game("clock", 9).to_dict())
    State.from_dict(data)
    assert tuple(data["piles"]) in RECENT_TABLES
    for change in ({"status": "asleep"}, {"turn": -1}, {"variant": "salic-law"},
                   {"format": 99}):
        with pytest.raises(InvalidMoveError) as refused:
            State.from_dict({**data, **change})
        assert refused.value.code == "invalid_snapshot"


def test_the_oldest_table_goes_first():
    tables = RecentTables(3)
    for n in range(5):
        tables.put((f"{n}",), ((),))
    assert len(tables) == 3
    assert [("0",) in tables, ("1",) in tables] == [False, False]
    assert all((f"{n}",) in tables for n in (2, 3, 4))
    tables.put(("2",), ((),))  # known already: nothing goes
    assert len(tables) == 3
    assert ("2",) in tables


def test_threads_putting_at_once_keep_the_bound():
    tables = RecentTables(64)
    errors = []

    def put(thread: int):
        try:
            for n in range(3000):
                tables.put((f"{thread}-{n}",), ((),))
                tables.get((f"{thread}-{n - 10}",))
        except Exception as error:  # any error fails the test below
            errors.append(error)

    threads = [threading.Thread(target=put, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(tables) == 64


def test_pile_codes_split_a_pile_sharing_one_string_per_card():
    text = new_game("four-corners", 1).to_dict()["piles"][-1]  # the stock: many cards
    assert pile_codes(text) == tuple(text[i:i + 2] for i in range(0, len(text), 2))
    assert len(pile_codes(text)) == len(text) // 2 > 20
    assert pile_codes(text) is pile_codes(text[:])  # remembered
    first, other = pile_codes("ASKH"), pile_codes("QDAS")
    assert first[0] is other[1]
    assert pile_codes("") == ()
    assert pile_codes("ASZZ") == ("AS", "ZZ")  # a code that is no card shown as it is
