"""The solver: its answers, its winning lines replayed through the engine, and every
pruning rule checked against the plain exhaustive search on positions small enough to
exhaust."""

from __future__ import annotations

import random

import pytest

from service.engine import LOST, RESIGN, WON, Card, Move, get_variant
from service.engine.search import (
    Budget,
    Outcome,
    Solution,
    exhaustive_search,
    solve,
    solve_state,
    winning_steps,
)

from . import solver_positions
from .positions import VARIANT_IDS


def _replays_to_a_win(state, solution: Solution) -> None:
    assert solution.result == Outcome.WON
    for step in solution.line:
        state, again = state.apply(step.move)
        assert again == step
    assert state.status == WON


@pytest.mark.parametrize("variant_id", VARIANT_IDS)
def test_a_search_answers_within_its_position_budget(variant_id):
    solution = solve(variant_id, 3, max_positions=300, max_seconds=5)
    assert isinstance(solution.result, Outcome)
    assert solution.searched <= 300
    assert solution.seconds >= 0
    assert (solution.line is not None) == (solution.result == Outcome.WON)
    if solution.result == Outcome.WON:
        _replays_to_a_win(get_variant(variant_id).deal(3), solution)


def test_a_won_line_replays_through_the_engine_to_a_won_game():
    state = get_variant("salic-law").deal(2)
    solution = solve_state(state)
    _replays_to_a_win(state, solution)


def test_the_exhaustive_search_finds_a_line_the_engine_accepts():
    state = get_variant("salic-law").deal(2)
    result, moves = exhaustive_search(state, Budget(100_000, 30))
    assert result == Outcome.WON
    assert winning_steps(state, moves)[-1] is not None


def test_a_finished_game_needs_no_search():
    state = get_variant("clock").deal(1)
    lost = type(state)(state.variant, state.piles, LOST, state.turn)
    assert solve_state(lost).result == Outcome.LOST
    assert solve_state(lost).searched == 0
    resigned, _ = state.apply(Move(RESIGN))
    assert solve_state(resigned, max_positions=50).result == Outcome.UNDECIDED


def _agree(states, budget: int) -> dict[str, int]:
    """Solve each position with the variant's search and with the plain exhaustive
    search; where the exhaustive search settles it, both must say the same.  Returns
    how many positions each result settled."""
    settled = {Outcome.WON: 0, Outcome.LOST: 0}
    for state in states:
        plain, _moves = exhaustive_search(state, Budget(budget, 60))
        if plain == Outcome.UNDECIDED:
            continue
        solution = solve_state(state, max_seconds=60)
        assert solution.result == plain, state.to_dict()
        if solution.result == Outcome.WON:
            _replays_to_a_win(state, solution)
        settled[plain] += 1
    return settled


@pytest.mark.parametrize(("left", "stock", "lanes"), [(18, 0, 2), (20, 3, 2), (22, 6, 2)])
def test_salic_law_search_agrees_with_the_exhaustive_search(left, stock, lanes):
    rng = random.Random(f"salic {left} {stock}")
    settled = _agree((solver_positions.salic_law(rng, left, stock, lanes)
                      for _ in range(15)), 30_000)
    assert settled[Outcome.WON] >= 5, settled
    assert settled[Outcome.LOST] >= 1, settled


@pytest.mark.parametrize(("left", "stock"), [(10, 0), (12, 3)])
def test_four_corners_search_agrees_with_the_exhaustive_search(left, stock):
    rng = random.Random(f"four corners {left} {stock}")
    settled = _agree((solver_positions.four_corners(rng, left, stock) for _ in range(20)),
                     30_000)
    assert settled[Outcome.WON] >= 5, settled
    assert settled[Outcome.LOST] >= 2, settled


