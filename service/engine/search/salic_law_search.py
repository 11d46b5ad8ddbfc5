"""Salic Law's depth-first search with sleep sets (:class:`_SalicSearch`), the plain and
the deferring search of the solver's :func:`.salic_law.search`; once the stock is out it
plays on in :mod:`.salic_law_after_deal`."""

from __future__ import annotations

from ..base import State
from ..cards import ACE, JACK, KING, QUEEN
from ..moves import DEAL, Move
from ..rules.salic_law import FOUNDATIONS, KINGS, STOCK_PILE
from .results import Outcome
from .salic_law_after_deal import _MOVES, _AfterTheDeal, _send_home


class _SalicSearch(_AfterTheDeal):
    """The depth-first search of :func:`.salic_law.search`, with a table of the positions already
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
        return _send_home(piles, found, line, alone=False)

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
        for k in self.home_order(newest):           # moves home (and the deal)
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
        return self.onto_bare_kings(sleep, tried)

    def home_order(self, newest: int) -> list[int | None]:
        """The piles :meth:`children` tries moves home from, in order, with None for the
        deal while the stock lasts (the newest pile is ``newest``)."""
        order: list[int | None] = list(range(len(self.piles)))
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
        return order

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
