"""Help for players: a hint and the safe autoplay, from what the player can see.

Neither function ever looks at the order of the stock: a hint weighs only the face-up
piles, and the moves it simulates are moves between face-up piles, which deal nothing.
Where a variant can search a position with every card face up
(:meth:`Variant.endgame_line`, Four Corners once the stock is out), the hint follows the
searched line instead.  Only the variants' public hooks are used here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .base import PLAYING, State
from .moves import MOVE, Line, Move, Step


@dataclass(frozen=True, slots=True)
class Hint:
    move: Move
    card: str
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


def hint(state: State) -> Hint | None:
    """One suggested card move, or None when no card move helps (then the player deals,
    draws or refills, or the game is stuck).

    In order of preference: a safe move home (see ``Variant.is_safe_home``); where the
    variant searches the position (``Variant.endgame_line``), the first move of the
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
    line = variant.endgame_line(state)
    if line is not None:
        return _line_hint(state, line)
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


def _line_hint(state: State, line: Line) -> Hint | None:
    """The first move of a searched line (``Variant.endgame_line``): a line that wins
    the game, or failing that the line to the most cards home the search saw.  None
    when no line brings a card home (only moves that gain nothing are left).

    The Four Corners search raises a potential with every move (cards home, then cards
    lying on a neighbour of their suit, then a fixed order of positions, see
    :mod:`.endgame`), and so does every safe move home: a player following these hints
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
    if line.won:
        why = "the first move of a line that wins the game"
    else:
        gained = line.home - _home_count(state)
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
