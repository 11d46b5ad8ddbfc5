"""The Clock's solver search (:class:`_ClockSearch`): depth first over compact positions
(:mod:`.clock_positions`), in rounds."""

from __future__ import annotations

import random

from ..base import State
from ..moves import Move
from ..rules.clock import FOUNDATIONS, PACKET_SIZE, PACKETS, STOCK_PILE, TALON
from .clock_positions import (
    _DONE,
    _DOWN_CODE,
    _DRAW,
    _MOVES,
    _NO_TOPS,
    _PACKET_MOVES,
    _RANK_BYTE,
    _REFILL,
    _buries_itself,
    _code,
    _dead_talon,
    _home_count,
    _placed,
    _refilled,
    _takers,
    _wants,
)
from .results import Outcome

#: The positions the search's first round may expand, and how many more each later
#: round may (see :class:`_ClockSearch`).
RESTART_POSITIONS = 500
RESTART_GROWTH = 10


class _ClockSearch:
    """The solver's search of the Clock (:func:`.clock.search`): depth first over compact
    positions, with a table of the positions already searched, in rounds.

    A position is the twelve packets and the talon (``bytes`` of card codes, suit * 16
    + rank, bottom first), the top rank of each foundation and how many cards the stock
    still holds (its order is the deal's).

    * **Rounds**: round 0 tries the moves in their natural order (moves home, marriages,
      then the refill or draw), round k > 0 in an order drawn by ``random.Random(k)``
      round :func:`_move_class` (:meth:`ranked`), each with a fresh table and
      :data:`RESTART_POSITIONS` + k * :data:`RESTART_GROWTH` positions.  A round that
      wins gives the line, one that finishes within its share proves the position
      lost, one that runs out hands over to the next until the budget is out.
      Why this is sound: docs/solver.md#clock-rounds
    * **Rounds from the best line** (``full``: a budget of :data:`.clock.FULL_SEARCH_POSITIONS`
      or more): once :data:`ELITE_AFTER` positions are spent, :data:`ELITE_ROUNDS`
      rounds of every :data:`ELITE_ROUNDS` + 1 start from a position on the line that
      brought the most cards home so far (replayed by :meth:`play`).
      Why this is sound: docs/solver.md#clock-rounds-from-the-best-line
    * **Equal positions are searched once**: the position as it is while the stock
      lasts, its packets sorted once the stock is out.
      Why this is sound: docs/solver.md#clock-equal-positions
    * **A draw that buries its own card is not searched** (:func:`_buries_itself`).
      Why this is sound: docs/solver.md#clock-a-draw-that-buries-its-own-card
    * **A position with a dead talon card is not searched** (``full`` only,
      :func:`_dead_talon`).
      Why this is sound: docs/solver.md#clock-a-dead-talon-card
    * **Safe moves home are forced** (:meth:`force`): a card whose twin is home, from
      the talon, or from a packet when both copies of the card below it are home and the
      stock is out or the packet keeps three cards.
      Why this is sound: docs/solver.md#clock-safe-moves-home
    """

    __slots__ = ("stock", "budget", "line", "seen", "order", "left", "full", "best",
                 "best_line")

    def __init__(self, budget, full: bool = False):
        self.full = full
        self.best = -1
        self.best_line: list[Move] = []
        self.budget = budget
        self.line: list[Move] = []
        self.seen: set[bytes] = set()
        self.order: random.Random | None = None
        self.left = 0

    def run(self, state: State):
        """Search ``state`` in rounds (see the class docstring) until one wins, one
        searches every line within its share (the position is lost), or the budget is
        out."""
        piles = state.piles
        self.stock = bytes(_code(card) for card in piles[STOCK_PILE])
        packets = tuple(bytes(_code(card) for card in piles[p]) for p in PACKETS)
        talon = bytes(_code(card) for card in piles[TALON])
        tops = bytes(piles[f][-1].rank for f in FOUNDATIONS)
        budget = self.budget
        n = len(self.stock)
        round_ = elite = 0
        since = 0               # rounds from the best line since the last from the start
        while True:
            if self.full and budget.searched >= ELITE_AFTER and since < ELITE_ROUNDS:
                since += 1
                # A round from a position on the deepest line so far.
                order = random.Random(f"elite {elite}")
                elite += 1
                cut = order.randrange(len(self.best_line) + 1)
                self.order = order
                self.left = RESTART_POSITIONS + RESTART_GROWTH * round_
                self.seen = set()
                self.line = self.best_line[:cut]
                start = self.play(self.line, packets, talon, tops, n)
                if self.visit(*start, _NO_TOPS):
                    return Outcome.WON, self.line
                if budget.out:
                    return Outcome.UNDECIDED, None
                continue
            since = 0
            self.order = random.Random(round_) if round_ else None
            self.left = RESTART_POSITIONS + RESTART_GROWTH * round_
            self.seen = set()
            self.line = []
            if self.visit(packets, talon, tops, n, _NO_TOPS):
                return Outcome.WON, self.line
            if budget.out:
                return Outcome.UNDECIDED, None
            if self.left >= 0:
                return Outcome.LOST, None
            round_ += 1

    def play(self, moves, packets, talon, tops, n):
        """The position after ``moves`` (moves of this search) from the one given."""
        stock = self.stock
        for move in moves:
            if move is _DRAW:
                talon += stock[n - 1:n]
                n -= 1
                continue
            if move is _REFILL:
                packets, n = _refilled(packets, stock, n)
                continue
            source, target = _PILES[id(move)]
            if source == TALON:
                card = talon[-1]
                talon = talon[:-1]
            else:
                i = source - PACKETS[0]
                card = packets[i][-1]
                packets = packets[:i] + (packets[i][:-1],) + packets[i + 1:]
            if target in FOUNDATIONS:
                tops = tops[:target] + _RANK_BYTE[card] + tops[target + 1:]
            else:
                j = target - PACKETS[0]
                packets = packets[:j] + (packets[j] + bytes((card,)),) + packets[j + 1:]
        return packets, talon, tops, n

    def spend(self) -> bool:
        """One more position for this round; False when the round or the whole budget
        is spent."""
        self.left -= 1
        return self.left >= 0 and self.budget.spend()

    @property
    def out(self) -> bool:
        return self.left < 0 or self.budget.out

    def visit(self, packets, talon, tops, n, before=None) -> bool:
        """Search a position (from the position with foundation tops ``before``):
        True when a winning line was found (then :attr:`line` holds it)."""
        line = self.line
        depth = len(line)
        seen = self.seen
        # The position as it comes, before its safe moves home: met again, it leads to
        # the same position as before, already searched.
        first = b"|".join(packets) + b"|" + talon + b"|" + tops + bytes((n,))
        if first in seen:
            return False
        packets, talon, tops, wants = self.force(packets, talon, tops, n)
        if tops == _DONE:
            return True
        if n:
            key = first if len(line) == depth else \
                b"|".join(packets) + b"|" + talon + b"|" + tops + bytes((n,))
        else:
            key = b"|".join(sorted(packets)) + b"|" + talon + b"|" + tops
        if key in seen:
            seen.add(first)
            del line[depth:]
            return False
        if self.full and before is not None and tops != before \
                and _dead_talon(talon, tops, before):
            seen.add(key)
            seen.add(first)
            del line[depth:]
            return False
        if not self.spend():
            del line[depth:]
            return False
        seen.add(key)
        seen.add(first)
        if self.full and tops != before:
            placed = _placed(tops)
            if placed > self.best:
                self.best = placed
                self.best_line = line[:]
        if self.children(packets, talon, tops, n, wants):
            return True
        del line[depth:]
        return False

    def force(self, packets, talon, tops, n):
        """Play the safe moves home (see the class docstring) until none is left; the
        position reached and its :func:`_wants`."""
        line = self.line
        wants = _wants(tops)
        # While the stock lasts a packet keeps three cards here (see the class docstring).
        least = PACKET_SIZE if n else 0
        changed = True
        while changed:
            changed = False
            if talon:
                card = talon[-1]
                targets = wants.get(card)
                if targets and _home_count(card, tops) == 1:
                    f = targets[0]
                    tops = tops[:f] + _RANK_BYTE[card] + tops[f + 1:]
                    talon = talon[:-1]
                    line.append(_MOVES[TALON][f])
                    wants = _wants(tops)
                    changed = True
                    continue
            for i, pile in enumerate(packets):
                if len(pile) <= least:
                    continue
                card = pile[-1]
                targets = wants.get(card)
                if not targets or _home_count(card, tops) != 1 \
                        or _home_count(_DOWN_CODE[card], tops) < 2:
                    continue
                f = targets[0]
                tops = tops[:f] + _RANK_BYTE[card] + tops[f + 1:]
                packets = packets[:i] + (pile[:-1],) + packets[i + 1:]
                line.append(_MOVES[PACKETS[i]][f])
                wants = _wants(tops)
                changed = True
        return packets, talon, tops, wants

    def children(self, packets, talon, tops, n, wants) -> bool:
        line = self.line
        moves = self.moves(packets, talon, tops, n, wants)
        if self.order is not None:
            moves = self.ranked(moves, packets, n)
        for move, after in moves:
            line.append(move)
            if self.visit(*after, tops):
                return True
            line.pop()
            if self.out:
                return False
        return False

    def ranked(self, moves: list, packets, n) -> list:
        """``moves`` in a round's order: by :func:`_move_class` plus a random number
        below :data:`_CLASS_SPREAD` classes (drawn from the round's generator), so that
        a move comes before the moves of a higher class more often the further apart
        their classes are, yet any order may come up."""
        rand = self.order.random
        keyed = sorted((_move_class(move, packets, n) + _CLASS_SPREAD * rand(), k, move, after)
                       for k, (move, after) in enumerate(moves))
        return [(move, after) for _key, _k, move, after in keyed]

    def moves(self, packets, talon, tops, n, wants=None) -> list:
        """The moves searched from a position and the positions they lead to (as the
        arguments of :meth:`visit`): moves home, marriages, then the refill or draw.
        ``wants`` is the position's :func:`_wants` (built when not given)."""
        if wants is None:
            wants = _wants(tops)
        found = []
        if talon:                                           # moves home
            card = talon[-1]
            for f in wants.get(card, ()):
                found.append((_MOVES[TALON][f], (packets, talon[:-1],
                                                 tops[:f] + _RANK_BYTE[card] + tops[f + 1:],
                                                 n)))
        _packet_moves(packets, talon, tops, n, wants, found)
        if not n:
            return found
        stock = self.stock
        if min(map(len, packets)) < PACKET_SIZE:
            after, left = _refilled(packets, stock, n)
            found.append((_REFILL, (after, talon, tops, left)))
        elif not _buries_itself(stock[n - 1], talon, tops):
            found.append((_DRAW, (packets, talon + stock[n - 1:n], tops, n - 1)))
        return found


