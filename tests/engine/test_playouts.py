"""Whole games: every variant played to its end by random_playout, the one generic
random-play test of the engine, and a few greedy games that reach real wins."""

import random
from collections import Counter

import pytest

from service.engine import (
    FOUNDATION,
    LOST,
    PLAYING,
    RESIGNED,
    WON,
    Move,
    State,
    holds_every_card,
    new_game,
)
from service.engine.playout import DEFAULT_MAX_IDLE, makes_progress, random_playout
from tests.engine.positions import VARIANT_IDS, counts_every_card, walk
from tests.notation import cards_on

PLAYOUTS = 300


def on_foundations(state: State) -> int:
    return sum(len(pile) for pile, kind in zip(state.piles, state.variant.kinds, strict=True)
               if kind == FOUNDATION)


def assert_final(state: State) -> None:
    """What a finished game must look like, whatever its status."""
    assert holds_every_card(state)
    assert counts_every_card(state)
    assert state.status in (WON, LOST, RESIGNED)
    assert state.legal_moves() == []
    still = State(state.variant, state.piles, PLAYING, state.turn).legal_moves()
    if state.status == LOST:
        assert still == [], "a lost game has no legal move left"
        assert state.stock_count == 0
    elif state.status == RESIGNED:
        assert still, "a play-out resigns only where it could go on"
    else:
        assert state.stock_count == 0
        if state.variant.id == "salic-law":  # queens above, jacks up, kings bare
            assert on_foundations(state) == 88
            assert all(len(cards_on(state, f"queen-{i}")) == 1 for i in range(1, 9))
            assert all(len(cards_on(state, f"king-{i}")) == 1 for i in range(1, 9))
            assert all(str(cards_on(state, f"foundation-{i}")[-1])[0] == "J" for i in range(1, 9))
        else:
            assert on_foundations(state) == 104


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_random_playouts_end_properly(variant_id):
    statuses = Counter()
    for seed in range(PLAYOUTS):
        final, steps = random_playout(variant_id, seed, random.Random(seed))
        assert steps > 0
        assert_final(final)
        statuses[final.status] += 1
    assert statuses[LOST] > PLAYOUTS // 2, statuses


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_random_playouts_on_large_seeds(variant_id):
    rng = random.Random(2024)
    for _ in range(20):
        final, _steps = random_playout(variant_id, rng.getrandbits(64), rng)
        assert_final(final)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_random_playout_is_reproducible(variant_id):
    first = random_playout(variant_id, 12, random.Random(34))
    again = random_playout(variant_id, 12, random.Random(34))
    assert first == again


def test_playouts_resign_after_max_idle_moves_without_progress():
    """Clock twins can be married back and forth for ever: with max_idle=1 a game
    resigns at its first marriage, with the default most games find their real end."""
    resigned = Counter()
    for seed in range(60):
        for max_idle in (1, DEFAULT_MAX_IDLE):
            final, _steps = random_playout("clock", seed, random.Random(seed), max_idle=max_idle)
            assert_final(final)
            resigned[max_idle] += final.status == RESIGNED
    assert resigned[1] > resigned[DEFAULT_MAX_IDLE]


def test_max_idle_must_be_positive():
    with pytest.raises(ValueError, match="max_idle"):
        random_playout("clock", 1, random.Random(1), max_idle=0)


def test_progress_means_a_card_to_a_foundation_or_out_of_the_stock():
    state = new_game("four-corners", 2**64 - 1)
    _after, step = state.apply(Move("deal"))
    assert makes_progress(state.variant, step)
    state = new_game("clock", 0)
    _after, step = state.apply(Move("resign"))
    assert not makes_progress(state.variant, step)
    marriage = next(step for seed in range(10) for _s, step, _a in walk("clock", seed)
                    if step.move.type == "move" and step.move.target.startswith("packet"))
    assert not makes_progress(state.variant, marriage)
    to_foundation = next(step for _s, step, _a in walk("clock", 0)
                         if step.move.type == "move" and step.move.target.startswith("found"))
    assert makes_progress(state.variant, to_foundation)

def greedy_playout(variant_id: str, seed: int) -> State:
    """Foundation moves first, then deal/draw/refill, then anything; resigns when idle."""
    state = new_game(variant_id, seed)
    rng = random.Random(seed)
    kinds, index = state.variant.kinds, state.variant.index
    idle = 0
    while not state.is_over:
        moves = state.legal_moves()
        up = [m for m in moves if m.type == "move" and kinds[index[m.target]] == FOUNDATION]
        state, step = state.apply(rng.choice(up or [m for m in moves if m.type != "move"]
                                             or moves))
        idle = 0 if makes_progress(state.variant, step) else idle + 1
        if idle >= 100 and not state.is_over:
            state = state.apply(Move("resign"))[0]
    return state


@pytest.mark.parametrize("variant_id", ["clock", "salic-law"])
def test_real_deals_can_be_won(variant_id):
    wins = 0
    for seed in range(200):
        final = greedy_playout(variant_id, seed)
        assert_final(final)
        wins += final.status == WON
    assert wins >= 2
