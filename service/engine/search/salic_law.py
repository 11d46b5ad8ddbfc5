"""Salic Law's search for the solver: a depth-first search with sleep sets, a deferring
search and a win finder, in turns (:func:`search`)."""

from __future__ import annotations

import random

from ..base import State
from ..cards import ACE, JACK, KING, QUEEN
from ..moves import DEAL, Move
from ..rules.salic_law import FOUNDATIONS, KINGS, STOCK_PILE, SalicLaw
from .budget import Budget
from .registry import Searches, register
from .results import Answer, Outcome, move_table


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


class _SalicSearch:
    """The depth-first search of :func:`search`, with a table of the positions already
    searched.

    Suits never matter in Salic Law (foundations build regardless of suit, king piles
    take any card), so a card is its rank, and the search reads the table as the stock,
    eight stacks of ranks over their kings and eight foundation tops.  Its rules:

    * **Safe moves home are forced** (:meth:`home_safe`): a card of rank r goes home
      without branching when no foundation is below r - 1.
      Why this is sound: docs/solver.md#salic-law-safe-moves-home
    * **Equal positions are searched once** (:meth:`key`: foundation tops sorted, the
      stock's length, the newest pile, the other piles sorted); of the moves home, one
      from each distinct pile content onto one foundation of the right top.
      Why this is sound: docs/solver.md#salic-law-equal-positions
    * **Cards go onto bare kings only to send the card they uncover home at once**:
      from each pile, its top d cards onto d bare kings when the card under them goes
      home right after, and no other move onto a bare king.
      Why this is sound: docs/solver.md#salic-law-cards-onto-bare-kings
    * **A move home declined sleeps until a card of its rank goes home** (a sleep set;
      a sleeping card that is the last of its rank off the foundations makes the
      position lost: :meth:`hopeless`).  The table keeps the sleep set each position
      was searched under; met again, a position is skipped when its sleep set holds
      that one, else searched again under the cards asleep both times.
      Why this is sound: docs/solver.md#salic-law-sleep-sets

    These make the plain search (``plain=True``).  The deferring search
    (``plain=False``, which a solver's search starts with) adds three rules:

    * **A card home from an old pile waits for the deal** (:meth:`can_wait`): while the
      stock lasts, moves home from the newest pile first, then from an older pile when
      the card makes room for another move home, then the deal, then the others.
      Why this is sound: docs/solver.md#salic-law-old-piles-wait-for-the-deal
    * **Every card wakes when the deal ends**.
      Why this is sound: docs/solver.md#salic-law-every-card-wakes-when-the-deal-ends
    * **A position after the deal is lost when one it follows from is lost**
      (:meth:`dominated`, the table ``lost``).
      Why this is sound: docs/solver.md#salic-law-a-position-that-follows-from-a-lost-one

    With ``awake=True`` (the plain search a solver's budget ends with, and the search
    after each of the win finder's playouts) no card sleeps after the deal
    (:meth:`visit_after`, :meth:`children_after`), and two more rules hold there:

    * **No card asleep after the deal**.
      Why this is sound: docs/solver.md#salic-law-no-card-asleep-after-the-deal
    * **A card alone on its king goes home** without branching when a foundation takes
      it (:meth:`home_forced`).
      Why this is sound: docs/solver.md#salic-law-a-card-alone-on-its-king
    * **A card whose rank lies only under it goes home**, and no other move is tried
      (:func:`_only_here`).
      Why this is sound: docs/solver.md#salic-law-a-card-whose-rank-lies-only-under-it
    """

    __slots__ = ("piles", "found", "stock", "budget", "line", "seen", "lost", "plain",
                 "awake")

    def __init__(self, state: State, budget, plain: bool = False, awake: bool = False):
        piles = state.piles
        # A king pile as ranks, its king (13) first; [] for a king not dealt yet.
        self.piles = [[card.rank for card in piles[k]] for k in KINGS]
        self.found = [piles[f][-1].rank if piles[f] else 0 for f in FOUNDATIONS]
        self.stock = [card.rank for card in piles[STOCK_PILE]]
        self.budget = budget
        self.line: list[Move] = []
        # key -> the sleep set (see the class docstring) it was searched under.
        self.seen: dict[bytes, tuple] = {}
        # key -> the sleep set under which the position was searched to the end and lost
        # (positions after the deal, deferring search only: "A position after the deal is
        # lost when one it follows from is lost").
        self.lost: dict[bytes, tuple] = {}
        self.plain = plain
        self.awake = awake

    def run(self):
        if self.visit(()):
            return Outcome.WON, self.line
        return (Outcome.UNDECIDED, None) if self.budget.out else (Outcome.LOST, None)

    def home_safe(self) -> list[tuple[int, int]]:
        """Play every safe move home; return ``(pile, foundation, rank)`` of each."""
        piles, found, line = self.piles, self.found, self.line
        if self.awake and not self.stock:
            return self.home_forced()
        # A safe move home is a top card one above the lowest foundation (a king, 13,
        # never is one); most positions have none.
        floor = min(found) + 1
        for pile in piles:
            if pile and pile[-1] == floor:
                break
        else:
            return ()
        played = []
        changed = True
        while changed:
            changed = False
            floor = min(found) + 1
            for k, pile in enumerate(piles):
                while len(pile) > 1 and pile[-1] <= floor and pile[-1] - 1 in found:
                    f = found.index(pile[-1] - 1)
                    found[f] = pile.pop()
                    played.append((k, f, found[f]))
                    line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                    changed = True
                    floor = min(found) + 1
        return played

    def home_forced(self) -> list[tuple[int, int]]:
        """After the deal, in the search with no card asleep (``awake``): play every safe
        move home and every move home of a card alone on its king (see "A card alone on
        its king goes home"), until none is left; return them as :meth:`home_safe`."""
        piles, found, line = self.piles, self.found, self.line
        floor = min(found) + 1
        for pile in piles:
            if len(pile) > 1 and (pile[-1] == floor or len(pile) == 2
                                  and pile[-1] - 1 in found):
                break
        else:
            return ()
        played = []
        changed = True
        while changed:
            changed = False
            floor = min(found) + 1
            for k, pile in enumerate(piles):
                while len(pile) > 1 and pile[-1] - 1 in found and (
                        len(pile) == 2 or pile[-1] <= floor):
                    f = found.index(pile[-1] - 1)
                    found[f] = pile.pop()
                    played.append((k, f, found[f]))
                    line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                    changed = True
                    floor = min(found) + 1
        return played

    def unplay(self, played) -> None:
        piles, found, line = self.piles, self.found, self.line
        for k, f, _rank in reversed(played):
            piles[k].append(found[f])
            found[f] -= 1
            line.pop()

    def newest(self) -> int:
        """The king pile the deal lands on (-1 once the stock is out)."""
        if not self.stock:
            return -1
        return max(k for k, pile in enumerate(self.piles) if pile)

    def key(self) -> bytes:
        piles, found = self.piles, self.found
        head = bytes(sorted(found)) + bytes((len(self.stock),))
        if self.stock:
            newest = self.newest()
            return head + bytes(piles[newest]) + b"|" + b"|".join(
                sorted(bytes(pile) for k, pile in enumerate(piles) if k != newest))
        return head + b"|".join(sorted(map(bytes, piles)))

    def sleep_key(self, sleep) -> tuple:
        """The sleep set in the table's terms: each sleeping card as the content of its
        pile (the newest pile marked while the stock lasts) and its height, sorted, so
        that it names the same cards whatever the order of the piles."""
        if not sleep:
            return ()
        piles, newest = self.piles, self.newest()
        return tuple(sorted((bytes(piles[k]) + (b"*" if k == newest else b""), h)
                            for k, h in sleep))

    def visit(self, sleep, ended: bool = False) -> bool:
        if self.awake and not self.stock:
            return self.visit_after()
        played = self.home_safe()
        found = self.found
        if min(found) == JACK:
            return True
        if ended and (self.awake or not self.plain):
            sleep = ()
        if played and sleep:
            piles = self.piles
            ranks = {rank for _k, _f, rank in played}
            sleep = tuple((k, h) for k, h in sleep
                          if h < len(piles[k]) and piles[k][h] not in ranks)
        if sleep and self.hopeless(sleep):
            self.unplay(played)
            return False
        key = self.key()
        asleep = self.sleep_key(sleep)
        before = self.seen.get(key)
        if before is not None:
            if _contains(asleep, before):
                self.unplay(played)
                return False
            asleep = _common(asleep, before)
            rest = list(asleep)
            kept = []
            for e in sleep:
                if (entry := self.sleep_key((e,))[0]) in rest:
                    rest.remove(entry)
                    kept.append(e)
            sleep = tuple(kept)
        if self.budget.spend():
            self.seen[key] = asleep
            if ended and not self.plain and self.lost and self.dominated(sleep):
                self.lost[key] = asleep
                self.unplay(played)
                return False
            if self.children(sleep):
                return True
            if not self.stock and not self.plain and not self.budget.out:
                self.lost[key] = asleep
        self.unplay(played)
        return False

    def visit_after(self) -> bool:
        """:meth:`visit` after the deal in the search with no card asleep (``awake``):
        the same search, with no sleep set to keep."""
        played = self.home_forced()
        piles, found = self.piles, self.found
        if min(found) == JACK:
            return True
        key = bytes(sorted(found)) + b"\0" + b"|".join(sorted(map(bytes, piles)))
        seen = self.seen
        if key not in seen and self.budget.spend():
            seen[key] = ()
            if self.children_after():
                return True
        self.unplay(played)
        return False

    def children_after(self) -> bool:
        """:meth:`children` after the deal with no card asleep."""
        piles, found, line, budget = self.piles, self.found, self.line, self.budget
        tried = set()
        order = range(len(piles))
        for k, pile in enumerate(piles):
            if len(pile) > 1 and pile[-1] - 1 in found and _only_here(found, pile):
                order = (k,)                        # the one move tried
                break
        for k in order:                             # moves home
            pile = piles[k]
            if len(pile) < 2 or pile[-1] - 1 not in found:
                continue
            content = bytes(pile)
            if content in tried:
                continue
            tried.add(content)
            f = found.index(pile[-1] - 1)
            found[f] = pile.pop()
            line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
            if self.visit_after():
                return True
            line.pop()
            pile.append(found[f])
            found[f] -= 1
            if budget.out:
                return False
        bare = [k for k, pile in enumerate(piles) if len(pile) == 1]
        if not bare or len(order) == 1:
            return False
        tried.clear()
        free = len(bare)
        wanted = {rank + 1 for rank in found}
        for k, pile in enumerate(piles):            # cards onto bare kings, then one home
            height = len(pile)
            if height < 3:
                continue
            deepest = height - 1 - min(free, height - 2)
            if wanted.isdisjoint(pile[deepest:height - 1]):
                continue
            content = bytes(pile)
            if content in tried:
                continue
            tried.add(content)
            for depth in range(1, min(free, height - 2) + 1):
                under = height - 1 - depth
                rank = pile[under]
                if rank not in wanted:
                    continue
                for b in bare[:depth]:
                    piles[b].append(pile.pop())
                    line.append(_MOVES[KINGS[k]][KINGS[b]])
                f = found.index(rank - 1)
                found[f] = pile.pop()
                line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                if self.visit_after():
                    return True
                pile.append(found[f])
                found[f] -= 1
                for b in reversed(bare[:depth]):
                    pile.append(piles[b].pop())
                del line[len(line) - depth - 1:]
                if budget.out:
                    return False
        return False

    def dominated(self, sleep) -> bool:
        """Whether a position the search lost already becomes this one by one card home:
        a foundation top f laid back on a pile (see "A position after the deal is lost
        when one it follows from is lost")."""
        piles, found, lost = self.piles, self.found, self.lost
        contents = sorted(map(bytes, piles))
        asleep = self.sleep_key(sleep)
        for f in set(found):
            if f < 2:
                continue
            tops = sorted(found)
            tops[tops.index(f)] = f - 1
            head = bytes(sorted(tops)) + bytes((0,))
            card = bytes((f,))
            for j, content in enumerate(contents):
                if j and content == contents[j - 1]:
                    continue
                laid = content + card
                other = contents[:j] + [laid] + contents[j + 1:]
                before = lost.get(head + b"|".join(sorted(other)))
                if before is None:
                    continue
                if (laid, len(content)) in before:
                    continue            # the card put back sleeps there
                # The other cards asleep there, in this position's terms: those of rank
                # f wake when the card put back goes home.
                rest = [(content, h) if pile == laid else (pile, h)
                        for pile, h in before if pile[h] != f]
                if rest and laid in contents:
                    continue            # which equal pile a card sleeps on is unclear
                if _contains(asleep, tuple(sorted(rest))):
                    return True
        return False

    def hopeless(self, sleep) -> bool:
        """A sleeping card that is the last of its rank off the foundations can never
        wake (only another card of its rank going home wakes it), so it never goes
        home: the position is lost under its sleep set."""
        piles = self.piles
        lowest, second = sorted(self.found)[:2]
        # Seven foundations hold a card of rank r when exactly one is below r.
        return any(lowest < piles[k][h] <= second for k, h in sleep)

    def children(self, sleep) -> bool:
        piles, found, line, budget = self.piles, self.found, self.line, self.budget
        tried = set()
        newest = self.newest()
        order: list[int | None] = list(range(len(piles)))
        if self.stock and self.plain:
            order.append(None)
        elif self.stock:
            # While the stock lasts: the moves home an old pile could as well make after
            # the next card is dealt go after the deal (see "A card home from an old
            # pile"), the others before it; None stands for the deal.
            later = [k for k in order if k != newest and self.can_wait(k)]
            first = [k for k in order if k not in later]
            if newest in first:
                first.remove(newest)
                first.insert(0, newest)
            order = first + [None] + later
        for k in order:                             # moves home (and the deal)
            if k is None:
                if self.deal(sleep):
                    return True
                if budget.out:
                    return False
                continue
            pile = piles[k]
            if len(pile) < 2 or pile[-1] - 1 not in found:
                continue
            top = len(pile) - 1
            if (k, top) in sleep:
                continue
            content = (bytes(pile), k == newest,
                       tuple(h for p, h in sleep if p == k) if sleep else ())
            asleep = not (self.awake and not self.stock)
            if content in tried:
                if asleep:
                    sleep = (*sleep, (k, top))
                continue
            tried.add(content)
            f = found.index(pile[-1] - 1)
            rank = found[f] = pile.pop()
            line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
            awake = tuple(e for e in sleep if piles[e[0]][e[1]] != rank)
            if self.visit(awake):
                return True
            line.pop()
            pile.append(rank)
            found[f] -= 1
            if budget.out:
                return False
            if asleep:
                sleep = (*sleep, (k, top))
        if self.stock:
            return False
        bare = [k for k, pile in enumerate(piles) if len(pile) == 1]
        if not bare:
            return False
        tried.clear()
        free = len(bare)
        wanted = {rank + 1 for rank in found}
        for k, pile in enumerate(piles):            # cards onto bare kings, then one home
            height = len(pile)
            if height < 3:
                continue
            # Only a pile with a card a bare king or more can uncover for home counts.
            deepest = height - 1 - min(free, height - 2)
            if wanted.isdisjoint(pile[deepest:height - 1]):
                continue
            content = (bytes(pile), tuple(h for p, h in sleep if p == k) if sleep else ())
            if content in tried:
                continue
            tried.add(content)
            for depth in range(1, min(free, height - 2) + 1):
                under = height - 1 - depth
                rank = pile[under]
                if rank not in wanted or (k, under) in sleep:
                    continue
                # Sleeping cards laid on bare kings sleep on there; the card going home
                # wakes the cards of its rank.
                moved = {}
                for i, b in enumerate(bare[:depth]):
                    moved[(k, len(pile) - 1 - i)] = (b, 1)
                after = tuple(moved.get(e, e) for e in sleep)
                for b in bare[:depth]:
                    piles[b].append(pile.pop())
                    line.append(_MOVES[KINGS[k]][KINGS[b]])
                f = found.index(rank - 1)
                found[f] = pile.pop()
                line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                after = tuple(e for e in after if piles[e[0]][e[1]] != rank)
                if self.visit(after):
                    return True
                pile.append(found[f])
                found[f] -= 1
                for b in reversed(bare[:depth]):
                    pile.append(piles[b].pop())
                del line[len(line) - depth - 1:]
                if budget.out:
                    return False
        return False

    def can_wait(self, k: int) -> bool:
        """Whether pile ``k``'s top card, of rank r, would go home now (a foundation
        shows r - 1) without making room for a next move home: no top card of rank
        r + 1 and the card under it not playable once it is gone."""
        piles, found = self.piles, self.found
        pile = piles[k]
        if len(pile) < 2:
            return True
        rank = pile[-1]
        if rank - 1 not in found:
            return True
        if any(len(p) > 1 and p[-1] == rank + 1 for p in piles):
            return False
        if len(pile) > 2:
            under = pile[-2]
            if under - 1 in found or under - 1 == rank:
                return False
        return True

    def deal(self, sleep) -> bool:
        piles, found, stock = self.piles, self.found, self.stock
        rank = stock.pop()
        if rank == KING:
            target = piles[piles.index([])]
        elif rank == ACE:
            target = None
            slot = found.index(0)
            found[slot] = ACE
        elif rank == QUEEN:
            target = None
        else:
            target = next(pile for pile in reversed(piles) if pile)
        if target is not None:
            target.append(rank)
        self.line.append(Move(DEAL))
        if self.visit(sleep, not stock):
            return True
        self.line.pop()
        if target is not None:
            target.pop()
        elif rank == ACE:
            found[slot] = 0
        stock.append(rank)
        return False


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


def _only_here(found, pile) -> bool:
    """Whether every card of the rank of ``pile``'s top card that is not home lies in
    ``pile`` (the top card and cards under it): as many as the foundations below it."""
    rank = pile[-1]
    return pile.count(rank) == len([f for f in found if f < rank])


def _contains(asleep: tuple, before: tuple) -> bool:
    """Whether the sorted sleep key ``asleep`` holds every entry of ``before`` (as
    many times)."""
    if not before:
        return True
    rest = list(asleep)
    for entry in before:
        if entry not in rest:
            return False
        rest.remove(entry)
    return True


def _common(asleep: tuple, before: tuple) -> tuple:
    """The entries two sorted sleep keys share (as multisets), sorted."""
    rest = list(before)
    common = []
    for entry in asleep:
        if entry in rest:
            rest.remove(entry)
            common.append(entry)
    return tuple(common)


_MOVES = move_table(SalicLaw)

#: The search expands positions several times faster than the other games' (a card is
#: its rank, a position a few bytes), so a hint searches more of each sample.
register(SalicLaw, Searches(solver=search, hint_positions_scale=4))