@pytest.mark.parametrize("mode", ["full-budget", "hint-budget", "from-best"])
@pytest.mark.parametrize(("left", "stock", "talon"), [(14, 4, 4), (20, 6, 6), (20, 0, 8)])
def test_clock_search_agrees_with_the_exhaustive_search(left, stock, talon, mode,
                                                        monkeypatch):
    # The searches of a big budget drop the positions with a dead talon card and, after
    # a while, search most rounds from a position of the best line so far; those
    # of a hint's budget do neither: all must agree with the plain search.
    from service.engine.search import clock, clock_search

    if mode == "hint-budget":
        monkeypatch.setattr(clock, "FULL_SEARCH_POSITIONS", 10**12)
    if mode == "from-best":
        monkeypatch.setattr(clock_search, "ELITE_AFTER", 0)
        monkeypatch.setattr(clock_search, "RESTART_POSITIONS", 10)
        monkeypatch.setattr(clock_search, "RESTART_GROWTH", 3)
    rng = random.Random(f"clock {left} {stock} {talon}")
    settled = _agree((solver_positions.clock(rng, left, stock, talon) for _ in range(30)),
                     30_000)
    assert settled[Outcome.WON] >= 5, settled
    assert settled[Outcome.LOST] >= 3, settled


def test_clock_search_in_short_rounds_agrees_with_the_exhaustive_search(monkeypatch):
    # Rounds of a few dozen positions: most positions are settled by a later round, in
    # a shuffled order of moves (a won line, or a round that searched every line).
    from service.engine.search import clock_search

    monkeypatch.setattr(clock_search, "RESTART_POSITIONS", 10)
    monkeypatch.setattr(clock_search, "RESTART_GROWTH", 3)
    rng = random.Random("clock rounds")
    settled = _agree((solver_positions.clock(rng, 20, 6, 6) for _ in range(30)), 30_000)
    assert settled[Outcome.WON] >= 5, settled
    assert settled[Outcome.LOST] >= 3, settled


def test_clock_rounds_from_the_best_line_win_deals(monkeypatch):
    # Most rounds from a position of the best line so far: the won lines (the
    # prefix replayed by the search, then its own) replay through the engine.
    from service.engine.search import clock_search

    monkeypatch.setattr(clock_search, "ELITE_AFTER", 0)
    played = []
    play = clock_search._ClockSearch.play
    monkeypatch.setattr(clock_search._ClockSearch, "play",
                        lambda self, moves, *start: played.append(len(moves))
                        or play(self, moves, *start))
    for seed in (1, 6):
        state = get_variant("clock").deal(seed)
        solution = solve_state(state, max_positions=150_000, max_seconds=60)
        _replays_to_a_win(state, solution)
    assert max(played) > 50          # rounds started deep in the best line


def test_clock_search_rounds_are_deterministic():
    first = solve("clock", 7, max_positions=3000, max_seconds=1e9)
    again = solve("clock", 7, max_positions=3000, max_seconds=1e9)
    assert (first.result, first.line, first.searched) == (again.result, again.line,
                                                          again.searched)
    assert first.searched > 500             # the budget outlasts the first round


def test_a_draw_that_buries_its_own_card_is_recognised():
    # Foundations I (6C up to A) and IX (2C up to 9) both want an 8C after a 7C; with
    # I at its base and IX at 6C, an 8C drawn onto both 7C never goes home, onto one 7C
    # it may.
    from service.engine.rules.clock import BASES
    from service.engine.search.clock_positions import _buries_itself, _code

    tops = [Card.parse(BASES[h]).rank for h in range(1, 13)]
    tops[8] = 6
    seven, eight = _code(Card(7, "C")), _code(Card(8, "C"))
    assert _buries_itself(eight, bytes((seven, seven)), bytes(tops))
    assert not _buries_itself(eight, bytes((seven,)), bytes(tops))
    assert not _buries_itself(eight, bytes((seven, eight, seven)), bytes(tops[:8] + [7] + tops[9:]))


