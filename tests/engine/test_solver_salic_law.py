"""The Salic Law solver's deferring search (``_SalicSearch`` with ``plain=False``):
checked against the plain exhaustive search, its rule for lost positions after the deal
on a crafted table, and the two searches a solver's budget is shared by."""

from __future__ import annotations

import random

import pytest

from service.engine import get_variant
from service.engine.rules.salic_law import STOCK_PILE
from service.engine.search import (
    Budget,
    Outcome,
    exhaustive_search,
    salic_law,
    salic_law_after_deal,
    solve,
    winning_steps,
)

from . import solver_positions


def _deferring(state, positions: int = 1_000_000):
    return salic_law._SalicSearch(state, Budget(positions, 60), plain=False).run()


def _agrees_with_the_exhaustive_search(search, rng, left, stock, lanes, tries: int):
    """``search`` and the plain exhaustive search on ``tries`` generated positions: where
    the exhaustive search settles one, both must say the same and a won line must win.
    How many of each answer there were."""
    settled = {Outcome.WON: 0, Outcome.LOST: 0}
    for _ in range(tries):
        state = solver_positions.salic_law(rng, left, stock, lanes)
        plain, _moves = exhaustive_search(state, Budget(30_000, 60))
        if plain == Outcome.UNDECIDED:
            continue
        result, moves = search(state)
        assert result == plain, state.to_dict()
        if result == Outcome.WON:
            winning_steps(state, moves)            # raises unless the line wins
        settled[result] += 1
    return settled


@pytest.fixture
def dominated_count(monkeypatch):
    """How many positions the rule for lost positions after the deal cut."""
    count = [0]
    rule = salic_law._SalicSearch.dominated

    def counted(search, sleep):
        cut = rule(search, sleep)
        count[0] += cut
        return cut

    monkeypatch.setattr(salic_law._SalicSearch, "dominated", counted)
    return count


@pytest.mark.parametrize(("left", "stock", "lanes"), [(20, 6, 2), (26, 12, 3)])
def test_the_deferring_search_agrees_with_the_exhaustive_search(left, stock, lanes):
    rng = random.Random(f"salic deferring {left} {stock}")
    settled = _agrees_with_the_exhaustive_search(
        _deferring, rng, left, stock, lanes, 8 if left > 20 else 10)
    assert settled[Outcome.WON] >= 5, settled
    assert settled[Outcome.LOST] >= 1, settled


def test_a_position_after_the_deal_cut_as_lost_leaves_the_answer_alone(dominated_count):
    # A position found by trying generated ones: the rule cuts a position after the
    # deal, and the answer stays the exhaustive search's.
    rng = random.Random("salic deferring 24 12")
    for _ in range(32):
        state = solver_positions.salic_law(rng, 24, 12, 2)
    result, moves = _deferring(state)
    assert dominated_count[0] >= 1
    assert exhaustive_search(state, Budget(30_000, 60))[0] == result == Outcome.WON
    winning_steps(state, moves)


def _after_the_deal(piles, found):
    state = get_variant("salic-law").deal(0)
    search = salic_law._SalicSearch(state, Budget(1000, 60), plain=False)
    search.stock = []
    search.piles = [list(pile) for pile in piles]
    search.found = list(found)
    return search


def test_a_position_is_lost_when_a_lost_one_sends_a_card_home_to_it():
    # X: a 7 home on the foundation at 7; Y: that 7 back on the pile with 9 5.
    x_piles = ([13, 9, 5], [13, 11], [13, 4, 10], [13], [13], [13], [13], [13])
    y_piles = ([13, 9, 5, 7], *x_piles[1:])
    found = [7, 3, 6, 11, 11, 11, 11, 11]
    y = _after_the_deal(y_piles, [6, *found[1:]])
    y_key = y.key()
    x = _after_the_deal(x_piles, found)
    assert not x.dominated(())
    x.lost[y_key] = ()
    assert x.dominated(())
    # A card of rank 7 asleep in Y wakes when the 7 goes home: still lost...
    x.lost[y_key] = ((bytes([13, 9, 5, 7]), 3),)
    assert not x.dominated(())              # ...but not when it is the card laid back,
    x.lost[y_key] = ((bytes([13, 4, 10]), 2),)
    assert not x.dominated(())              # nor when a card asleep in Y is awake in X,
    assert x.dominated(((2, 2),))           # only when it sleeps in X as well.


