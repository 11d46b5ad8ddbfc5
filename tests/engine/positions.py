"""Helpers of the engine tests: crafted positions, candidate moves, refusal checks."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

from service.engine import (
    DEAL,
    DRAW,
    MOVE,
    PLAYING,
    REFILL,
    IllegalMoveError,
    Move,
    State,
    get_variant,
    new_game,
    variants,
)
from service.engine.cards import cards_text, parse_cards
from service.engine.playout import makes_progress
from tests.notation import cards_on

#: Every registered game, in the registry's order.
VARIANT_IDS = tuple(variant.id for variant in variants())

#: Deterministic, database-free hypothesis settings for the engine tests.
PROPERTY_SETTINGS = settings(deadline=None, derandomize=True, database=None,
                             suppress_health_check=[HealthCheck.too_slow])

FULL_DECK = Counter({rank + suit: 2 for suit in "SHDC" for rank in "A23456789TJQK"})


def craft(variant_id: str, piles: dict[str, str], status: str = PLAYING, turn: int = 0,
          rest: str | None = None) -> State:
    """A position of ``variant_id``: each named pile holds the cards written as text,
    bottom first (``"6C7C"``), every other pile is empty.  With ``rest``, every card of
    the two packs not named goes onto that pile (suit by suit, spades first), so
    the position holds all 104 cards."""
    variant = get_variant(variant_id)
    unknown = set(piles) - set(variant.pile_ids)
    assert not unknown, f"no such pile(s) {unknown}"
    texts = dict(piles)
    if rest is not None:
        texts[rest] = texts.get(rest, "") + leftover(piles.values())
    return State(variant, tuple(parse_cards(texts.get(pile_id, ""))
                                for pile_id in variant.pile_ids), status, turn)


def leftover(texts) -> str:
    """The cards of the two packs not written in ``texts``, as text."""
    used = Counter(text[i:i + 2] for text in texts for i in range(0, len(text), 2))
    missing = FULL_DECK - used
    assert not used - FULL_DECK, f"more than two of {sorted(used - FULL_DECK)}"
    return "".join(card * count for card, count in missing.items())


def text(state: State, pile_id: str) -> str:
    """The cards of one pile as text, bottom first."""
    return cards_text(cards_on(state, pile_id))


def events_text(step) -> list[str]:
    return [f"{e.card}:{e.source}>{e.target}" for e in step.events]


def counts_every_card(state: State) -> bool:
    """Card conservation checked without the engine's own helper."""
    return Counter(str(card) for pile in state.piles for card in pile) == FULL_DECK


def candidate_moves(state: State) -> list[Move]:
    """Every move one could ask for: each ordered pair of distinct pile ids, the three
    actions, and a few moves naming piles this variant does not have."""
    ids = state.variant.pile_ids
    moves = [Move(MOVE, a, b) for a in ids for b in ids if a != b]
    moves += [Move(DEAL), Move(DRAW), Move(REFILL)]
    moves += [Move(MOVE, "nowhere", ids[0]), Move(MOVE, ids[-1], "pile-99"),
              Move(MOVE, "waste", "tableau"), Move(MOVE, "foundation-0", "foundation-13")]
    return moves


def assert_refused(state: State, move: Move | str, code: str, *quoted: str) -> IllegalMoveError:
    """``move`` is refused with rule ``code``, its message quotes every string of
    ``quoted``, the move is not among the legal moves, and ``state`` is unchanged."""
    if isinstance(move, str):
        move = Move.parse(move)
    before = state.to_dict()
    with pytest.raises(IllegalMoveError) as caught:
        state.apply(move)
    error = caught.value
    assert error.code == code, f"{move}: {error!r}"
    for part in quoted:
        assert part in error.message, f"{part!r} not quoted in {error.message!r}"
    assert str(error) == error.message
    assert move not in state.legal_moves()
    assert state.to_dict() == before
    return error


def play(state: State, *moves: str) -> State:
    """Apply each move written as text; return the final state."""
    for move in moves:
        state, _step = state.apply(Move.parse(move))
    return state


