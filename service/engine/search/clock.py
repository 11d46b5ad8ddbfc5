"""The Clock's searches: the solver's search in rounds (:mod:`.clock_search`, over the
positions of :mod:`.clock_positions`), and the quick hint's line of card moves
(:func:`card_line`)."""

from __future__ import annotations

from ..base import State
from ..rules.clock import FOUNDATIONS, PACKET_SIZE, PACKETS, STOCK_PILE, TALON, Clock
from .budget import Budget
from .clock_positions import (
    _DONE,
    _F_PLACE,
    _F_SUIT,
    _MOVES,
    _code,
    _placed,
    _takers,
    _wants,
)
from .clock_search import _ClockSearch
from .registry import Searches, register
from .results import Answer, Line


def search(state: State, budget: Budget) -> Answer:
    """The solver's search (:class:`_ClockSearch`): ``(outcome, moves)``."""
    return _ClockSearch(budget, budget.max_positions >= FULL_SEARCH_POSITIONS).run(state)


#: From this budget of positions on, the search also drops the positions with a dead
#: talon card (:func:`.clock_positions._dead_talon`) and searches rounds from its best line (see
#: :class:`_ClockSearch`).  The hints search with smaller budgets: their searches stay
#: as they are.
FULL_SEARCH_POSITIONS = 100_000


# --- the quick hint's line of card moves ------------------------------------------------
#: How many positions :func:`card_line` may look at.
CARD_LINE_POSITIONS = 1000
#: A card lying under another in a packet counts against a position when its foundation
#: takes it within this many cards (see :func:`_line_score`).
NEAR = 4
#: What a packet left short while the stock lasts counts for (see :func:`_line_score`).
SHORT_PACKET = 3


def card_line(state: State) -> Line | None:
    """The line of card moves (moves home and marriages) from ``state`` to the position
    with the most cards home, found by a breadth-first search of at most
    :data:`CARD_LINE_POSITIONS` positions; among the positions with as many cards home,
    the best by :func:`_line_score`.  None when no line brings a card home (then the
    quick hint's other rules answer).

    Card moves never touch the stock, so the search reads only the face-up piles, while
    the stock lasts as well.  A search cut short by its budget answers only a line that
    starts with a move home.  The Clock's registered ``hint_line``.
    Why a player who follows it never sees a position twice:
    docs/solver.md#clock-the-quick-hints-line
    """
    piles = state.piles
    stock = len(piles[STOCK_PILE])
    packets = tuple(bytes(_code(card) for card in piles[p]) for p in PACKETS)
    talon = bytes(_code(card) for card in piles[TALON])
    tops = bytes(piles[f][-1].rank for f in FOUNDATIONS)
    start = _placed(tops)
    index = state.variant.index
    seen = {(packets, talon, tops)}
    queue = [(packets, talon, tops, ())]
    best = None
    nodes = 0
    for packets, talon, tops, line in queue:
        if nodes == CARD_LINE_POSITIONS:
            break
        nodes += 1
        if line:
            score = (_placed(tops), _line_score(packets, talon, tops, stock))
            if best is None or score > best[0]:
                best = (score, line, tops == _DONE)
            if tops == _DONE:
                break
        for move, after in _card_moves(packets, talon, tops):
            if after not in seen:
                seen.add(after)
                queue.append((*after, line + ((index[move.source], index[move.target]),)))
    if best is None or best[0][0] <= start:
        return None
    (placed, _score), line, won = best
    complete = nodes < CARD_LINE_POSITIONS
    if not complete and line[0][1] not in FOUNDATIONS:
        return None
    home = sum(len(piles[f]) for f in FOUNDATIONS) + placed - start
    return Line(line, won, home, nodes, complete)



def _card_moves(packets, talon, tops) -> list:
    """The card moves of a position (moves home, then marriages) and the positions they
    lead to, ``(packets, talon, tops)``."""
    found = []
    wants = _wants(tops)
    if talon:
        for f in wants.get(talon[-1], ()):
            found.append((_MOVES[TALON][f], (
                packets, talon[:-1], tops[:f] + bytes((talon[-1] & 15,)) + tops[f + 1:])))
    for i, pile in enumerate(packets):
        if pile:
            for f in wants.get(pile[-1], ()):
                found.append((_MOVES[PACKETS[i]][f], (
                    packets[:i] + (pile[:-1],) + packets[i + 1:], talon,
                    tops[:f] + bytes((pile[-1] & 15,)) + tops[f + 1:])))
    takers = _takers(packets)
    for i, pile in enumerate(packets):
        for j in takers.get(pile[-1], ()) if pile else ():
            if j != i:
                after = list(packets)
                after[i] = pile[:-1]
                after[j] = packets[j] + pile[-1:]
                found.append((_MOVES[PACKETS[i]][PACKETS[j]], (tuple(after), talon, tops)))
    return found


def _need(card: int, tops: bytes) -> int:
    """How many cards the nearest foundation that still takes ``card`` needs before it
    (13 when none does)."""
    suit, rank = card >> 4, card & 15
    best = 13
    for f in FOUNDATIONS:
        if _F_SUIT[f] == suit:
            place = _F_PLACE[f].get(rank)
            top = _F_PLACE[f][tops[f]]
            if place is not None and place > top:
                best = min(best, place - top - 1)
    return best


def _line_score(packets, talon, tops, stock: int) -> int:
    """How a position of card moves looks for what follows, from its face-up cards: each
    packet left short while the stock lasts counts :data:`SHORT_PACKET` (the refill
    brings a card into play); each card under another in a packet counts against it the
    more, the sooner its foundation takes it (within :data:`NEAR` cards); each talon
    card under the top counts against it one more than the cards its foundation needs
    before it."""
    short = sum(1 for pile in packets if len(pile) < PACKET_SIZE) if stock else 0
    stuck = 0
    for pile in packets:
        for card in pile[:-1]:
            need = _need(card, tops)
            if need < NEAR:
                stuck += NEAR - need
    buried = sum(1 + _need(card, tops) for card in talon[:-1])
    return SHORT_PACKET * short - stuck - buried


register(Clock, Searches(solver=search, hint_line=card_line))
