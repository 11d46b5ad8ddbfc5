"""Help for players: a hint and the safe autoplay, from what the player can see.

:func:`hint` reads only the visible position (:mod:`.visible`): it deals the unseen
cards in a few random orders seeded from that position, lets the solver search each of
these sampled deals with every card known, and suggests the move that wins the most of
them; when none is won within its budget it falls back on :func:`heuristic_hint`, the
quick rules of thumb, which weigh only the face-up piles (the moves they simulate are
moves between face-up piles, which deal nothing).  Where a variant's searches can
search a position without looking at a hidden card (its registered hint line,
:func:`.search.hint_line`: the Clock's card moves, Four Corners once the stock is out),
the quick hint follows the searched line.  Only the variants' public hooks and the
searches' public names are used here.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .base import PLAYING, State
from .moves import MOVE, Move, Step
from .search import WALL_CLOCK, Line, Outcome, hint_line, searches_of, solve_state
from .visible import VisibleView, visible_view


@dataclass(frozen=True, slots=True)
class Hint:
    """A suggested move, the card it moves (None for an action move) and why, in the
    player's words."""

    move: Move
    card: str | None
    reason: str


def _home_moves(state: State) -> set[tuple[int, int]]:
    foundations = state.variant.foundations
    return {(s, t) for s, t in state.variant.card_moves(state) if t in foundations}


#: How many positions a hint may look at when it searches for a way home.
SEARCH_BUDGET = 2000


def _home_count(state: State) -> int:
    piles = state.piles
    return sum(len(piles[f]) for f in state.variant.foundations)


def _search_home(state: State, budget: int = SEARCH_BUDGET) -> tuple[int, int, int] | None:
    """Breadth-first search over card moves for the shortest line that brings more cards
    home than are home now; returns ``(first source, first target, cards gained)``.

    It only runs where card moves deal nothing from the stock, so it sees nothing the
    player cannot see.
    """
    variant = state.variant
    start = _home_count(state)
    seen = {state.piles}
    queue = deque([(state, None)])
    best: tuple[int, int, int] | None = None
    while queue and len(seen) < budget:
        node, first = queue.popleft()
        for source, target in list(variant.card_moves(node)):
            ids = variant.pile_ids
            after, _step = variant.apply(node, Move(MOVE, ids[source], ids[target]))
            if after.piles in seen:
                continue
            seen.add(after.piles)
            line = first or (source, target)
            gained = _home_count(after) - start
            if gained > 0 and (best is None or gained > best[2]):
                best = (*line, gained)
                if after.status != PLAYING:
                    return best
            queue.append((after, line))
        if best is not None and len(seen) > budget // 2:
            break
    return best


def heuristic_hint(state: State) -> Hint | None:
    """The quick hint, from rules of thumb: one suggested card move, or None when no
    card move helps (then the player deals, draws or refills, or the game is stuck).
    :func:`hint` falls back on it when its sampled search learns nothing.

    In order of preference: a safe move home (see ``Variant.is_safe_home``); where the
    variant searches the position (:func:`.search.hint_line`), the first move of the
    searched line; any other move home; a move between piles after which more cards can
    go home than before; a move the variant itself finds worth making
    (``Variant.idle_move_reason``, the Clock's marriage that leaves a packet short so
    the stock refills it).  Every suggestion makes progress, so following hints never
    loops.
    """
    if state.status != PLAYING:
        return None
    variant = state.variant
    ids = variant.pile_ids
    safe = safe_moves(state)
    if safe:
        move = safe[0]
        card = state.card_of(move)
        return Hint(move, str(card), f"{card} goes home to {move.target}; nothing else "
                                     "will ever need it")
    line = hint_line(state)
    if line is not None:
        return _line_hint(state, line)
    best, best_reason = _best_card_move(state)
    if best is None or best[0] < 3:
        found = None if variant.moves_reveal_stock(state) else _search_home(state)
        if found is not None:
            source, target, gained = found
            card = state.piles[source][-1]
            return Hint(Move(MOVE, ids[source], ids[target]), str(card),
                        f"moving {card} onto {ids[target]} starts a line that brings "
                        f"{gained} more card(s) home")
    if best is None:
        return None
    _score, source, target = best
    return Hint(Move(MOVE, ids[source], ids[target]), str(state.piles[source][-1]),
                best_reason)


