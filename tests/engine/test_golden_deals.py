"""Golden deals: the shuffle of docs/rules.md, "Deals", and each variant's opening, card
by card.

The literals below were computed once by an independent re-implementation of the
shuffle and the openings of docs/rules.md (not by the engine) and pasted here, so that
every deal plays the same on every server and client for ever.  Never regenerate them from the
engine: a difference is a bug in the engine, or a change of the fixed contract.
"""

import random

import pytest

from service.engine import DEAL, DRAW, Move, canonical_pack, new_game, shuffled_pack
from service.engine.cards import cards_text

GOLDEN_PACKS = {  # bottom (index 0) first, top of the stock last
    0: ("2C9H2H7C3H4CTS3S3STCKC7SQDKD5HQDJSJC7H6D9C6S2S2D2H3DAD9S3CJHAS8C"
        "KS7CJC8S5HJH5SJD6D8DAC4HQS5CJD6C5DAD4S5CJSKCTCAS7HQC9D7S2S2C6HKH"
        "5D3C6HTDACKH6C6SQCTH8S9H9D8H8CQHQH9S9CTD7D5S3D3HTS4D4SKS8D8H4C7D"
        "4HQS2DKDAH4DAHTH"),
    42: ("TD8DJCJDJC5H9SJH4CTC3C4S4SAS7HJHJS6D9DADKH6SQS9H4D7C3HKS4C8S2D5D"
         "6HQCTCAC2CQD5H8HJDJS4H5D9C2H9H6D4H7H9DQHQC7D3DTH3S6CAS5C5S2SADTS"
         "QH6H3D5C7SAH8HKH2C8C7DKCKS8CAHQSKC2H6C3SAC5SKD7STD7C6S4D8D8SQD2D"
         "9CTHKD9STS3H3C2S"),
    2**64 - 1: ("AD8H7D9HKDQD7H3S8H7DTC2C2D6DTCTSJSKCKS8C2SQHKH3S7H5CASTS8SKC4DQS"
                "4D3D3DQC3C9S8D4S6CQH9DKDTHKHAH3H5C5H9D5DJDJCTH3H2D4CACTD8D4H2S9C"
                "QD9C4S6CAH5STD6H2H7C2CASQS7C6S4C7S5DQC6HJHJDKS2HACJS5H8C4H6D5S6S"
                "8S7SJHADJC9S9H3C"),
}

