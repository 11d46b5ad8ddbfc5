"""The journal: one token per change, replayed from the deal to every position.

A random game with undos mixed in is written token by token as the service writes it;
its replay must reach every intermediate position exactly, list the moves not undone as
the history, and give every change the events the live game produced.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine import (
    DEAL,
    DRAW,
    MOVE,
    REFILL,
    RESIGN,
    InvalidMoveError,
    Move,
    get_variant,
    variants,
)
from service.engine.journal import PILE_CHARS, UNDO, Replay, encode, tokens
from tests.engine.positions import PROPERTY_SETTINGS, VARIANT_IDS


def _play(variant_id: str, seed: int, rng: random.Random, steps: int):
    """A live game of random moves and undos: (journal, [(version, state, kind, events)],
    final state, history)."""
    variant = get_variant(variant_id)
    state = variant.deal(seed)
    journal, seen, done = [], [], []
    for version in range(1, steps + 1):
        legal = state.legal_moves()
        if done and (not legal or rng.random() < 0.2):
            _made, step = done.pop()
            state = state.undo(step)
            journal.append(UNDO)
            events = [(e.card, e.target, e.source) for e in reversed(step.events)]
            seen.append((version, state, "undo", events))
            continue
        if not legal:
            break
        move = rng.choice(legal)
        state, step = state.apply(move)
        journal.append(encode(variant, move))
        done.append((version, step))
        seen.append((version, state, "move", [tuple(e) for e in step.events]))
        if state.is_over:
            break
    return "".join(journal), seen, state, done


@given(variant_id=st.sampled_from(VARIANT_IDS), seed=st.integers(0, 2**64 - 1),
       walk=st.integers(0, 2**32 - 1))
@settings(PROPERTY_SETTINGS)
def test_a_journal_replays_every_position_event_and_the_history(variant_id, seed, walk):
    journal, seen, final, done = _play(variant_id, seed, random.Random(walk), 60)
    assert len(list(tokens(journal))) == len(seen)  # one token per version
    replay = Replay(get_variant(variant_id), seed)
    for change, (version, state, kind, events) in zip(replay.run(journal), seen, strict=True):
        assert (change.version, change.kind) == (version, kind)
        assert [tuple(e) for e in change.events] == events
        assert replay.state == state
        assert change.status == state.status
        assert change.entry()["version"] == version
    assert replay.state == final
    assert replay.version == len(seen)
    assert [(v, step) for v, step in replay.history] == done


def test_the_journal_replays_in_pieces_as_a_follower_reads_it():
    journal, seen, final, _done = _play("salic-law", 7, random.Random(3), 80)
    replay = Replay(get_variant("salic-law"), 7)
    read = 0
    for cut in (0, 5, 17, len(journal)):
        list(replay.run(journal[read:cut]))
        read = cut
    assert replay.state == final
    assert replay.version == len(seen)


def test_tokens_are_short_and_name_piles_by_their_place():
    clock = get_variant("clock")
    first, second = clock.pile_ids[0], clock.pile_ids[1]
    assert encode(clock, Move(MOVE, first, second)) == "ab"
    assert [encode(clock, Move(kind)) for kind in (DEAL, DRAW, REFILL, RESIGN)] == \
        ["0", "1", "2", "3"]
    assert list(tokens("ab01234Zz")) == ["ab", "0", "1", "2", "3", "4", "Zz"]
    assert all(len(v.pile_ids) <= len(PILE_CHARS) for v in variants())


@pytest.mark.parametrize(("text", "why"), [
    ("a", "cut short"), ("a0", "cut short"), ("!ab", "no journal token"),
    ("4", "nothing to undo"), ("ZZ", "lacks"),
])
def test_a_broken_journal_is_invalid_journal(text, why):
    with pytest.raises(InvalidMoveError) as raised:
        list(Replay(get_variant("clock"), 42).run(text))
    assert raised.value.code == "invalid_journal"
    assert why in raised.value.message


def test_an_illegal_move_in_a_journal_is_invalid_journal():
    clock = get_variant("clock")
    stock = clock.pile_ids.index("stock")
    with pytest.raises(InvalidMoveError) as raised:
        list(Replay(clock, 42).run(PILE_CHARS[stock] + PILE_CHARS[0]))
    assert raised.value.code == "invalid_journal"
    assert "version 1" in raised.value.message