def test_a_solvers_budget_goes_to_the_deferring_search_then_the_plain_one():
    # Deal 25: the deferring search wins it early, the plain one not in 40,000 positions.
    state = get_variant("salic-law").deal(25)
    plain = salic_law._SalicSearch(state, Budget(40_000, 60), plain=True).run()
    assert plain[0] == Outcome.UNDECIDED
    solution = solve("salic-law", 25, max_positions=100_000, max_seconds=60)
    assert solution.result == Outcome.WON           # replayed by the solver
    assert solution.searched < salic_law.DEFERRING_POSITIONS
    # Deal 61: the plain search wins it at once, the deferring one not in its part.
    state = get_variant("salic-law").deal(61)
    assert _deferring(state, salic_law.DEFERRING_POSITIONS)[0] == Outcome.UNDECIDED
    solution = solve("salic-law", 61, max_positions=100_000, max_seconds=60)
    assert solution.result == Outcome.WON
    assert solution.searched > salic_law.DEFERRING_POSITIONS
    # A hint's budget goes to the plain search alone.
    small = solve("salic-law", 61, max_positions=2_000, max_seconds=60)
    assert small.result == Outcome.WON
    assert small.searched < 2_000


@pytest.mark.parametrize(("left", "stock", "lanes"), [(18, 0, 2), (20, 3, 2), (22, 6, 2)])
def test_the_search_with_no_card_asleep_after_the_deal_agrees_with_the_exhaustive_search(
        left, stock, lanes):
    def awake(state):
        return salic_law._SalicSearch(state, Budget(1_000_000, 60), plain=True,
                                      awake=True).run()

    settled = _agrees_with_the_exhaustive_search(
        awake, random.Random(f"salic {left} {stock}"), left, stock, lanes, 15)
    assert settled[Outcome.WON] >= 3, settled
    assert settled[Outcome.LOST] >= 1, settled


def test_with_no_card_asleep_after_the_deal_a_position_is_searched_once():
    # Deal 12 after its deal: with sleep sets a position met again under fewer cards
    # asleep is searched again; with none, every position expanded is a new one.
    state = get_variant("salic-law").deal(12)
    while state.piles[STOCK_PILE]:
        state, _step = state.apply(salic_law.Move(salic_law.DEAL))
    asleep = salic_law._SalicSearch(state, Budget(20_000, 60), plain=True)
    asleep.run()
    assert len(asleep.seen) < 20_000
    awake = salic_law._SalicSearch(state, Budget(20_000, 60), plain=True, awake=True)
    awake.run()
    assert len(awake.seen) == awake.budget.searched


def test_a_solvers_budget_goes_to_the_searches_and_the_win_finder_in_turn(monkeypatch):
    made = []
    search, finder_run = salic_law._SalicSearch, salic_law._WinFinder.run

    def recorded(state, budget, plain=False, awake=False):
        made.append((plain, awake))
        return search(state, budget, plain, awake)

    def run(finder, budget):
        made.append("finder")
        return finder_run(finder, budget)

    monkeypatch.setattr(salic_law, "_SalicSearch", recorded)
    monkeypatch.setattr(salic_law._WinFinder, "run", run)
    # Deal 12 is not settled within the budget: the deferring search, the win finder
    # (which makes its search after the deal once), the plain search with no card asleep
    # after the deal, the win finder again.
    solution = solve("salic-law", 12, max_positions=100_000, max_seconds=1e9)
    assert solution.result == Outcome.UNDECIDED
    assert solution.searched == 100_000
    assert made == [(False, False), (True, True), "finder", (True, True), "finder"]
    made.clear()
    solve("salic-law", 61, max_positions=2_000, max_seconds=60)   # a hint's budget
    assert made == [(True, False)]