def walk(variant_id: str, seed: int, walk_seed: int | None = None, max_idle: int = 200):
    """Play deal ``seed`` by random legal moves (like ``random_playout``) and yield
    ``(state, step, next_state)`` for every move, until the game ends or ``max_idle``
    moves in a row made no progress."""
    state = new_game(variant_id, seed)
    rng = random.Random(seed if walk_seed is None else walk_seed)
    idle = 0
    while not state.is_over and idle < max_idle:
        moves = state.legal_moves()
        after, step = state.apply(moves[int(rng.random() * len(moves))])
        yield state, step, after
        idle = 0 if makes_progress(state.variant, step) else idle + 1
        state = after


def followed(variant_id: str, seed: int, advise, max_moves: int | None = None):
    """Play deal ``seed`` by following ``advise`` (a hint function): the hinted move,
    else the first action (refill, draw or deal).  Yield each position before its move,
    until the game ends, nothing is left to play or ``max_moves`` moves were made."""
    state = new_game(variant_id, seed)
    made = 0
    while not state.is_over and (max_moves is None or made < max_moves):
        yield state
        suggestion = advise(state)
        actions = [m for m in state.legal_moves() if m.type != MOVE]
        if suggestion is None and not actions:
            return
        state, _step = state.apply(suggestion.move if suggestion else actions[0])
        made += 1


#: The Clock's foundation bases (docs/rules.md, "The Clock"), written out again for
#: crafted positions.
CLOCK_BASES = {"foundation-1": "6C", "foundation-2": "7H", "foundation-3": "8S",
               "foundation-4": "9D", "foundation-5": "TC", "foundation-6": "JH",
               "foundation-7": "QS", "foundation-8": "KD", "foundation-9": "2C",
               "foundation-10": "3H", "foundation-11": "4S", "foundation-12": "5D"}


def clock(piles: dict[str, str], rest: str | None = "stock", **kwargs) -> State:
    """A crafted Clock position: the twelve bases on their foundations unless ``piles``
    says otherwise, the named piles, and every other card on ``rest``."""
    return craft("clock", {**CLOCK_BASES, **piles}, rest=rest, **kwargs)


#: The Clock, deal 5: the moves to a position where the order of the eight stock cards
#: decides the game (the deal's own order wins, another loses); from its visible
#: position the sampled hint says "wins in 7 of 8 sampled deals".
CLOCK_5_TO_A_GUESS = (
    "packet-1>foundation-3", "packet-1>foundation-10", "packet-9>foundation-6",
    "packet-10>foundation-12", "packet-1>packet-7", "packet-2>foundation-12",
    "packet-2>foundation-9", "packet-2>foundation-8", "packet-10>foundation-10",
    "packet-6>packet-7", "packet-10>foundation-12", "packet-11>foundation-4",
    "packet-12>foundation-9", "refill", "packet-2>foundation-3", "packet-1>packet-6",
    "packet-2>foundation-10", "packet-9>foundation-2", "packet-1>foundation-2",
    "packet-1>foundation-11", "packet-2>packet-4", "packet-3>packet-12",
    "packet-3>foundation-5", "packet-3>foundation-6", "packet-7>foundation-5",
    "packet-7>foundation-5", "packet-7>foundation-5", "packet-7>foundation-8",
    "packet-6>foundation-8", "packet-6>foundation-8", "packet-7>foundation-4",
    "packet-12>foundation-8", "packet-12>foundation-8", "packet-11>foundation-8",
    "packet-9>packet-4", "refill", "packet-6>foundation-12", "packet-3>foundation-1",
    "packet-5>packet-12", "packet-5>foundation-7", "packet-6>foundation-7",
    "packet-7>packet-11", "packet-7>foundation-4", "packet-7>foundation-2",
    "packet-12>foundation-4", "packet-12>foundation-4", "refill", "packet-1>packet-12",
    "packet-1>foundation-10", "packet-10>foundation-10", "packet-1>packet-7",
    "packet-5>foundation-5", "packet-5>foundation-11", "packet-3>foundation-11",
    "packet-10>foundation-3", "packet-5>foundation-3", "refill", "packet-3>foundation-1",
    "packet-3>packet-1", "packet-3>packet-2", "packet-5>foundation-6",
    "packet-9>foundation-1",
)
#: Another order of the same eight stock cards (top last), with which the position
#: above is lost whatever the player does.
CLOCK_5_LOSING_STOCK = "2D3HKCKSAC8CTC2H"
