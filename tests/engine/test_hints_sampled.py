"""The hint by sampled deals: what the player sees, the sampler, and a hint that never
peeks at the stock."""

from __future__ import annotations

import random
import re

import pytest

from service.engine import MOVE, Move, State, holds_every_card, new_game
from service.engine.cards import cards_text, parse_cards
from service.engine.hints import HintBudget, heuristic_hint, hint, safe_moves
from service.engine.playout import hint_playout
from service.engine.search import Outcome, searches_of, solve_state
from service.engine.visible import visible_view
from tests.engine.positions import (
    CLOCK_5_LOSING_STOCK,
    CLOCK_5_TO_A_GUESS,
    VARIANT_IDS,
    play,
    walk,
)

#: A budget that no clock cuts: the hint is a function of the position alone.
UNHURRIED = HintBudget(samples=8, positions=250, seconds=60.0)
#: A small budget for the tests that look at many positions.
SMALL = HintBudget(samples=3, positions=60, seconds=60.0)


def _with_stock(state: State, stock) -> State:
    piles = list(state.piles)
    piles[state.variant.stock] = tuple(stock)
    return State(state.variant, tuple(piles), state.status, state.turn)


def _shuffled(state: State, seed: int) -> State:
    stock = list(state.piles[state.variant.stock])
    random.Random(seed).shuffle(stock)
    return _with_stock(state, stock)


def _dealt_out(variant_id: str, seed: int) -> State:
    """Deal ``seed`` played by safe moves home and deals until the stock is out and no
    safe move is left."""
    state = new_game(variant_id, seed)
    while not state.is_over and (state.stock_count or safe_moves(state)):
        safe = safe_moves(state)
        state, _step = state.apply(safe[0] if safe else Move("deal"))
    return state


@pytest.fixture(scope="module")
def guess() -> State:
    """The Clock position of ``CLOCK_5_TO_A_GUESS``: eight cards in the stock."""
    return play(new_game("clock", 5), *CLOCK_5_TO_A_GUESS)


# --- the visible view and the sampler ----------------------------------------------------
@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_the_view_hides_the_stock_order_and_nothing_else(variant_id):
    state = new_game(variant_id, 11)
    view = visible_view(state)
    other = visible_view(_shuffled(state, 1))
    assert other == view
    assert other.key() == view.key()
    assert other.seed() == view.seed()
    assert sorted(view.unseen) == sorted(state.piles[state.variant.stock])
    assert view.counts == (state.stock_count,)
    # Any visible difference is another view: a card moved, the turn, the status.
    after, _step = state.apply(state.legal_moves()[0])
    assert visible_view(after).key() != view.key()
    turned = State(state.variant, state.piles, state.status, state.turn + 1)
    assert visible_view(turned).key() != view.key()


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_sample_is_a_full_position_with_the_same_view(variant_id):
    state = new_game(variant_id, 12)
    view = visible_view(state)
    first = view.sample(random.Random(view.seed()))
    again = view.sample(random.Random(view.seed()))
    assert first == again                                  # seeded: reproducible
    assert holds_every_card(first)
    assert visible_view(first) == view
    others = {view.sample(random.Random(i)).piles for i in range(5)}
    assert len(others) == 5                                # the orders do vary


def test_with_nothing_unseen_the_sample_is_the_position():
    state = play(new_game("salic-law", 41), *["deal"] * 103)
    assert state.stock_count == 0
    view = visible_view(state)
    assert view.unseen == ()
    assert view.sample(random.Random(0)) == state


# --- the hint -----------------------------------------------------------------------------
def test_two_games_alike_but_for_their_stock_get_the_same_hint(guess):
    """The Clock position of deal 5 with its own stock wins, with another order of the
    same eight cards it is lost: a hint that read the stock could tell them apart.  The
    player sees the same table, and gets the same hint."""
    other = _with_stock(guess, parse_cards(CLOCK_5_LOSING_STOCK))
    assert other.piles != guess.piles
    assert visible_view(other) == visible_view(guess)
    assert solve_state(guess).result == Outcome.WON
    assert solve_state(other).result == Outcome.LOST
    suggestion = hint(guess, UNHURRIED)
    assert suggestion == hint(other, UNHURRIED)
    assert suggestion.move == Move.parse("packet-10>foundation-7")
    # How many of the samples are won within the budget grows with the solver's strength.
    assert re.fullmatch(r"2S goes home to foundation-7: wins in [1-8] of 8 sampled deals "
                        r"of the unseen cards", suggestion.reason)
    # Any order of the stock: the same hint.
    for seed in range(3):
        assert hint(_shuffled(guess, seed), UNHURRIED) == suggestion


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_the_hint_never_depends_on_the_stock_order_along_games(variant_id):
    checked = searched = 0
    for i, (state, _step, _after) in enumerate(walk(variant_id, 2, max_idle=60)):
        if i % 5 or state.stock_count < 2:
            continue
        suggestion = hint(state, SMALL)
        assert suggestion == hint(_shuffled(state, i), SMALL), state.to_dict()
        if suggestion is not None:
            assert suggestion.move in state.legal_moves()
            if suggestion.move.type == MOVE:
                assert suggestion.card == str(state.card_of(suggestion.move))
            assert suggestion.reason
        checked += 1
        searched += not safe_moves(state) and len(state.legal_moves()) > 1
    assert checked >= 5
    # Salic Law never has a choice while the stock lasts (a move home or the deal).
    assert searched >= (0 if variant_id == "salic-law" else 3)


