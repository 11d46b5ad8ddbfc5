"""The Clock's searches: the solver's search in rounds, and the quick hint's line of card
moves (:func:`card_line`)."""

from __future__ import annotations

import random

from ..base import State
from ..cards import Card
from ..moves import DRAW, REFILL, Move
from ..rules.clock import BASES, FOUNDATIONS, HOURS, PACKET_SIZE, PACKETS, STOCK_PILE, TALON, Clock
from .budget import Budget
from .registry import Searches, register
from .results import Answer, Line, Outcome, move_table


def search(state: State, budget: Budget) -> Answer:
    """The solver's search (:class:`_ClockSearch`): ``(outcome, moves)``."""
    return _ClockSearch(budget, budget.max_positions >= FULL_SEARCH_POSITIONS).run(state)


# --- the solver's search ----------------------------------------------------------------
_SUITS = "SHDC"


def _code(card: Card) -> int:
    return _SUITS.index(card.suit) * 16 + card.rank


#: Foundation f's suit, and the ranks it holds from its base to its hour.
_F_SUIT = tuple(_SUITS.index(BASES[h][1]) for h in HOURS)
_F_RANKS = tuple(
    tuple((Card.parse(BASES[h]).rank - 1 + i) % 13 + 1
          for i in range((h - Card.parse(BASES[h]).rank) % 13 + 1)) for h in HOURS)
_MOVES = move_table(Clock)
_DRAW, _REFILL = Move(DRAW), Move(REFILL)


#: The positions the search's first round may expand, and how many more each later
#: round may (see :class:`_ClockSearch`).
RESTART_POSITIONS = 500
RESTART_GROWTH = 10