def _best_card_move(state: State) -> tuple[tuple[int, int, int] | None, str]:
    """The quick hint's best card move by its rules of thumb, ``(score, source,
    target)`` (3: a move home; 2: a move between piles after which more cards can go
    home than before; 1: a move the variant itself finds worth making), the first of
    the highest score, with its reason; ``(None, "")`` when no card move scores."""
    variant = state.variant
    ids = variant.pile_ids
    homes = _home_moves(state)
    sources_home = {s for s, _ in homes}
    best: tuple[int, int, int] | None = None
    best_reason = ""
    for source, target in variant.card_moves(state):
        card = state.piles[source][-1]
        if (source, target) in homes:
            score, reason = 3, f"{card} goes home to {ids[target]}"
        else:
            after, _step = variant.apply(state, Move(MOVE, ids[source], ids[target]))
            freed = {s for s, _ in _home_moves(after)} - sources_home
            if freed:
                score = 2
                names = ", ".join(str(after.piles[s][-1]) for s in sorted(freed))
                reason = f"moving {card} onto {ids[target]} lets {names} go home"
            else:
                idle = variant.idle_move_reason(state, source, target)
                if idle is None:
                    continue
                score, reason = 1, idle
        if best is None or score > best[0]:
            best, best_reason = (score, source, target), reason
    return best, best_reason


def _line_hint(state: State, line: Line) -> Hint | None:
    """The first move of a searched line (:func:`.search.hint_line`): a line that wins
    the game, or failing that the line to the most cards home the search saw.  None
    when no line brings a card home (only moves that gain nothing are left).  While
    cards are still unseen (the Clock's line, searched over card moves while the stock
    lasts), the reason says the line stops where the stock is needed, not that the game
    cannot be won.

    The Four Corners search raises a potential with every move (cards home, then cards
    lying on a neighbour of their suit, then a fixed order of positions, see
    :mod:`.search.endgame`), and so does every safe move home: a player following these hints
    never sees a position twice.
    """
    if not line.moves:
        return None
    variant = state.variant
    ids = variant.pile_ids
    source, target = line.moves[0]
    move = Move(MOVE, ids[source], ids[target])
    card = state.piles[source][-1]
    step = (f"{card} goes home to {ids[target]}" if target in variant.foundations
            else f"moving {card} onto {ids[target]}")
    gained = line.home - _home_count(state)
    if line.won:
        why = "the first move of a line that wins the game"
    elif visible_view(state).unseen:
        why = (f"the first move of the line of card moves found that brings the most "
               f"cards home ({gained} more) before the stock is needed")
    else:
        why = (f"the first move of the line found that brings the most cards home "
               f"({gained} more); no winning line found")
    return Hint(move, str(card), f"{step}: {why}")


def safe_moves(state: State) -> list[Move]:
    """The legal moves home that can never hurt the player, in listing order."""
    variant = state.variant
    ids = variant.pile_ids
    return [Move(MOVE, ids[s], ids[t]) for s, t in variant.card_moves(state)
            if t in variant.foundations and variant.is_safe_home(state, s, t)]


def autoplay(state: State) -> tuple[State, list[Step]]:
    """Play safe moves home, one after another, until none is left or the game ends.
    Returns the final state and the steps taken (each undoable on its own)."""
    steps: list[Step] = []
    while state.status == PLAYING:
        moves = safe_moves(state)
        if not moves:
            break
        state, step = state.apply(moves[0])
        steps.append(step)
    return state, steps


# --- the hint: the unseen cards sampled, each sample solved ---------------------------

@dataclass(frozen=True, slots=True)
class HintBudget:
    """What one :func:`hint` may spend: ``samples`` orders of the unseen cards, each
    searched by the solver for at most ``positions`` positions, and at most ``seconds``
    in all on ``clock`` (the wall clock: a request waits; a hard stop: the samples not
    searched by then count for nothing).  The positions, not the clock, end a search on
    a machine that keeps up, so the hint of a position is the same on every call."""

    samples: int = 8
    positions: int = 250
    seconds: float = 0.8
    clock: Callable[[], float] = WALL_CLOCK


#: The budget of a hint served by the API.
DEFAULT_BUDGET = HintBudget()