def test_with_nothing_unseen_the_hint_follows_a_winning_line():
    """Salic Law once the stock is dealt out: every card is in view, one world is
    searched, and the hint is the first move of a line that wins."""
    state = _dealt_out("salic-law", 15)
    assert visible_view(state).unseen == ()
    suggestion = hint(state, UNHURRIED)
    assert suggestion.reason.endswith(": the first move of a line that wins the game")
    after, _step = state.apply(suggestion.move)
    assert solve_state(after).result == Outcome.WON
    final, _steps = hint_playout("salic-law", 15, advise=lambda s: hint(s, UNHURRIED))
    assert final.status == "won"


@pytest.mark.parametrize(("variant_id", "seed"), [("clock", 3), ("salic-law", 0)])
def test_a_safe_move_home_is_searched_like_the_others(variant_id, seed):
    """Where a safe move home exists, the samples decide when one is won (which card
    goes home first, or a deal first, can decide a game); else the quick hint's safe
    move is the answer, in its words.  (Random walks of Four Corners rarely get its
    stock out, where its safe moves are.)"""
    seen = 0
    for state, _step, _after in walk(variant_id, seed, max_idle=60):
        safe = safe_moves(state)
        if not safe:
            continue
        suggestion = hint(state, SMALL)
        assert suggestion.move in state.legal_moves()
        if "sampled deals" not in suggestion.reason \
                and "line that wins" not in suggestion.reason:
            assert suggestion.move == safe[0]
            assert suggestion.reason.endswith(heuristic_hint(state).reason)
            assert "nothing else will ever need it" in suggestion.reason
        seen += 1
    assert seen >= 3


def test_when_no_sample_is_won_the_quick_hint_answers():
    """At the opening of the Clock nothing is settled within the budget: the answer is
    the heuristic hint, word for word."""
    state = new_game("clock", 42)
    assert hint(state, SMALL) == heuristic_hint(state)


def test_a_lost_position_says_so_and_still_brings_cards_home():
    state = _dealt_out("salic-law", 45)
    assert solve_state(state).result == Outcome.LOST
    suggestion = hint(state, UNHURRIED)
    quick = heuristic_hint(state)
    if quick is None:
        assert suggestion is None
    else:
        assert suggestion.move == quick.move
        assert suggestion.reason == f"the game can no longer be won; {quick.reason}"


def test_the_stock_text_helper_round_trips(guess):
    assert cards_text(parse_cards(CLOCK_5_LOSING_STOCK)) == CLOCK_5_LOSING_STOCK


def test_salic_law_samples_are_searched_deeper_and_a_sample_drawn_twice_once(monkeypatch):
    # A Salic Law deal dealt out to its last stock card, playing each card move as it
    # comes: every sample of the one unseen card is the same deal, searched once, with
    # 4x the positions.
    import service.engine.hints as hints_module

    for seed in range(20):
        state = new_game("salic-law", seed)
        while state.stock_count > 1 and state.status == "playing":
            state, _step = state.apply(state.legal_moves()[0])
        if state.stock_count == 1 and len(state.legal_moves()) > 1:
            break
    assert len(state.legal_moves()) > 1
    budgets = []

    def spy(world, *, max_positions, max_seconds, clock):
        budgets.append(max_positions)
        return solve_state(world, max_positions=max_positions, max_seconds=max_seconds,
                           clock=clock)

    monkeypatch.setattr(hints_module, "solve_state", spy)
    suggestion = hint(state, UNHURRIED)
    assert searches_of(state.variant).hint_positions_scale == 4
    assert budgets == [4 * UNHURRIED.positions]
    assert suggestion is not None
    if "sampled deals" in suggestion.reason:
        assert re.search(r"wins in 8 of 8 sampled deals", suggestion.reason)
