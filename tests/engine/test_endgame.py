"""The Four Corners endgame solver (service/engine/endgame.py) and the heuristic hints
it gives once the stock is out: wins found, traps avoided, budget kept, no position
twice."""

from __future__ import annotations

from itertools import pairwise

import pytest

from service.engine import MOVE, WON, Move, State, new_game
from service.engine.hints import heuristic_hint as hint
from service.engine.rules.four_corners import ACES, KINGS, PACKETS
from service.engine.search import endgame
from service.engine.search.endgame import SOLVER_BUDGET, _code, _packets_key, solve
from tests.engine.positions import craft

RANKS = "A23456789TJQK"


def _suits_done(*rows: int) -> dict[str, str]:
    """Foundation rows ``rows`` complete (ace up to king, king down to ace)."""
    piles = {}
    for row in rows:
        suit = "SHDC"[row - 1]
        piles[f"ace-{row}"] = "".join(rank + suit for rank in RANKS)
        piles[f"king-{row}"] = "".join(rank + suit for rank in reversed(RANKS))
    return piles


def _spades_left(**packets: str) -> State:
    """Stock out, hearts, diamonds and clubs home; spades: ace-1 up to 3S, king-1 down
    to 7S, and the other 16 spades in the named packets (all 104 cards present)."""
    piles = _suits_done(2, 3, 4)
    piles.update({"ace-1": "AS2S3S", "king-1": "KSQSJSTS9S8S7S"})
    piles.update({name.replace("_", "-"): cards for name, cards in packets.items()})
    return craft("four-corners", piles)


#: Two 4S can go home to ace-1: the one on left-2 loses the game, the one on left-1 wins.
TWIN_TRAP = {"corner_tl": "7SJS", "left_1": "8S6S4S", "left_2": "9S5STSAS6S2S4S",
             "corner_tr": "KS3SQS5S"}


def _follow_hints(state: State, limit: int = 500) -> State:
    seen = set()
    for _ in range(limit):
        suggestion = hint(state)
        if suggestion is None:
            return state
        assert suggestion.move in state.legal_moves()
        assert state.piles not in seen, "a position came back"
        seen.add(state.piles)
        state, _step = state.apply(suggestion.move)
        if state.is_over:
            return state
    raise AssertionError("following hints did not end")


def test_the_solver_wins_a_position_with_a_trap():
    state = _spades_left(**TWIN_TRAP)
    line = solve(state)
    assert line.won
    assert Move.parse("left-2>ace-1") in state.legal_moves()
    trapped, _ = state.apply(Move.parse("left-2>ace-1"))
    lost = solve(trapped, budget=100_000)
    assert not lost.won
    assert lost.complete                     # searched out: no line wins from there
    suggestion = hint(state)
    assert suggestion.move == Move.parse("left-1>ace-1")
    assert suggestion.card == "4S"
    assert "wins the game" in suggestion.reason


def test_following_the_hints_wins_the_trap_position():
    final = _follow_hints(_spades_left(**TWIN_TRAP))
    assert final.status == WON


def test_the_line_is_legal_and_ends_where_it_says():
    state = _spades_left(**TWIN_TRAP)
    line = solve(state)
    ids = state.variant.pile_ids
    for source, target in line.moves:
        state, _step = state.apply(Move(MOVE, ids[source], ids[target]))
    assert state.status == WON
    assert sum(len(state.piles[f]) for f in (*ACES, *KINGS)) == line.home == 104


def test_the_solver_refuses_a_position_with_a_stock():
    with pytest.raises(ValueError, match="stock"):
        solve(new_game("four-corners", 1))


def _dealt_out(seed: int) -> State:
    """Deal ``seed`` with every card dealt and nothing played (a full endgame)."""
    state = new_game("four-corners", seed)
    while state.stock_count:
        state, _step = state.apply(Move("deal"))
    return state


def test_the_search_keeps_to_its_node_budget():
    state = _dealt_out(3)
    for budget in (1, 10, 200):
        line = solve(state, budget=budget)
        assert line.nodes <= budget
        assert not line.complete
    assert solve(state).nodes <= SOLVER_BUDGET


def test_a_complete_search_is_reported_complete():
    line = solve(_spades_left(**TWIN_TRAP), budget=100_000)
    assert line.won
    # Both 4S and both 6S lie under the rest: a few marriages, then nothing.
    dead = _spades_left(corner_tl="4S4S6S6S5S5SAS2S3S7S8S9SKS", left_1="TSJSQS")
    line = solve(dead, budget=100_000)
    assert not line.won
    assert line.complete
    assert line.nodes < 100
    assert line.home == 88       # 78 of the other suits, 10 spades
    assert line.moves == ()


def potential(state: State) -> tuple[int, int, bytes]:
    """What every move the solver searches raises: (cards home, pairs, the solver's
    canonical key of the packets).  A pair is a card lying on a card of its suit one
    rank away."""
    piles = state.piles
    packets = [[_code(c) for c in piles[p]] for p in PACKETS]
    pairs = sum(abs(a - b) == 1 for p in packets for a, b in pairwise(p))
    home = sum(len(piles[f]) for f in (*ACES, *KINGS))
    return home, pairs, _packets_key(packets)


def _pairs(state: State) -> int:
    pairs = sum(a.suit == b.suit and abs(a.rank - b.rank) == 1
                for p in PACKETS for a, b in pairwise(state.piles[p]))
    assert pairs == potential(state)[1]
    return pairs


def test_only_lateral_marriages_keep_the_pairs():
    # 5S lies on 4S (a pair): moving it onto 6S is lateral, the pairs stay; the 4S
    # uncovered on corner-tl then moves onto 5S from a card it is not paired with: +1.
    state = _spades_left(corner_tl="KSQSJSTS9S8S7S4S5S", left_1="AS2S3S4S6S5S6S")
    after, _ = state.apply(Move.parse("corner-tl>left-1"))
    assert _pairs(after) == _pairs(state)
    assert Move.parse("left-1>corner-tl") in after.legal_moves()     # and back
    assert potential(after) != potential(state)


@pytest.mark.parametrize("seed", range(8))
def test_every_endgame_hint_raises_thepotential(seed, monkeypatch):
    """Home, then pairs, then the order of sorted packets: each hint raises it, so a
    player who follows hints cannot come back to a position (no loop).  This holds for
    any budget of the search; the hints here search with the solver's default one, to
    keep the test quick (test_four_corners_hint.py follows hints with the game's)."""
    monkeypatch.setattr(endgame, "ENDGAME_POSITIONS", SOLVER_BUDGET)
    state = _dealt_out(seed)
    for _ in range(300):
        suggestion = hint(state)
        if suggestion is None:
            break
        after, _step = state.apply(suggestion.move)
        assert potential(after) > potential(state)
        state = after
        if state.is_over:
            break
    else:
        raise AssertionError("hints went on for 300 moves")


def test_no_hint_where_only_marriages_that_gain_nothing_are_left():
    # ace-1 wants 4S and king-1 6S, both buried on corner-tl; 8S may marry onto 9S and
    # back, and nothing else moves.
    state = _spades_left(corner_tl="4S4S6S6S5SAS2S3S7STSJSQSKS8S", left_1="9S",
                         left_2="5S")
    assert set(state.legal_moves()) == {Move.parse("corner-tl>left-1"),
                                        Move.parse("left-1>corner-tl")}
    assert hint(state) is None
    line = solve(state)
    assert line.complete
    assert not line.won
    assert line.moves == ()