def _packet_moves(packets, talon, tops, n, wants, found: list) -> None:
    """Add to ``found`` the moves home from the packets, then the marriages, with the
    positions they lead to (see :meth:`_ClockSearch.moves`).  With the stock out, equal
    packets play alike: only the first of them is tried."""
    takers = _takers(packets)
    marriages = []
    tried = set()
    for i, pile in enumerate(packets):
        if not pile:
            continue
        card = pile[-1]
        targets = wants.get(card)
        receivers = takers.get(card)
        if targets is None and receivers is None:
            continue
        if not n:
            if pile in tried:
                continue
            tried.add(pile)
        moves = _PACKET_MOVES[i]
        if targets is not None:
            for f in targets:
                found.append((moves[f], (packets[:i] + (pile[:-1],) + packets[i + 1:], talon,
                                         tops[:f] + _RANK_BYTE[card] + tops[f + 1:], n)))
        if receivers is not None:
            married = set()
            for j in receivers:
                if j == i or (not n and packets[j] in married):
                    continue
                married.add(packets[j])
                after = list(packets)
                after[i] = pile[:-1]
                after[j] = packets[j] + pile[-1:]
                marriages.append((moves[PACKETS[j]], (tuple(after), talon, tops, n)))
    found += marriages


#: With such a budget, once this many positions are searched, most rounds start from a
#: position on the line that brought the most cards home so far (see
#: :class:`_ClockSearch`): :data:`ELITE_ROUNDS` such rounds between two rounds from the
#: position searched.
ELITE_AFTER = 100_000
ELITE_ROUNDS = 1
#: The piles of each card move, by the move's identity.
_PILES = {id(_MOVES[s][t]): (s, t) for s in (*PACKETS, TALON)
          for t in (*FOUNDATIONS, *PACKETS) if s != t}