GOLDEN_LAYOUTS = {
    ("clock", 0): {
        "foundation-1": "6C",
        "foundation-2": "7H",
        "foundation-3": "8S",
        "foundation-4": "9D",
        "foundation-5": "TC",
        "foundation-6": "JH",
        "foundation-7": "QS",
        "foundation-8": "KD",
        "foundation-9": "2C",
        "foundation-10": "3H",
        "foundation-11": "4S",
        "foundation-12": "5D",
        "packet-1": "THAH4D",
        "packet-2": "AH2D4H",
        "packet-3": "7D4C8H",
        "packet-4": "8DKS4D",
        "packet-5": "TS3D5S",
        "packet-6": "7DTD9C",
        "packet-7": "9SQHQH",
        "packet-8": "8C8H9H",
        "packet-9": "THQC6S",
        "packet-10": "KHACTD",
        "packet-11": "6H3CKH",
        "packet-12": "6H2S7S",
        "stock": ("2C9H2H7C3H4CTS3S3STCKC7SQDKD5HQDJSJC7H6D9C6S2S2D2H3DAD9S3CJHAS8C"
                  "KS7CJC8S5H5SJD6D8DAC4HQS5CJD6C5DAD4S5CJSKCASQC9D"),
        "talon": "",
    },
    ("clock", 42): {
        "foundation-1": "6C",
        "foundation-2": "7H",
        "foundation-3": "8S",
        "foundation-4": "9D",
        "foundation-5": "TC",
        "foundation-6": "JH",
        "foundation-7": "QS",
        "foundation-8": "KD",
        "foundation-9": "2C",
        "foundation-10": "3H",
        "foundation-11": "4S",
        "foundation-12": "5D",
        "packet-1": "2S3CTS",
        "packet-2": "9STH9C",
        "packet-3": "2DQD8D",
        "packet-4": "4D6S7C",
        "packet-5": "TD7SKD",
        "packet-6": "5SAC3S",
        "packet-7": "2HKCAH",
        "packet-8": "8CKSKC",
        "packet-9": "7D8CKH",
        "packet-10": "8HAH7S",
        "packet-11": "5C3D6H",
        "packet-12": "QHTSAD",
        "stock": ("TD8DJCJDJC5H9SJH4CTC3C4SAS7HJS6D9DADKH6SQS9H4D7C3HKS4C8S2D5D6HQC"
                  "AC2CQD5H8HJDJS4H9C2H9H6D4HQHQC7D3DTH3S6CAS5C5S2S"),
        "talon": "",
    },
    ("clock", 2**64 - 1): {
        "foundation-1": "6C",
        "foundation-2": "7H",
        "foundation-3": "8S",
        "foundation-4": "9D",
        "foundation-5": "TC",
        "foundation-6": "JH",
        "foundation-7": "QS",
        "foundation-8": "KD",
        "foundation-9": "2C",
        "foundation-10": "3H",
        "foundation-11": "4S",
        "foundation-12": "5D",
        "packet-1": "3C9H9S",
        "packet-2": "JCAD7S",
        "packet-3": "6S5S6D",
        "packet-4": "4H8C5H",
        "packet-5": "JSAC2H",
        "packet-6": "KSJDJH",
        "packet-7": "6HQC7S",
        "packet-8": "4C6S7C",
        "packet-9": "AS7C2H",
        "packet-10": "6HTD5S",
        "packet-11": "AH9CQD",
        "packet-12": "9C2S4H",
        "stock": ("AD8H7D9HKDQD7H3S8H7DTC2C2D6DTSJSKCKS8C2SQHKH3S5CASTS8SKC4DQS4D3D"
                  "3DQC3C9S8D4S6CQH9DTHKHAH3H5C5H5DJDJCTH2D4CACTD8D"),
        "talon": "",
    },
    ("salic-law", 0): {
        "queen-1": "",
        "queen-2": "",
        "queen-3": "",
        "queen-4": "",
        "queen-5": "",
        "queen-6": "",
        "queen-7": "",
        "queen-8": "",
        "foundation-1": "",
        "foundation-2": "",
        "foundation-3": "",
        "foundation-4": "",
        "foundation-5": "",
        "foundation-6": "",
        "foundation-7": "",
        "foundation-8": "",
        "king-1": "KD",
        "king-2": "",
        "king-3": "",
        "king-4": "",
        "king-5": "",
        "king-6": "",
        "king-7": "",
        "king-8": "",
        "stock": ("2C9H2H7C3H4CTS3S3STCKC7SQDKD5HQDJSJC7H6D9C6S2S2D2H3DAD9S3CJHAS8C"
                  "KS7CJC8S5HJH5SJD6D8DAC4HQS5CJD6C5DAD4S5CJSKCTCAS7HQC9D7S2S2C6HKH"
                  "5D3C6HTDACKH6C6SQCTH8S9H9D8H8CQHQH9S9CTD7D5S3D3HTS4D4SKS8D8H4C7D"
                  "4HQS2DAH4DAHTH"),
    },
    ("salic-law", 42): {
        "queen-1": "",
        "queen-2": "",
        "queen-3": "",
        "queen-4": "",
        "queen-5": "",
        "queen-6": "",
        "queen-7": "",
        "queen-8": "",
        "foundation-1": "",
        "foundation-2": "",
        "foundation-3": "",
        "foundation-4": "",
        "foundation-5": "",
        "foundation-6": "",
        "foundation-7": "",
        "foundation-8": "",
        "king-1": "KD",
        "king-2": "",
        "king-3": "",
        "king-4": "",
        "king-5": "",
        "king-6": "",
        "king-7": "",
        "king-8": "",
        "stock": ("TD8DJCJDJC5H9SJH4CTC3C4S4SAS7HJHJS6D9DADKH6SQS9H4D7C3HKS4C8S2D5D"
                  "6HQCTCAC2CQD5H8HJDJS4H5D9C2H9H6D4H7H9DQHQC7D3DTH3S6CAS5C5S2SADTS"
                  "QH6H3D5C7SAH8HKH2C8C7DKCKS8CAHQSKC2H6C3SAC5SKD7STD7C6S4D8D8SQD2D"
                  "9CTH9STS3H3C2S"),
    },
    ("salic-law", 2**64 - 1): {
        "queen-1": "",
        "queen-2": "",
        "queen-3": "",
        "queen-4": "",
        "queen-5": "",
        "queen-6": "",
        "queen-7": "",
        "queen-8": "",
        "foundation-1": "",
        "foundation-2": "",
        "foundation-3": "",
        "foundation-4": "",
        "foundation-5": "",
        "foundation-6": "",
        "foundation-7": "",
        "foundation-8": "",
        "king-1": "KS",
        "king-2": "",
        "king-3": "",
        "king-4": "",
        "king-5": "",
        "king-6": "",
        "king-7": "",
        "king-8": "",
        "stock": ("AD8H7D9HKDQD7H3S8H7DTC2C2D6DTCTSJSKCKS8C2SQHKH3S7H5CASTS8SKC4DQS"
                  "4D3D3DQC3C9S8D4S6CQH9DKDTHKHAH3H5C5H9D5DJDJCTH3H2D4CACTD8D4H2S9C"
                  "QD9C4S6CAH5STD6H2H7C2CASQS7C6S4C7S5DQC6HJHJD2HACJS5H8C4H6D5S6S8S"
                  "7SJHADJC9S9H3C"),
    },
    ("four-corners", 0): {
        "corner-tl": "TH",
        "left-1": "4D",
        "left-2": "AH",
        "left-3": "2D",
        "left-4": "QS",
        "corner-bl": "4H",
        "corner-tr": "7D",
        "right-1": "4C",
        "right-2": "8H",
        "right-3": "8D",
        "right-4": "4S",
        "corner-br": "4D",
        "ace-1": "",
        "ace-2": "AH",
        "ace-3": "",
        "ace-4": "",
        "king-1": "KS",
        "king-2": "",
        "king-3": "KD",
        "king-4": "",
        "stock": ("2C9H2H7C3H4CTS3S3STCKC7SQDKD5HQDJSJC7H6D9C6S2S2D2H3DAD9S3CJHAS8C"
                  "KS7CJC8S5HJH5SJD6D8DAC4HQS5CJD6C5DAD4S5CJSKCTCAS7HQC9D7S2S2C6HKH"
                  "5D3C6HTDACKH6C6SQCTH8S9H9D8H8CQHQH9S9CTD7D5S3D3HTS"),
    },
    ("four-corners", 42): {
        "corner-tl": "2S",
        "left-1": "3C",
        "left-2": "3H",
        "left-3": "TS",
        "left-4": "9S",
        "corner-bl": "TH",
        "corner-tr": "9C",
        "right-1": "2D",
        "right-2": "QD",
        "right-3": "8S",
        "right-4": "8D",
        "corner-br": "4D",
        "ace-1": "",
        "ace-2": "",
        "ace-3": "",
        "ace-4": "",
        "king-1": "",
        "king-2": "",
        "king-3": "KD",
        "king-4": "",
        "stock": ("TD8DJCJDJC5H9SJH4CTC3C4S4SAS7HJHJS6D9DADKH6SQS9H4D7C3HKS4C8S2D5D"
                  "6HQCTCAC2CQD5H8HJDJS4H5D9C2H9H6D4H7H9DQHQC7D3DTH3S6CAS5C5S2SADTS"
                  "QH6H3D5C7SAH8HKH2C8C7DKCKS8CAHQSKC2H6C3SAC5SKD7STD7C6S"),
    },
    ("four-corners", 2**64 - 1): {
        "corner-tl": "3C",
        "left-1": "9H",
        "left-2": "9S",
        "left-3": "JC",
        "left-4": "JH",
        "corner-bl": "7S",
        "corner-tr": "8S",
        "right-1": "6S",
        "right-2": "5S",
        "right-3": "6D",
        "right-4": "4H",
        "corner-br": "8C",
        "ace-1": "",
        "ace-2": "",
        "ace-3": "AD",
        "ace-4": "",
        "king-1": "",
        "king-2": "",
        "king-3": "",
        "king-4": "",
        "stock": ("AD8H7D9HKDQD7H3S8H7DTC2C2D6DTCTSJSKCKS8C2SQHKH3S7H5CASTS8SKC4DQS"
                  "4D3D3DQC3C9S8D4S6CQH9DKDTHKHAH3H5C5H9D5DJDJCTH3H2D4CACTD8D4H2S9C"
                  "QD9C4S6CAH5STD6H2H7C2CASQS7C6S4C7S5DQC6HJHJDKS2HACJS5H"),
    },
}

