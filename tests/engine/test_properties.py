"""Properties over random deals and random games (hypothesis, deterministic settings).

At every position reached: the 104 cards are all there; every listed move is accepted,
can be taken back exactly and its step survives the text encoding; every other move one
could ask for is refused with ``IllegalMoveError`` and leaves the state as it was; the
snapshot round-trips.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine import (
    MOVE,
    IllegalMoveError,
    Move,
    State,
    holds_every_card,
    new_game,
)
from tests.engine.positions import (
    PROPERTY_SETTINGS,
    VARIANT_IDS,
    candidate_moves,
    counts_every_card,
    walk,
)

SEEDS = st.integers(0, 2**64 - 1)
WALK_SEEDS = st.integers(0, 2**32 - 1)


def check_position(state: State) -> None:
    snapshot = state.to_dict()
    assert holds_every_card(state)
    assert counts_every_card(state)
    assert State.from_dict(snapshot) == state
    legal = state.legal_moves()
    assert len(set(legal)) == len(legal), "a move is listed twice"
    if state.is_over:
        assert legal == []
    for move in legal:
        after, step = state.apply(move)
        assert step.move == move
        assert step.turn == state.turn
        assert Move.from_dict(move.to_dict()) == move
        if move.type == MOVE:
            assert step.events[0].card == state.card_of(move)
            assert (step.events[0].source, step.events[0].target) == (move.source, move.target)
        else:
            assert step.reveals
        assert holds_every_card(after)
        assert after.undo(step) == state
        assert State.from_dict(after.to_dict()) == after
        assert after.to_dict_after(snapshot, step) == after.to_dict()
    listed = set(legal)
    for move in candidate_moves(state):
        if move in listed:
            continue
        with pytest.raises(IllegalMoveError) as caught:
            state.apply(move)
        if state.is_over:
            assert caught.value.code == "game_over"
        assert state.to_dict() == snapshot


def random_move(state: State, rng: random.Random) -> State:
    moves = state.legal_moves()
    return state.apply(moves[int(rng.random() * len(moves))])[0]


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
@settings(PROPERTY_SETTINGS, max_examples=60)
@given(seed=SEEDS, walk_seed=WALK_SEEDS, dealt_out=st.sampled_from([False, True, True]),
       depth=st.integers(0, 80), checked=st.integers(1, 10))
def test_every_position_of_a_random_game_obeys_the_contract(variant_id, seed, walk_seed,
                                                              dealt_out, depth, checked):
    """Play deal ``seed`` at random, first until the stock is out if ``dealt_out`` (to
    reach end games), then ``depth`` moves more; then check each of the next ``checked``
    positions exhaustively."""
    rng = random.Random(walk_seed)
    state = new_game(variant_id, seed)
    while dealt_out and state.stock_count and not state.is_over:
        state = random_move(state, rng)
    for _ in range(depth):
        if state.is_over:
            break
        state = random_move(state, rng)
    for _ in range(checked):
        check_position(state)
        if state.is_over:
            break
        state = random_move(state, rng)


@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1])
@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_every_position_of_whole_games_obeys_the_contract(variant_id, seed):
    """The same exhaustive check at every position of a whole random game."""
    positions, final = 0, None
    for state, _step, after in walk(variant_id, seed, max_idle=30):
        check_position(state)
        positions, final = positions + 1, after
    check_position(final)
    assert positions > 40


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
@settings(PROPERTY_SETTINGS, max_examples=30)
@given(seed=SEEDS, walk_seed=WALK_SEEDS, length=st.integers(0, 400))
def test_undoing_every_step_in_reverse_gives_back_the_opening(variant_id, seed, walk_seed,
                                                              length):
    rng = random.Random(walk_seed)
    opening = state = new_game(variant_id, seed)
    history = []
    for _ in range(length):
        moves = state.legal_moves()
        if not moves:
            break
        before = state
        state, step = state.apply(moves[int(rng.random() * len(moves))])
        assert holds_every_card(state)
        assert state.undo(step) == before
        history.append((before, step))
    for before, step in reversed(history):
        state = state.undo(step)
        assert state == before
    assert state == opening


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
@settings(PROPERTY_SETTINGS, max_examples=50)
@given(seed=SEEDS)
def test_every_opening_obeys_the_contract(variant_id, seed):
    state = new_game(variant_id, seed)
    assert state.status == "playing"
    assert state.legal_moves()
    check_position(state)