_MARRIAGE_SOURCE = {_MOVES[p][q]: p - PACKETS[0] for p in PACKETS for q in PACKETS if p != q}
_HOME = frozenset(_MOVES[p][f] for p in (*PACKETS, TALON) for f in FOUNDATIONS)
#: How far a round's random number may move a move among the classes of
#: :func:`_move_class`: with a spread above 3 even a draw may come before a move home.
_CLASS_SPREAD = 4.0


def _move_class(move: Move, packets, n: int) -> int:
    """The rank of a move in a round's order (lower first): 0 a move home; 1 a
    marriage that leaves its packet short while the stock lasts (the refill puts the
    next stock card on the packet, where it can marry, rather than on the talon) or a
    refill; 2 any other marriage; 3 a draw (the talon only gives its top card back)."""
    kind = _KIND.get(id(move))
    if kind is None:                # a move equal to one of the table's
        kind = next(k for m, k in _KINDS if m == move)
    if kind >= 0:
        return kind
    return 1 if n and len(packets[~kind]) <= PACKET_SIZE else 2


#: Each move the search makes with its class, or ``~source`` for a marriage (its class
#: depends on the source packet); by the move's identity, the search's moves being these
#: very objects.
_KINDS = ([(move, 0) for move in _HOME]
          + [(move, ~source) for move, source in _MARRIAGE_SOURCE.items()]
          + [(_DRAW, 3), (_REFILL, 1)])
_KIND = {id(move): kind for move, kind in _KINDS}

