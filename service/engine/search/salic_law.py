"""Salic Law's search for the solver: a depth-first search with sleep sets, a deferring
search and a win finder, in turns (:func:`search`).  The depth-first search is
:mod:`.salic_law_search` (with :mod:`.salic_law_after_deal`, what it plays once the stock
is out); the win finder is here."""

from __future__ import annotations

import random

from ..base import State
from ..cards import ACE, KING, QUEEN
from ..moves import DEAL, Move
from ..rules.salic_law import FOUNDATIONS, KINGS, SalicLaw
from .budget import Budget
from .registry import Searches, register
from .results import Answer, Outcome
from .salic_law_after_deal import _MOVES
from .salic_law_search import _SalicSearch


def search(state: State, budget: Budget) -> Answer:
    """The solver's search (:class:`_SalicSearch`, :class:`_WinFinder`):
    ``(outcome, moves)``.  A hint's small budget goes to the plain search alone; a
    solver's to the deferring search for :data:`DEFERRING_POSITIONS` positions, then the
    win finder (:data:`FINDER_SHARE` of what is left), the plain search with no card
    asleep after the deal (:data:`SEARCH_SHARE` of what is left then) and the win finder
    again, until one settles the deal.
    Why these three, and in this order: docs/solver.md#salic-law-one-budget-three-searches
    """
    if budget.max_positions < DEFERRING_POSITIONS * 4:
        return _SalicSearch(state, budget, plain=True).run()
    part = _Part(budget, DEFERRING_POSITIONS)
    result = _SalicSearch(state, part, plain=False).run()
    if result[0] != Outcome.UNDECIDED or budget.out:
        return result
    finder = _WinFinder(state)
    result = finder.run(_Share(budget, FINDER_SHARE))
    if result[0] != Outcome.UNDECIDED or budget.out:
        return result
    result = _SalicSearch(state, _Share(budget, SEARCH_SHARE), plain=True,
                          awake=True).run()
    if result[0] != Outcome.UNDECIDED or budget.out:
        return result
    return finder.run(budget)


# --- the solver's search ----------------------------------------------------------------

#: Positions the deferring search gets first out of a solver's budget
#: (:func:`search`).
DEFERRING_POSITIONS = 20_000
#: The win finder's first share of what is left of a solver's budget after the deferring
#: search, and the plain search's share of what is left after that
#: (:func:`search`).
FINDER_SHARE = 0.05
SEARCH_SHARE = 0.9
#: The win finder's playouts (_WinFinder): how often a playout deals while a card could
#: go home that is not safe home, how often it then sends home the newest pile's top when
#: that is one of the cards, and the positions the search after the deal gets.
FINDER_DEAL = 0.3
FINDER_NEWEST = 0.7
FINDER_AFTER = 300


class _Part:
    """At most ``positions`` more positions of ``budget`` (which keeps the count)."""

    __slots__ = ("budget", "limit", "out")

    def __init__(self, budget, positions: int):
        self.budget = budget
        self.limit = budget.searched + positions
        self.out = False

    def spend(self) -> bool:
        if not self.budget.spend() or self.budget.searched >= self.limit:
            self.out = True
        return not self.out


class _Share:
    """A ``fraction`` of what is left of ``budget`` (which keeps the count): of its
    positions and of its seconds, whichever runs out first."""

    __slots__ = ("budget", "limit", "deadline", "out")

    def __init__(self, budget, fraction: float):
        self.budget = budget
        self.limit = budget.searched + int((budget.max_positions - budget.searched) * fraction)
        self.deadline = budget.clock() + (budget.deadline - budget.clock()) * fraction
        self.out = False

    def spend(self) -> bool:
        budget = self.budget
        if not budget.spend() or budget.searched >= self.limit or (
                not budget.searched & 255 and budget.clock() >= self.deadline):
            self.out = True
        return not self.out

    @property
    def searched(self) -> int:
        return self.budget.searched


class _WinFinder:
    """A search for won lines only: random playouts of the deal (:meth:`playout`: safe
    moves home at once, else the deal at times, :data:`FINDER_DEAL`, else a move home,
    mostly the newest pile's top, :data:`FINDER_NEWEST`), each followed by the plain
    search with no card asleep (``awake=True``) of the position the deal ends in, for at
    most :data:`FINDER_AFTER` positions.  The first line that wins is the answer; it
    never proves a deal lost.  Its generator is seeded with the position searched, so
    the same position and budget give the same answer; :meth:`run` called again goes on
    with new playouts.
    How it plays, and why it needs no soundness argument: docs/solver.md#salic-law-the-win-finder
    """

    __slots__ = ("piles", "found", "stock", "rng", "after")

    def __init__(self, state: State):
        self.after = _SalicSearch(state, None, plain=True, awake=True)
        self.piles, self.found, self.stock = (
            self.after.piles, self.after.found, self.after.stock)
        self.rng = random.Random(bytes(self.stock) + b"|" + bytes(self.found) + b"|"
                                 + b"|".join(map(bytes, self.piles)))

    def run(self, budget):
        while self.stock and not budget.out:
            line = self.playout(budget)
            if line is None:
                break
            if line is not True:
                return Outcome.WON, line
        return Outcome.UNDECIDED, None

    def playout(self, budget):
        """One playout and the search after it: the won line, None when the budget ran
        out, True when neither won."""
        rng, random = self.rng, self.rng.random
        piles = [list(pile) for pile in self.piles]
        found = list(self.found)
        stock = list(self.stock)
        line: list[Move] = []
        deal = Move(DEAL)
        while stock:
            floor = min(found) + 1
            homes = []
            for k, pile in enumerate(piles):
                if len(pile) > 1 and pile[-1] - 1 in found:
                    if pile[-1] <= floor:           # a safe move home
                        homes = [k]
                        break
                    homes.append(k)
            if not budget.spend():
                return None
            if homes and (len(homes) == 1 and piles[homes[0]][-1] <= floor
                          or random() >= FINDER_DEAL):
                newest = max(k for k, pile in enumerate(piles) if pile)
                k = (newest if newest in homes and random() < FINDER_NEWEST
                     else rng.choice(homes))
                pile = piles[k]
                f = found.index(pile[-1] - 1)
                found[f] = pile.pop()
                line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                continue
            rank = stock.pop()
            if rank == KING:
                piles[piles.index([])].append(rank)
            elif rank == ACE:
                found[found.index(0)] = ACE
            elif rank != QUEEN:
                next(pile for pile in reversed(piles) if pile).append(rank)
            line.append(deal)
        after = self.after
        after.piles, after.found, after.stock = piles, found, []
        after.line = line
        after.budget = _Part(budget, FINDER_AFTER)
        if after.visit(()):
            return after.line
        return None if budget.out else True


#: The search expands positions several times faster than the other games' (a card is
#: its rank, a position a few bytes), so a hint searches more of each sample.
register(SalicLaw, Searches(solver=search, hint_positions_scale=4))