def test_a_talon_card_that_can_never_go_home_is_recognised():
    # A JC on the talon over a 9C.  Foundation V (TC up to 5C) has passed its JC, so
    # only foundation I (6C up to AC) still takes one, after a 9C.  While IX (2C up to
    # 9C) waits at 8C, the other 9C may yet reach I; once it goes home onto IX, I needs
    # the 9C under the JC, and the JC never goes home.
    from service.engine.rules.clock import BASES
    from service.engine.search.clock_positions import _NO_TOPS, _code, _dead_talon

    tops = [Card.parse(BASES[h]).rank for h in range(1, 13)]
    tops[4], tops[8] = 12, 8
    talon = bytes((_code(Card(9, "C")), _code(Card(11, "C"))))
    assert not _dead_talon(talon, bytes(tops), _NO_TOPS)
    after = bytes(tops[:8] + [9] + tops[9:])
    assert _dead_talon(talon, after, bytes(tops))
    # Only the talon cards of the suits whose foundations moved are looked at.
    assert not _dead_talon(talon, after, after)


def test_the_dead_talon_check_after_a_move_home_sees_what_a_full_check_sees():
    # After a card move from a position with no dead talon card, the check of the cards
    # the move may have killed answers like the check of every talon card.
    from service.engine.rules.clock import FOUNDATIONS, PACKETS, TALON
    from service.engine.search.clock import _card_moves
    from service.engine.search.clock_positions import _NO_TOPS, _code, _dead_talon

    rng = random.Random("clock dead talon after a move")
    checked = dead = 0
    for _ in range(600):
        state = solver_positions.clock(rng, rng.randrange(14, 40), 0, rng.randrange(3, 14))
        tops = bytes(state.piles[f][-1].rank for f in FOUNDATIONS)
        talon = bytes(_code(card) for card in state.piles[TALON])
        packets = tuple(bytes(_code(card) for card in state.piles[p]) for p in PACKETS)
        if _dead_talon(talon, tops, _NO_TOPS):
            continue
        for _move, (_packets, talon_after, tops_after) in _card_moves(packets, talon, tops):
            full = _dead_talon(talon_after, tops_after, _NO_TOPS)
            assert _dead_talon(talon_after, tops_after, tops) == full
            checked += 1
            dead += full
    assert checked > 500, checked
    assert dead >= 3, dead


@pytest.mark.parametrize(("left", "talon"), [(16, 6), (20, 8)])
def test_positions_with_a_dead_talon_card_are_lost(left, talon):
    # Random positions with a long talon: each one with a dead talon card is lost by
    # the plain search, and the full search proves it lost at once.
    from service.engine.rules.clock import FOUNDATIONS, PACKETS, TALON
    from service.engine.search.clock_positions import _NO_TOPS, _code, _dead_talon

    rng = random.Random(f"clock dead talon {left} {talon}")
    dead = 0
    for _ in range(60):
        state = solver_positions.clock(rng, left, 0, talon)
        tops = bytes(state.piles[f][-1].rank for f in FOUNDATIONS)
        cards = bytes(_code(card) for card in state.piles[TALON])
        assert len(state.piles) == PACKETS[-1] + 3
        if not _dead_talon(cards, tops, _NO_TOPS):
            continue
        assert exhaustive_search(state, Budget(200_000, 60))[0] == Outcome.LOST
        solution = solve_state(state)
        assert solution.result == Outcome.LOST
        assert solution.searched == 0
        dead += 1
    assert dead >= 5, dead


def test_a_salic_law_move_home_is_not_always_safe():
    # One foundation at 6 and two 7s to offer it: the 7 over the 8 must go first (the 8
    # then the 9s follow, down to the 3 the foundation at 2 waits for); the other 7
    # first leaves both foundations stuck, no king bare.  So the search may not force
    # moves home while a foundation is below 6 (here: at 2).
    from .positions import craft

    done = {f"foundation-{f}": "AS2S3S4S5S6S7S8S9STSJS" for f in range(3, 9)}
    piles = {**done, "foundation-1": "AH2H3H4H5H6H", "foundation-2": "AD2D",
             "king-1": "KSJC", "king-2": "KSJC", "king-3": "KH5C7C", "king-4": "KH6CTC",
             "king-5": "KD8C7C", "king-6": "KD4C9C", "king-7": "KC8C3C9C", "king-8": "KCTC"}
    state = craft("salic-law", piles)
    assert exhaustive_search(state, Budget(50_000, 60))[0] == Outcome.WON
    _replays_to_a_win(state, solve_state(state))
    wrong, _ = state.apply(Move.parse("king-3>foundation-1"))
    assert exhaustive_search(wrong, Budget(50_000, 60))[0] == Outcome.LOST
    assert solve_state(wrong).result == Outcome.LOST