class _ClockSearch:
    """The solver's search of the Clock (:func:`search`): depth first over compact
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
    * **Rounds from the best line** (``full``: a budget of :data:`FULL_SEARCH_POSITIONS`
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
        append = found.append
        if talon:                                           # moves home
            card = talon[-1]
            for f in wants.get(card, ()):
                append((_MOVES[TALON][f], (packets, talon[:-1],
                                           tops[:f] + _RANK_BYTE[card] + tops[f + 1:], n)))
        tried = set()       # with the stock out, equal packets play alike: one is tried
        for i, pile in enumerate(packets):
            if not pile:
                continue
            card = pile[-1]
            targets = wants.get(card)
            if targets is None:
                continue
            if not n:
                if pile in tried:
                    continue
                tried.add(pile)
            moves = _PACKET_MOVES[i]
            for f in targets:
                append((moves[f], (packets[:i] + (pile[:-1],) + packets[i + 1:], talon,
                                   tops[:f] + _RANK_BYTE[card] + tops[f + 1:], n)))
        takers: dict[int, list[int]] = {}                   # marriages
        for j, pile in enumerate(packets):
            if len(pile) >= PACKET_SIZE:
                down = _DOWN_CODE[pile[-1]]
                if down in takers:
                    takers[down].append(j)
                else:
                    takers[down] = [j]
        tried.clear()
        for i, pile in enumerate(packets):
            if not pile:
                continue
            receivers = takers.get(pile[-1])
            if receivers is None:
                continue
            if not n:
                if pile in tried:
                    continue
                tried.add(pile)
            moves = _PACKET_MOVES[i]
            targets = set()
            for j in receivers:
                if j == i or (not n and packets[j] in targets):
                    continue
                targets.add(packets[j])
                after = list(packets)
                after[i] = pile[:-1]
                after[j] = packets[j] + pile[-1:]
                append((moves[PACKETS[j]], (tuple(after), talon, tops, n)))
        if not n:
            return found
        stock = self.stock
        if min(map(len, packets)) < PACKET_SIZE:
            after, left = _refilled(packets, stock, n)
            found.append((_REFILL, (after, talon, tops, left)))
        elif not _buries_itself(stock[n - 1], talon, tops):
            found.append((_DRAW, (packets, talon + stock[n - 1:n], tops, n - 1)))
        return found


#: From this budget of positions on, the search also drops the positions with a dead
#: talon card (:func:`_dead_talon`) and searches rounds from its best line (see
#: :class:`_ClockSearch`).  The hints search with smaller budgets: their searches stay
#: as they are.
FULL_SEARCH_POSITIONS = 100_000
#: With such a budget, once this many positions are searched, most rounds start from a
#: position on the line that brought the most cards home so far (see
#: :class:`_ClockSearch`): :data:`ELITE_ROUNDS` such rounds between two rounds from the
#: position searched.
ELITE_AFTER = 100_000
ELITE_ROUNDS = 1
#: The piles of each card move, by the move's identity.
_PILES = {id(_MOVES[s][t]): (s, t) for s in (*PACKETS, TALON)
          for t in (*FOUNDATIONS, *PACKETS) if s != t}
#: Foundation tops that match no position's (the start of a search: every talon card
#: is checked).
_NO_TOPS = bytes(12)


def _dead_talon(talon: bytes, tops: bytes, before: bytes) -> bool:
    """Whether a card of ``talon`` can never go home, so that the position is lost,
    when the foundations have come from ``before`` to ``tops``: every foundation that
    still wants the card must first take a card whose copies off the foundations all lie
    under it (:func:`_buries_itself` of the card on the talon below it).  Only the cards
    of the suits of the cards gone home since ``before`` are checked, from the lowest
    talon copy of one of them up (every card when ``before`` is :data:`_NO_TOPS`, the
    start of a search).
    Why this is sound, and why those cards suffice: docs/solver.md#clock-a-dead-talon-card
    """
    if before == _NO_TOPS:
        lowest, suits = 1, {0, 1, 2, 3}
    else:
        lowest, suits = len(talon), set()
        for f in FOUNDATIONS:
            if tops[f] != before[f]:
                suit, place = _F_SUIT[f], _F_PLACE[f]
                for rank in _F_RANKS[f][place[before[f]] + 1:place[tops[f]] + 1]:
                    at = talon.find(suit * 16 + rank)
                    if at >= 0:
                        lowest = min(lowest, at)
                        suits.add(suit)
    for i in range(max(lowest, 1), len(talon)):
        card = talon[i]
        if card >> 4 in suits and _buries_itself(card, talon[:i], tops):
            return True
    return False


#: The source packet (0 .. 11) of each marriage, and the moves home, by move.
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

_DONE = bytes(f + 1 for f in FOUNDATIONS)
#: Each packet's row of the move table, and each card code's rank as a byte (a
#: foundation's new top).
_PACKET_MOVES = tuple(_MOVES[p] for p in PACKETS)
_RANK_BYTE = {s * 16 + r: bytes((r,)) for s in range(4) for r in range(1, 14)}
#: The card one rank below each card code, same suit (A below 2, K below A).
_DOWN_CODE = {s * 16 + r: s * 16 + (r - 2) % 13 + 1 for s in range(4) for r in range(1, 14)}
#: For each foundation, the place of each of its ranks in its sequence.
_F_PLACE = tuple({rank: i for i, rank in enumerate(ranks)} for ranks in _F_RANKS)


#: The two places of each card code in the foundations' sequences, ``(f, place)``: the
#: foundations use all 104 cards, so every card lies in exactly two of them, or twice in
#: one.
_COPIES = {code: tuple((f, place) for f in FOUNDATIONS if _F_SUIT[f] == code >> 4
                       for place, rank in enumerate(_F_RANKS[f]) if rank == code & 15)
           for code in _DOWN_CODE}


#: The tables of :func:`_wants` already built, by ``tops``; cleared when this large.
_WANTS_KEPT = 4096
_wants_built: dict[bytes, dict[int, tuple[int, ...]]] = {}


def _wants(tops: bytes) -> dict[int, tuple[int, ...]]:
    """Which card code each unfinished foundation takes next: the foundations (in their
    order) by the card they want.  The searches ask it of every position, so the tables
    are kept (and must not be changed by the caller)."""
    wants = _wants_built.get(tops)
    if wants is None:
        built: dict[int, list[int]] = {}
        for f in FOUNDATIONS:
            top = tops[f]
            if top != f + 1:
                built.setdefault(_F_SUIT[f] * 16 + top % 13 + 1, []).append(f)
        wants = {card: tuple(targets) for card, targets in built.items()}
        if len(_wants_built) >= _WANTS_KEPT:
            _wants_built.clear()
        _wants_built[tops] = wants
    return wants


def _refilled(packets, stock: bytes, n: int):
    """The packets after a refill, and the cards left in the stock: the short packets
    topped up to three in their order from the top of the stock (its first ``n``
    cards, top last), until none is short or the stock is out."""
    after = list(packets)
    for i, pile in enumerate(after):
        while len(pile) < PACKET_SIZE and n:
            n -= 1
            pile += stock[n:n + 1]
        after[i] = pile
    return tuple(after), n


def _home_count(card: int, tops: bytes) -> int:
    """How many copies of ``card`` lie on the foundations."""
    count = 0
    for f, place in _COPIES[card]:
        if place <= _F_PLACE[f][tops[f]]:
            count += 1
    return count


def _buries_itself(card: int, talon: bytes, tops: bytes) -> bool:
    """Whether ``card`` drawn onto ``talon`` could never leave it: every foundation that
    still wants a copy of it must first take a card whose every copy off the
    foundations lies in the talon already (under it, since only the talon's top card
    moves).  Then the game is lost: the card is never home.
    Why the search may skip such a draw: docs/solver.md#clock-a-draw-that-buries-its-own-card
    """
    suit, rank = card >> 4, card & 15
    for f in FOUNDATIONS:
        if _F_SUIT[f] != suit:
            continue
        place = _F_PLACE[f].get(rank)
        top = _F_PLACE[f][tops[f]]
        if place is None or place <= top:
            continue
        for between in _F_RANKS[f][top + 1:place]:
            code = suit * 16 + between
            away = 2 - _home_count(code, tops)
            if away and talon.count(code) >= away:
                break
        else:
            return False            # this foundation can come up to the card
    return True


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


def _placed(tops: bytes) -> int:
    """How many cards the foundations hold above their bases."""
    return sum(_F_PLACE[f][tops[f]] for f in FOUNDATIONS)


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
    takers: dict[int, list[int]] = {}
    for j, pile in enumerate(packets):
        if len(pile) >= PACKET_SIZE:
            takers.setdefault(_DOWN_CODE[pile[-1]], []).append(j)
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