def hint(state: State, budget: HintBudget = DEFAULT_BUDGET) -> Hint | None:
    """The move a strong player would make, from what the player can see.

    * With a single legal move, nothing is searched: the quick hint
      (:func:`heuristic_hint`) answers, or None (the only move is the deal, draw or
      refill).
    * Otherwise the unseen cards are dealt in ``budget.samples`` random orders
      (:meth:`VisibleView.sample`, seeded from the visible position only), and the
      solver searches each sample with the whole deal known.  Each sample the solver
      wins votes for the first move of its winning line; the move with the most votes
      is the hint ("wins in 7 of 8 sampled deals").  With nothing unseen there is one
      world to search, with the budget of all the samples.  A safe move home is
      searched like any other move: which card goes home first, or whether to deal
      first, can decide a game.
    * When no sample is won within the budget, :func:`heuristic_hint` answers (a safe
      move home first; its reason says so when every sample was proved lost).

    The answer may be an action move (deal, draw, refill) when the winning lines start
    with one; None means no card move helps and the player should deal, draw or refill.
    Only :func:`visible_view` of ``state`` is read for the search: the hint cannot
    depend on the stock order.
    """
    if state.status != PLAYING:
        return None
    moves = state.legal_moves()
    if len(moves) <= 1:
        return heuristic_hint(state)
    view = visible_view(state)
    votes, lost, searched = _sample_votes(view, budget)
    if votes:
        best = max(moves, key=lambda m: votes.get(m, 0))  # ties: the listing order
        if votes.get(best):
            return _voted_hint(view, state, best, votes[best], searched)
    fallback = heuristic_hint(state)
    if fallback is not None and searched and lost == searched:
        worlds = (f"none of the {searched} sampled deals can be won" if view.unseen
                  else "the game can no longer be won")
        return Hint(fallback.move, fallback.card, f"{worlds}; {fallback.reason}")
    return fallback


def _sample_votes(view: VisibleView, budget: HintBudget) -> tuple[dict[Move, int], int, int]:
    """Search the samples of ``view``: ``(votes, lost, searched)``, the winning first
    moves counted, how many samples were proved lost and how many were searched."""
    clock = budget.clock
    deadline = clock() + budget.seconds
    rng = random.Random(view.seed())
    samples = budget.samples if view.unseen else 1
    positions = budget.positions * searches_of(view.variant).hint_positions_scale
    if not view.unseen:
        positions *= budget.samples
    votes: dict[Move, int] = {}
    lost = searched = 0
    answers = {}        # a sampled deal drawn again is not searched again
    for _sample in range(samples):
        left = deadline - clock()
        if left <= 0:
            break
        world = view.sample(rng)
        found = answers.get(world.piles)
        if found is None:
            found = answers[world.piles] = solve_state(world, max_positions=positions,
                                                       max_seconds=left, clock=clock)
        searched += 1
        if found.result == Outcome.WON and found.line:
            first = _shortcut(world, found.line)
            votes[first] = votes.get(first, 0) + 1
        elif found.result == Outcome.LOST:
            lost += 1
    return votes, lost, searched


def _shortcut(world: State, line) -> Move:
    """The move of ``world`` that reaches the furthest position of the winning ``line``
    (engine steps from ``world``) in one step: the line's first move, unless a later
    position of the line, or one that plays alike, is one move away.  A searched line
    may wander (a card laid on one bare king, then on another); the shortcut skips the
    detour, so that a player who follows hints is not sent round in circles."""
    reached = {}
    state = world
    for i, step in enumerate(line, start=1):
        state, _step = state.apply(step.move)
        reached[state.variant.play_key(state)] = i
    best, furthest = line[0].move, 1
    for move in world.legal_moves():
        after, _step = world.apply(move)
        at = reached.get(after.variant.play_key(after), 0)
        if at > furthest:
            best, furthest = move, at
    return best


def _voted_hint(view: VisibleView, state: State, move: Move, wins: int,
                searched: int) -> Hint:
    """The hint of ``move``, which wins ``wins`` of the ``searched`` samples."""
    card = state.card_of(move)
    if move.type != MOVE:
        what = {"deal": "deal the next card", "draw": "draw the next stock card",
                "refill": "refill the short packets"}.get(move.type, move.type)
    elif state.variant.index[move.target] in state.variant.foundations:
        what = f"{card} goes home to {move.target}"
    else:
        what = f"moving {card} onto {move.target}"
    if not view.unseen:
        why = "the first move of a line that wins the game"
    else:
        why = f"wins in {wins} of {searched} sampled deals of the unseen cards"
    return Hint(move, None if card is None else str(card), f"{what}: {why}")
