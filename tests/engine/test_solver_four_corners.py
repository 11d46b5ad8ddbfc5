"""The Four Corners solver's loss proofs: the relaxed game of ``_trapped`` (a position
it calls trapped is lost) checked against the plain exhaustive search, on crafted and
on random small positions, stock out and stock left."""

from __future__ import annotations

import random

import pytest

from service.engine.rules.four_corners import ACES, KINGS, PACKETS, STOCK_PILE
from service.engine.search import Budget, Outcome, exhaustive_search, solve, solve_state
from service.engine.search.four_corners import _code, _stuck, _trapped

from . import solver_positions
from .positions import craft

RANKS = "A23456789TJQK"


def _trapped_state(state) -> bool:
    piles = state.piles
    return _trapped(tuple(bytes(_code(c) for c in piles[p]) for p in PACKETS),
                    bytes(len(piles[f]) for f in ACES),
                    bytes(14 - len(piles[f]) for f in KINGS),
                    bytes(_code(c) for c in piles[STOCK_PILE]))


def _with_packets(piles: dict[str, str], packets: dict[str, str]):
    piles = dict(piles)
    piles.update({name.replace("_", "-"): cards for name, cards in packets.items()})
    return craft("four-corners", piles)


def _spades(**packets: str):
    """Stock out, hearts, diamonds and clubs home; ace-1 holds AS, king-1 KS down to
    3S; the other 14 spades (AS, both 2S and one of each 3S..KS) in ``packets``."""
    piles = {"ace-1": "AS", "king-1": "".join(r + "S" for r in reversed(RANKS[2:]))}
    for row, suit in enumerate("HDC", start=2):
        piles[f"ace-{row}"] = "".join(r + suit for r in RANKS)
        piles[f"king-{row}"] = "".join(r + suit for r in reversed(RANKS))
    return _with_packets(piles, packets)


REST = {"left_1": "6S5S4S3S", "left_2": "TS9S8S7S", "right_1": "KSQSJS"}


def test_an_ace_over_both_twos_of_its_suit_is_trapped():
    # The second AS can only marry onto a 2S or go home last onto king-1, after a 2S:
    # with both 2S under it, it never leaves its packet.
    trapped = _spades(corner_tl="2S2SAS", **REST)
    assert _trapped_state(trapped)
    assert exhaustive_search(trapped, Budget(200_000, 60))[0] == Outcome.LOST
    assert solve_state(trapped).result == Outcome.LOST
    free = _spades(corner_tl="2SAS2S", **REST)
    assert not _trapped_state(free)
    assert exhaustive_search(free, Budget(200_000, 60))[0] == Outcome.WON
    assert solve_state(free).result == Outcome.WON


@pytest.mark.parametrize(("left", "stock"), [(10, 0), (14, 0), (12, 3)])
def test_a_trapped_position_is_lost_by_the_exhaustive_search(left, stock):
    rng = random.Random(f"trap {left} {stock}")
    seen = {(True, Outcome.LOST): 0, (False, Outcome.WON): 0, (False, Outcome.LOST): 0}
    for _ in range(30):
        state = solver_positions.four_corners(rng, left, stock)
        trapped = _trapped_state(state)
        plain, _moves = exhaustive_search(state, Budget(30_000, 60))
        assert not (trapped and plain == Outcome.WON), state.to_dict()
        if plain != "undecided":
            seen[trapped, plain] += 1
    assert seen[True, Outcome.LOST] >= 2, seen
    assert seen[False, Outcome.WON] >= 5, seen


def _one_suit_left(rng: random.Random, low: bool, packets: int):
    """Stock out, hearts, diamonds and clubs home; of the spades, the ace foundation
    holds only AS and the king foundation KS down to 6S or 7S (``low``), or mirrored:
    the king foundation holds only KS and the ace foundation AS up to 7S or 8S.  The
    other spades (a second AS or KS among them) lie at random on the first ``packets``
    packets: the positions where :func:`_trapped` weighs which foundation takes its 2
    (or its queen) first."""
    from service.engine.cards import Card

    up, down = (1, rng.randrange(6, 8)) if low else (rng.randrange(7, 9), 13)
    piles = {"ace-1": "".join(r + "S" for r in RANKS[:up]),
             "king-1": "".join(r + "S" for r in reversed(RANKS[down - 1:]))}
    for row, suit in enumerate("HDC", start=2):
        piles[f"ace-{row}"] = "".join(r + suit for r in RANKS)
        piles[f"king-{row}"] = "".join(r + suit for r in reversed(RANKS))
    table = [str(Card(rank, "S")) for rank in range(1, 14) for _twin in range(2)]
    for rank in [*range(1, up + 1), *range(down, 14)]:
        table.remove(str(Card(rank, "S")))
    rng.shuffle(table)
    names = ["corner_tl", "left_1", "left_2", "left_3", "left_4", "corner_bl"][:packets]
    spread = dict.fromkeys(names, "")
    for card in table:
        spread[rng.choice(names)] += card
    return _with_packets(piles, spread)


def _trapped_without_cases(state) -> bool:
    """The relaxed game under the unconditional rules only (no case weighed)."""
    piles = state.piles
    up = bytes(len(piles[f]) for f in ACES)
    down = bytes(14 - len(piles[f]) for f in KINGS)
    return _stuck(tuple(bytes(_code(c) for c in piles[p]) for p in PACKETS), up, down, b"",
                  [u < 2 for u in up], [d > 12 for d in down], [False] * 4, [False] * 4)


@pytest.mark.parametrize(("low", "seed"), [(True, "second"), (False, "split")])
def test_the_cases_of_the_second_ace_and_king_agree_with_the_exhaustive_search(low, seed):
    # Seeds whose positions include some that only the cases prove lost.
    rng = random.Random(f"{seed} {low}")
    seen = {(True, Outcome.LOST): 0, (False, Outcome.WON): 0, (False, Outcome.LOST): 0}
    by_cases = 0
    for _ in range(20):
        state = _one_suit_left(rng, low, 6)
        trapped = _trapped_state(state)
        plain, _moves = exhaustive_search(state, Budget(20_000, 60))
        assert not (trapped and plain == Outcome.WON), state.to_dict()
        if plain != "undecided":
            seen[trapped, plain] += 1
            by_cases += trapped and not _trapped_without_cases(state)
            assert solve_state(state).result == plain, state.to_dict()
    assert seen[True, Outcome.LOST] >= 3, seen
    assert seen[False, Outcome.WON] >= 3, seen
    assert by_cases >= 1, seen


@pytest.mark.parametrize(("seed", "positions"), [(43, 1_000), (63, 10_000), (68, 1_000)])
def test_lost_deals_are_proved_lost_within_a_small_budget(seed, positions):
    # Deal 63 is refuted only near the end of the deal, line by line: the relaxed game
    # must stay cheap (its cases weighed only over the last few stock cards) for the
    # proof to fit in this budget.
    solution = solve("four-corners", seed, max_positions=positions, max_seconds=60)
    assert solution.result == Outcome.LOST
