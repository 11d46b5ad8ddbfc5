"""Pile ids, status transitions (playing -> won / lost / resigned) and snapshots."""

import json

import pytest

from service.engine import (
    LOST,
    PLAYING,
    RESIGNED,
    STATUSES,
    WON,
    Move,
    State,
    get_variant,
    new_game,
    variants,
)
from tests.engine.positions import VARIANT_IDS, assert_refused, candidate_moves, walk

PILE_IDS = {
    "clock": [*(f"foundation-{h}" for h in range(1, 13)), *(f"packet-{h}" for h in range(1, 13)),
              "stock", "talon"],
    "salic-law": [*(f"queen-{i}" for i in range(1, 9)), *(f"foundation-{i}" for i in range(1, 9)),
                  *(f"king-{i}" for i in range(1, 9)), "stock"],
    "four-corners": ["corner-tl", "left-1", "left-2", "left-3", "left-4", "corner-bl",
                     "corner-tr", "right-1", "right-2", "right-3", "right-4", "corner-br",
                     *(f"ace-{r}" for r in range(1, 5)), *(f"king-{r}" for r in range(1, 5)),
                     "stock"],
}
KIND_OF = {"stock": "stock", "talon": "waste", "queen": "reserve", "foundation": "foundation",
           "ace": "foundation", "packet": "tableau", "corner": "tableau", "left": "tableau",
           "right": "tableau"}


def test_the_three_variants_are_registered():
    assert sorted(v.id for v in variants()) == sorted(VARIANT_IDS)
    assert STATUSES == (PLAYING, WON, LOST, RESIGNED)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_pile_ids_and_kinds_match_the_api(variant_id):
    variant = get_variant(variant_id)
    assert list(variant.pile_ids) == PILE_IDS[variant_id]
    for pile_id, kind in zip(variant.pile_ids, variant.kinds, strict=True):
        prefix = pile_id.split("-")[0]
        expected = KIND_OF.get(prefix)
        if prefix == "king":  # Salic Law's king piles are tableau, Four Corners' foundations
            expected = "tableau" if variant_id == "salic-law" else "foundation"
        assert kind == expected, pile_id
    described = variant.describe()
    assert described["id"] == variant_id
    assert described["decks"] == 2
    assert [p["id"] for p in described["piles"]] == PILE_IDS[variant_id]
    json.dumps(described)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_resign_ends_the_game_and_refuses_everything_after(variant_id):
    state = new_game(variant_id, 99)
    after, step = state.apply(Move("resign"))
    assert (after.status, after.piles, after.turn) == (RESIGNED, state.piles, state.turn)
    assert after.is_over
    assert after.legal_moves() == []
    assert step.events == ()
    assert not step.reveals
    for move in [*candidate_moves(after), Move("resign")]:
        assert_refused(after, move, "game_over", "resigned")
    assert after.undo(step) == state


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_resign_is_always_allowed_while_playing_but_never_listed(variant_id):
    for state, _step, _after in walk(variant_id, 3):
        assert Move("resign") not in state.legal_moves()
        assert state.apply(Move("resign"))[0].status == RESIGNED


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_snapshot_stays_under_one_kib(variant_id):
    sizes = []
    for seed in range(30):
        start = new_game(variant_id, seed)
        sizes.append(len(json.dumps(start.to_dict()).encode()))
        for _state, _step, after in walk(variant_id, seed):
            sizes.append(len(json.dumps(after.to_dict()).encode()))
    assert max(sizes) < 1024, max(sizes)


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
@pytest.mark.parametrize("status", STATUSES)
def test_snapshot_round_trip_keeps_status_and_turn(variant_id, status):
    state = new_game(variant_id, 2**64 - 1)
    for _ in range(7):
        state = state.apply(state.legal_moves()[-1])[0]
    state = State(state.variant, state.piles, status, state.turn)
    data = state.to_dict()
    assert set(data) == {"format", "variant", "status", "turn", "piles"}
    assert data["variant"] == variant_id
    assert State.from_dict(json.loads(json.dumps(data))) == state