def test_salic_law_the_newest_pile_is_not_like_an_equal_older_one():
    # During the deal king-1 and king-2 both hold a 5 over their king and one foundation
    # (at 4) takes a 5.  The 5 must come from king-2, the newest pile: the next card
    # dealt (a 9) buries what is left there, and the other foundation (at 3) needs the
    # other 5 later.  A search that tried only one of the two equal piles would miss it.
    from .positions import craft

    done = {f"foundation-{f}": "AS2S3S4S5S6S7S8S9STSJS" for f in range(3, 9)}
    piles = {**done, "foundation-1": "AH2H3H4H", "foundation-2": "AD2D3D",
             "king-1": "KS5C", "king-2": "KH5D",
             # bottom first: the 9C on top is dealt first, then the 4C, and so on.
             "stock": "JDJCTDTC9D8D8C7D7C6D6C4C9C"}
    state = craft("salic-law", piles)
    assert exhaustive_search(state, Budget(50_000, 60))[0] == Outcome.WON
    solution = solve_state(state)
    _replays_to_a_win(state, solution)
    assert str(solution.line[0].move) == "king-2>foundation-1"
    wrong, _ = state.apply(Move.parse("king-1>foundation-1"))
    assert exhaustive_search(wrong, Budget(50_000, 60))[0] == Outcome.LOST
    assert solve_state(wrong).result == Outcome.LOST


def test_clock_rounds_order_moves_round_their_classes():
    # Deal 42 opens with two moves home, two marriages (each leaves a packet of two
    # cards to refill) and the draw: the rounds try the moves in many orders, the moves
    # home mostly first and the draw mostly last.
    from service.engine.rules.clock import PACKETS
    from service.engine.search.clock_positions import _code
    from service.engine.search.clock_search import _ClockSearch, _move_class

    state = get_variant("clock").deal(42)
    packets = tuple(bytes(_code(card) for card in state.piles[p]) for p in PACKETS)
    search = _ClockSearch(Budget(10, 1))
    search.stock = bytes(_code(card) for card in state.piles[24])
    tops = bytes(state.piles[f][-1].rank for f in range(12))
    moves = search.moves(packets, b"", tops, len(search.stock))
    classes = sorted(_move_class(move, packets, len(search.stock)) for move, _ in moves)
    assert classes == [0, 0, 1, 1, 3]
    firsts, lasts = [], []
    for round_ in range(1, 40):
        search.order = random.Random(round_)
        ranked = [str(move) for move, _ in search.ranked(moves, packets, len(search.stock))]
        assert sorted(ranked) == sorted(str(move) for move, _ in moves)
        firsts.append(ranked[0])
        lasts.append(ranked[-1])
    assert len(set(firsts)) >= 3
    assert sum(first.endswith(("foundation-1", "foundation-8")) for first in firsts) > 20
    assert lasts.count("draw") > 20


def test_clock_search_wins_a_deal_its_rounds_find_early():
    # Deal 8 needs over 300,000 positions in rounds shuffled without regard to the
    # moves' classes; ranked rounds win it within 3,000.
    solution = solve("clock", 8, max_positions=5000, max_seconds=1e9)
    _replays_to_a_win(get_variant("clock").deal(8), solution)


def test_a_budget_reads_the_clock_its_search_is_given():
    time_now = [0.0]
    budget = Budget(10**9, 1.0, lambda: time_now[0])
    assert all(budget.spend() for _ in range(1000))  # the clock stands still: no end
    time_now[0] = 1.5
    spent = 0
    while budget.spend():
        spent += 1
    assert spent < 256  # read again within 256 positions, and past its deadline
    assert budget.out