GOLDEN_FIRST_ACTIONS = {
    ("clock", 0): [
        ["9D:stock>talon"],
        ["QC:stock>talon"],
        ["AS:stock>talon"],
        ["KC:stock>talon"],
        ["JS:stock>talon"],
    ],
    ("clock", 42): [
        ["2S:stock>talon"],
        ["5S:stock>talon"],
        ["5C:stock>talon"],
        ["AS:stock>talon"],
        ["6C:stock>talon"],
    ],
    ("clock", 2**64 - 1): [
        ["8D:stock>talon"],
        ["TD:stock>talon"],
        ["AC:stock>talon"],
        ["4C:stock>talon"],
        ["2D:stock>talon"],
    ],
    ("salic-law", 0): [
        ["TH:stock>king-1"],
        ["AH:stock>foundation-1"],
        ["4D:stock>king-1"],
        ["AH:stock>foundation-2"],
        ["2D:stock>king-1"],
    ],
    ("salic-law", 42): [
        ["2S:stock>king-1"],
        ["3C:stock>king-1"],
        ["3H:stock>king-1"],
        ["TS:stock>king-1"],
        ["9S:stock>king-1"],
    ],
    ("salic-law", 2**64 - 1): [
        ["3C:stock>king-1"],
        ["9H:stock>king-1"],
        ["9S:stock>king-1"],
        ["JC:stock>king-1"],
        ["AD:stock>foundation-1"],
    ],
    ("four-corners", 0): [
        ["TS:stock>corner-tl"],
        ["3H:stock>left-1"],
        ["3D:stock>left-2"],
        ["5S:stock>left-3"],
        ["7D:stock>left-4"],
    ],
    ("four-corners", 42): [
        ["6S:stock>corner-tl"],
        ["7C:stock>left-1"],
        ["TD:stock>left-2"],
        ["7S:stock>left-3"],
        ["KD:stock>left-4"],
    ],
    ("four-corners", 2**64 - 1): [
        ["5H:stock>corner-tl"],
        ["JS:stock>left-1"],
        ["AC:stock>ace-4", "2H:stock>left-2"],
        ["KS:stock>king-1", "JD:stock>left-3"],
        ["JH:stock>left-4"],
    ],
}

