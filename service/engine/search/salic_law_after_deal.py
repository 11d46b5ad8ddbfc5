"""Salic Law's search once the stock is out (the part of
:class:`.salic_law_search._SalicSearch` that plays after the deal): the moves onto bare
kings, and the search with no card asleep (``awake=True``)."""

from __future__ import annotations

from ..cards import JACK
from ..rules.salic_law import FOUNDATIONS, KINGS, SalicLaw
from .results import move_table

#: The searches' moves, by source and target pile.
_MOVES = move_table(SalicLaw)


class _AfterTheDeal:
    """What :class:`.salic_law_search._SalicSearch` plays once the stock is out (its
    slots and its other methods are the search's)."""

    __slots__ = ()

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
        return _send_home(piles, found, line, alone=True)

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
        if len(order) == 1:
            return False
        return self.onto_bare_kings((), tried)

    def onto_bare_kings(self, sleep, tried: set) -> bool:
        """The moves onto bare kings once the stock is out (see "Cards go onto bare kings
        only to send the card they uncover home at once"): from each pile, its top d
        cards onto d bare kings, then the card they uncover home; each position reached
        is searched under the cards asleep, ``sleep`` (none in the search with no card
        asleep).  ``tried``, the caller's set of the piles it tried, is emptied first."""
        piles, found, line, budget = self.piles, self.found, self.line, self.budget
        bare = [k for k, pile in enumerate(piles) if len(pile) == 1]
        if not bare:
            return False
        tried.clear()
        free = len(bare)
        wanted = {rank + 1 for rank in found}
        after = ()
        for k, pile in enumerate(piles):
            height = len(pile)
            if height < 3:
                continue
            # Only a pile with a card a bare king or more can uncover for home counts.
            deepest = height - 1 - min(free, height - 2)
            if wanted.isdisjoint(pile[deepest:height - 1]):
                continue
            content = ((bytes(pile), tuple(h for p, h in sleep if p == k)) if sleep
                       else bytes(pile))
            if content in tried:
                continue
            tried.add(content)
            for depth in range(1, min(free, height - 2) + 1):
                under = height - 1 - depth
                rank = pile[under]
                if rank not in wanted or (k, under) in sleep:
                    continue
                if sleep:
                    # Sleeping cards laid on bare kings sleep on there.
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
                if sleep:
                    # The card going home wakes the cards of its rank.
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


def _send_home(piles, found, line, alone: bool) -> list[tuple[int, int, int]]:
    """Play the moves home of the search's table (``piles``, ``found``, the ``line``
    played) until none is left: every safe one (a card one above the lowest foundation
    top), and with ``alone`` every one of a card alone on its king; ``(pile,
    foundation, rank)`` of each."""
    played = []
    changed = True
    while changed:
        changed = False
        floor = min(found) + 1
        for k, pile in enumerate(piles):
            while len(pile) > 1 and (pile[-1] <= floor or alone and len(pile) == 2) \
                    and pile[-1] - 1 in found:
                f = found.index(pile[-1] - 1)
                found[f] = pile.pop()
                played.append((k, f, found[f]))
                line.append(_MOVES[KINGS[k]][FOUNDATIONS[f]])
                changed = True
                floor = min(found) + 1
    return played


def _only_here(found, pile) -> bool:
    """Whether every card of the rank of ``pile``'s top card that is not home lies in
    ``pile`` (the top card and cards under it): as many as the foundations below it."""
    rank = pile[-1]
    return pile.count(rank) == len([f for f in found if f < rank])