@pytest.mark.parametrize(("left", "lanes"), [(16, 3), (20, 2)])
def test_a_card_alone_on_its_king_goes_home_and_the_answer_stays(monkeypatch, left, lanes):
    # Positions after the deal: the search with no card asleep plays a card alone on its
    # king home at once, which the safe moves home alone would not, and still agrees with
    # the exhaustive search.
    forced = [0]
    rule = salic_law._SalicSearch.home_forced

    def counted(search):
        lone = [k for k, pile in enumerate(search.piles)
                if len(pile) == 2 and pile[-1] - 1 in search.found
                and pile[-1] > min(search.found) + 1]
        played = rule(search)
        forced[0] += any(k in lone for k, _f, _rank in played)
        return played

    monkeypatch.setattr(salic_law._SalicSearch, "home_forced", counted)

    def awake(state):
        return salic_law._SalicSearch(state, Budget(1_000_000, 60), plain=True,
                                      awake=True).run()

    settled = _agrees_with_the_exhaustive_search(
        awake, random.Random(f"salic lone {left} {lanes}"), left, 0, lanes, 15)
    assert settled[Outcome.WON] >= 3, settled
    assert settled[Outcome.LOST] >= 1, settled
    assert forced[0] >= 5


def test_a_card_whose_rank_lies_only_under_it_goes_home_and_the_answer_stays(monkeypatch):
    # Positions after the deal: the search with no card asleep tries only the move home
    # of a top card whose rank no other card off its pile shares, and still agrees with
    # the exhaustive search.
    forced = [0]
    rule = salic_law_after_deal._only_here

    def counted(found, pile):
        only = rule(found, pile)
        forced[0] += only and len(pile) > 2 and pile[-1] > min(found) + 1
        return only

    monkeypatch.setattr(salic_law_after_deal, "_only_here", counted)

    def awake(state):
        return salic_law._SalicSearch(state, Budget(1_000_000, 60), plain=True,
                                      awake=True).run()

    settled = _agrees_with_the_exhaustive_search(
        awake, random.Random("salic only here"), 18, 0, 3, 25)
    assert settled[Outcome.WON] >= 3, settled
    assert settled[Outcome.LOST] >= 1, settled
    assert forced[0] >= 5


def test_the_win_finder_wins_a_deal_the_searches_do_not_within_a_small_budget():
    # Deal 730: neither depth-first search wins it within the budget, the win finder
    # does within its first share, and the line replays to a won game.
    state = get_variant("salic-law").deal(730)
    assert _deferring(state, salic_law.DEFERRING_POSITIONS)[0] == Outcome.UNDECIDED
    plain = salic_law._SalicSearch(state, Budget(60_000, 60), plain=True, awake=True)
    assert plain.run()[0] == Outcome.UNDECIDED
    solution = solve("salic-law", 730, max_positions=80_000, max_seconds=1e9)
    assert solution.result == Outcome.WON
    first = int((80_000 - salic_law.DEFERRING_POSITIONS) * salic_law.FINDER_SHARE)
    assert solution.searched < salic_law.DEFERRING_POSITIONS + first
    winning_steps(state, [step.move for step in solution.line])   # raises unless the line wins
    again = solve("salic-law", 730, max_positions=80_000, max_seconds=1e9)
    assert (again.result, again.line, again.searched) == (
        solution.result, solution.line, solution.searched)


def test_the_win_finder_wins_with_a_line_that_replays_and_only_within_its_budget():
    state = get_variant("salic-law").deal(730)
    budget = Budget(5_000, 60)
    result, moves = salic_law._WinFinder(state).run(budget)
    assert result == Outcome.WON
    assert budget.searched < 5_000
    winning_steps(state, moves)                    # raises unless the line wins
    # The same position draws the same playouts: the same line.
    assert salic_law._WinFinder(state).run(Budget(5_000, 60)) == (Outcome.WON, moves)
    # Deal 835 is lost: the win finder spends its budget to the position and answers
    # undecided (it never proves a deal lost).
    budget = Budget(3_000, 60)
    lost = get_variant("salic-law").deal(835)
    assert salic_law._WinFinder(lost).run(budget) == (Outcome.UNDECIDED, None)
    assert budget.searched == 3_000
    # After the deal there is nothing to draw: undecided at once.
    while state.piles[STOCK_PILE]:
        state = state.apply(salic_law.Move(salic_law.DEAL))[0]
    budget = Budget(3_000, 60)
    assert salic_law._WinFinder(state).run(budget) == (Outcome.UNDECIDED, None)
    assert budget.searched == 0