def reference_shuffle(seed: int) -> list[str]:
    """docs/rules.md, "Deals", written out again without the engine: the canonical order is pack 1
    then pack 2, suits C S H D, ranks A..K; index 103 is the top of the stock."""
    pack = [rank + suit for _pack in (1, 2) for suit in "CSHD" for rank in "A23456789TJQK"]
    r = random.Random(seed)
    for n in range(103, 0, -1):
        j = int(r.random() * (n + 1))
        pack[n], pack[j] = pack[j], pack[n]
    return pack


def layout_of(state) -> dict[str, str]:
    return {pile_id: cards_text(pile)
            for pile_id, pile in zip(state.variant.pile_ids, state.piles, strict=True)}


def test_canonical_pack_order():
    pack = [str(card) for card in canonical_pack()]
    assert pack[:13] == ["AC", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC", "JC",
                         "QC", "KC"]
    assert (pack[13], pack[26], pack[39], pack[51]) == ("AS", "AH", "AD", "KD")
    assert pack[52:] == pack[:52]


# 50 seeds: small ones, powers of two and both ends of the range.
@pytest.mark.parametrize("seed", [*range(44), 2**31, 2**32, 2**53 + 1, 2**63, 2**64 - 2,
                                  2**64 - 1])
def test_shuffle_matches_reference(seed):
    assert [str(card) for card in shuffled_pack(seed)] == reference_shuffle(seed)


@pytest.mark.parametrize("seed", list(GOLDEN_PACKS))
def test_golden_shuffled_pack(seed):
    assert cards_text(shuffled_pack(seed)) == GOLDEN_PACKS[seed]
    assert "".join(reference_shuffle(seed)) == GOLDEN_PACKS[seed]


@pytest.mark.parametrize(("variant_id", "seed"), list(GOLDEN_LAYOUTS))
def test_golden_opening_layout(variant_id, seed):
    state = new_game(variant_id, seed)
    assert layout_of(state) == GOLDEN_LAYOUTS[variant_id, seed]
    assert (state.status, state.turn) == ("playing", 0)


@pytest.mark.parametrize(("variant_id", "seed"), list(GOLDEN_FIRST_ACTIONS))
def test_golden_first_five_deals(variant_id, seed):
    """The first five `draw`s (Clock) or `deal`s, with every card each one moved."""
    state = new_game(variant_id, seed)
    action = Move(DRAW if variant_id == "clock" else DEAL)
    events = []
    for _ in range(5):
        state, step = state.apply(action)
        events.append([f"{e.card}:{e.source}>{e.target}" for e in step.events])
    assert events == GOLDEN_FIRST_ACTIONS[variant_id, seed]
