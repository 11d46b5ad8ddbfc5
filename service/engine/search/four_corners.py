"""Four Corners' search for the solver: depth first, with a relaxed game that proves
positions lost (:func:`search`).  The quick hint's search once the stock is out is
:mod:`.endgame`."""

from __future__ import annotations

from ..base import State
from ..cards import ACE, KING, Card
from ..moves import DEAL, Move
from ..rules.four_corners import (
    ACES,
    BESIDE,
    CORNERS,
    KINGS,
    PACKETS,
    ROW_SUITS,
    STOCK_PILE,
    FourCorners,
)
from .budget import Budget
from .endgame import endgame_line
from .registry import Searches, register
from .results import Answer, Outcome, move_table


def search(state: State, budget: Budget) -> Answer:
    """The solver's search (:class:`_FourCornersSearch`): ``(outcome, moves)``."""
    return _FourCornersSearch(state.piles[STOCK_PILE], budget).run(state)


class _FourCornersSearch:
    """The solver's search of Four Corners (:func:`search`): depth first over compact
    positions, with a table of the positions already searched.

    A position is the twelve packets (each a ``bytes`` of card codes, suit row * 16 +
    rank, bottom first), the top rank of each ace foundation (0 when empty) and of each
    king foundation (14 when empty), how many cards the stock still holds (its order is
    the deal's) and the turn counter.

    * **Equal positions are searched once**: the position as it is while the stock
      lasts; once it is out, the packets sorted, and of two packets with the same cards
      one tried as a source or a target.
      Why this is sound: docs/solver.md#four-corners-equal-positions
    * **Safe moves home are forced once the stock is out**, those ``is_safe_home``
      names (:meth:`endgame`).
      Why this is sound: docs/solver.md#four-corners-safe-moves-home
    * **A packet's last card is never married** onto another packet.
      Why this is sound: docs/solver.md#four-corners-a-packets-last-card
    * **Trapped positions are lost** (:func:`_trapped`), tried at every position: with
      every case weighed where the stock runs out and while it holds at most
      ``_CASES_STOCK`` cards, elsewhere with the rules of all cases only.  Each relaxed
      game of a case counts as a position against the budget.
      Why this is sound: docs/solver.md#four-corners-trapped-positions
    """

    __slots__ = ("stock", "budget", "line", "seen")

    def __init__(self, stock: tuple[Card, ...], budget):
        self.stock = bytes(_code(card) for card in stock)
        self.budget = budget
        self.line: list[Move] = []
        self.seen: set[bytes] = set()

    def run(self, state: State):
        piles = state.piles
        packets = tuple(bytes(_code(card) for card in piles[p]) for p in PACKETS)
        up = bytes(len(piles[f]) for f in ACES)
        down = bytes(KING + 1 - len(piles[f]) for f in KINGS)
        if self.visit(packets, up, down, len(self.stock), state.turn):
            return Outcome.WON, self.line
        return (Outcome.UNDECIDED, None) if self.budget.out else (Outcome.LOST, None)

    def deal_to(self, packets, up, down, n, p):
        """Deal onto packet ``p`` as the game does: aces and kings whose foundation is
        empty go home and the next card is dealt instead.  Returns the new
        ``(packets, up, down, n)``."""
        stock = self.stock
        while n:
            card = stock[n - 1]
            n -= 1
            suit, rank = card >> 4, card & 15
            if rank == ACE and up[suit] == 0:
                up = up[:suit] + b"\x01" + up[suit + 1:]
            elif rank == KING and down[suit] == KING + 1:
                down = down[:suit] + b"\x0d" + down[suit + 1:]
            else:
                packets = packets[:p] + (packets[p] + bytes((card,)),) + packets[p + 1:]
                break
        return packets, up, down, n

    def visit(self, packets, up, down, n, turn) -> bool:
        if n:
            return self.dealing(packets, up, down, n, turn)
        return self.endgame(packets, up, down, True)

    def dealing(self, packets, up, down, n, turn) -> bool:
        key = b"|".join(packets) + up + down + bytes((n, turn))
        if key in self.seen or not self.budget.spend():
            return False
        self.seen.add(key)
        if _trapped(packets, up, down, self.stock[:n], n <= _CASES_STOCK,
                    self.budget.spend):
            return False
        line = self.line
        for p in PACKETS:
            pile = packets[p]
            if not pile:
                continue
            card = pile[-1]
            suit, rank = card >> 4, card & 15
            targets = []
            if rank == up[suit] + 1 and (p in CORNERS or BESIDE[p] == ACES[suit]):
                targets.append((ACES[suit], up[:suit] + bytes((rank,)) + up[suit + 1:], down))
            if rank == down[suit] - 1 and (p in CORNERS or BESIDE[p] == KINGS[suit]):
                targets.append((KINGS[suit], up,
                                down[:suit] + bytes((rank,)) + down[suit + 1:]))
            for f, up2, down2 in targets:
                after = packets[:p] + (pile[:-1],) + packets[p + 1:]
                after, up2, down2, n2 = self.deal_to(after, up2, down2, n, p)
                line.append(_MOVES[p][f])
                if self.visit(after, up2, down2, n2, turn):
                    return True
                line.pop()
                if self.budget.out:
                    return False
        after, up2, down2, n2 = self.deal_to(packets, up, down, n, turn)
        line.append(Move(DEAL))
        if self.visit(after, up2, down2, n2, (turn + 1) % 12):
            return True
        line.pop()
        return False

    def endgame(self, packets, up, down, root: bool = False) -> bool:
        line = self.line
        played = 0
        # Safe moves home, forced.
        changed = True
        while changed:
            changed = False
            for p in PACKETS:
                pile = packets[p]
                while pile:
                    card = pile[-1]
                    suit, rank = card >> 4, card & 15
                    if rank == up[suit] + 1 and down[suit] <= rank:
                        up = up[:suit] + bytes((rank,)) + up[suit + 1:]
                        line.append(_MOVES[p][ACES[suit]])
                    elif rank == down[suit] - 1 and up[suit] >= rank:
                        down = down[:suit] + bytes((rank,)) + down[suit + 1:]
                        line.append(_MOVES[p][KINGS[suit]])
                    else:
                        break
                    pile = pile[:-1]
                    played += 1
                    changed = True
                if len(pile) != len(packets[p]):
                    packets = packets[:p] + (pile,) + packets[p + 1:]
        if up == _ALL_UP and down == _ALL_DOWN:
            return True
        key = b"|".join(sorted(packets)) + up + down
        if key in self.seen or not self.budget.spend():
            del line[len(line) - played:]
            return False
        self.seen.add(key)
        if _trapped(packets, up, down, b"", root, self.budget.spend):
            del line[len(line) - played:]
            return False
        if self.endgame_moves(packets, up, down):
            return True
        del line[len(line) - played:]
        return False

    def endgame_moves(self, packets, up, down) -> bool:
        line, budget = self.line, self.budget
        tops: dict[int, list[int]] = {}
        sources = {}
        for p in PACKETS:
            pile = packets[p]
            if pile and pile not in sources:
                sources[pile] = p
                tops.setdefault(pile[-1], []).append(p)
        for pile, p in sources.items():                    # moves home
            card = pile[-1]
            suit, rank = card >> 4, card & 15
            after = packets[:p] + (pile[:-1],) + packets[p + 1:]
            if rank == up[suit] + 1:
                line.append(_MOVES[p][ACES[suit]])
                if self.endgame(after, up[:suit] + bytes((rank,)) + up[suit + 1:], down):
                    return True
                line.pop()
                if budget.out:
                    return False
            if rank == down[suit] - 1:
                line.append(_MOVES[p][KINGS[suit]])
                if self.endgame(after, up, down[:suit] + bytes((rank,)) + down[suit + 1:]):
                    return True
                line.pop()
                if budget.out:
                    return False
        for pile, p in sources.items():                    # marriages
            if len(pile) < 2:
                continue
            card = pile[-1]
            for other in (card - 1, card + 1):
                for q in tops.get(other, ()):
                    after = list(packets)
                    after[p] = pile[:-1]
                    after[q] = packets[q] + pile[-1:]
                    line.append(_MOVES[p][q])
                    if self.endgame(tuple(after), up, down):
                        return True
                    line.pop()
                    if budget.out:
                        return False
        return False


_MOVES = move_table(FourCorners)
#: While the stock holds more cards than this, the search's relaxed game plays the
#: rules of all cases only: with that many free cards the cases seldom tell more, and
#: weighing them costs up to a dozen relaxed games per position, time the search
#: spends better on more positions.
_CASES_STOCK = 6
_ALL_UP = bytes((KING,) * 4)
_ALL_DOWN = bytes((ACE,) * 4)


def _code(card: Card) -> int:
    return ROW_SUITS.index(card.suit) * 16 + card.rank


def _trapped(packets, up, down, stock: bytes, cases: bool = True, spend=None) -> bool:
    """True when some cards can never leave their packets, so the position is lost.

    The test is a relaxed game, a superset of the real one (:func:`_stuck`), played
    under rules every winning line of the real game obeys: a second ace goes home last
    (mirrored: a second king), and for each suit the cases of which foundation takes
    its 2 (its queen) first, each suit's cases narrowing the others' rules
    (:func:`_rules`).  A position is trapped when, for some suit, the relaxed game is
    stuck in every case left for that suit.  Without ``cases``, only the rules that
    hold in every case are played (one relaxed game instead of up to a dozen).
    ``spend`` (the search's ``Budget.spend``) is called before each relaxed game of a
    case, so that they count against the search's budget like positions; once it
    answers False the position counts as not trapped.
    Why these rules and cases hold: docs/solver.md#four-corners-trapped-positions
    """
    options = []
    for suit in range(4):
        ace_cases = (1, 2) if up[suit] == 1 else (0,)
        king_cases = (1, 2) if down[suit] == KING else (0,)
        ace, king = (suit << 4) + ACE, (suit << 4) + KING
        options.append({(a, k) for a in ace_cases for k in king_cases
                        if (a, k) != (2, 2)
                        and not (a == 1 and _lies_on(packets, ace, ace + 1))
                        and not (k == 1 and _lies_on(packets, king, king - 1))})
    if not all(options):
        return True
    if _stuck(packets, up, down, stock, *_rules(up, down, options)):
        return True
    if not cases:
        return False
    changed = True
    while changed:
        changed = False
        for suit in range(4):
            if len(options[suit]) < 2:
                continue
            for case in sorted(options[suit]):
                if spend is not None and not spend():
                    return False
                tried = list(options)
                tried[suit] = {case}
                if _stuck(packets, up, down, stock, *_rules(up, down, tried)):
                    options[suit].discard(case)
                    changed = True
            if not options[suit]:
                return True
    return False


def _rules(up, down, options):
    """The rules of the relaxed game (:func:`_stuck`) that every case left in
    ``options`` (per suit, the pairs of ace and king cases of :func:`_trapped`)
    imposes."""
    marry_ace, marry_king, ace_waits, king_waits = [], [], [], []
    for suit, cases in enumerate(options):
        aces = {a for a, _k in cases}
        kings = {k for _a, k in cases}
        marry_ace.append(up[suit] < 2 and aces != {1})
        ace_waits.append(aces == {2})
        marry_king.append(down[suit] > 12 and kings != {1})
        king_waits.append(kings == {2})
    return marry_ace, marry_king, ace_waits, king_waits


def _lies_on(packets, card: int, under: int) -> bool:
    """Some packet holds ``card`` directly on ``under``."""
    pair = bytes((under, card))
    return any(pair in pile for pile in packets)


def _stuck(packets, up, down, stock: bytes, marry_ace, marry_king, ace_waits,
           king_waits) -> bool:
    """The relaxed game of :func:`_trapped`: True when some card can never leave its
    packet in it.

    Cards leave their packets from the top down, and a card that has left stays
    *free* for good, both as a marriage partner and as a card a foundation may take.
    A top card leaves by marrying a free or top partner (unless ``marry_ace`` or
    ``marry_king`` forbids it, for an ace or a king), or home to its ace foundation
    when every rank between is free (``ace_waits``: also the ranks the king
    foundation needs first), or mirrored to its king foundation (``king_waits``).  The
    stock's cards start free.  Leaving only adds free cards, so the order tried does
    not matter: repeat until nothing more leaves.
    Why a card stuck here never goes home: docs/solver.md#four-corners-the-relaxed-game
    """
    free, reach_up, reach_down = _free_at_start(up, down, stock)
    height = [len(pile) for pile in packets]
    left = sum(height)
    ontop = [0] * 64
    for pile in packets:
        if pile:
            ontop[pile[-1]] += 1
    changed = True
    while changed and left:
        changed = False
        for i, pile in enumerate(packets):
            h = height[i]
            while h:
                y = pile[h - 1]
                suit, rank = y >> 4, y & 15
                if rank == ACE:
                    ok = marry_ace[suit] and (free[y + 1] or ontop[y + 1])
                elif rank == KING:
                    ok = marry_king[suit] and (free[y - 1] or ontop[y - 1])
                else:
                    ok = free[y - 1] or ontop[y - 1] or free[y + 1] or ontop[y + 1]
                if not ok and up[suit] < rank <= reach_up[suit] + 1:
                    ok = not ace_waits[suit] or all(
                        free[c] > (c < y) for c in range(y - rank + 2, y - rank + down[suit]))
                if not ok and reach_down[suit] - 1 <= rank < down[suit]:
                    ok = not king_waits[suit] or all(
                        free[c] > (c > y) for c in range(y - rank + up[suit] + 1, y - rank + KING))
                if not ok:
                    break
                ontop[y] -= 1
                free[y] += 1
                if rank == reach_up[suit] + 1 or rank == reach_down[suit] - 1:
                    _reach(free, reach_up, reach_down, suit)
                h -= 1
                if h:
                    ontop[pile[h - 1]] += 1
                changed = True
            left -= height[i] - h
            height[i] = h
    return left > 0


def _free_at_start(up, down, stock: bytes):
    """The relaxed game of :func:`_stuck` at its start: how many copies of each card
    code are free (the stock's), and, by suit, how far the ace foundation could go up
    on free cards (``reach_up``) and the king foundation down (``reach_down``)."""
    free = [0] * 64
    for c in stock:
        free[c] += 1
    reach_up, reach_down = list(up), list(down)
    for suit in range(4):
        _reach(free, reach_up, reach_down, suit)
    return free, reach_up, reach_down


def _reach(free, reach_up, reach_down, suit: int) -> None:
    """Take ``suit``'s foundations in the relaxed game of :func:`_stuck` as far as its
    free cards go: the ace foundation up, the king foundation down.  Each reach only
    grows when a card next to it is freed, so :func:`_stuck` calls it then."""
    base = suit << 4
    while reach_up[suit] < KING and free[base + reach_up[suit] + 1]:
        reach_up[suit] += 1
    while reach_down[suit] > ACE and free[base + reach_down[suit] - 1]:
        reach_down[suit] -= 1


register(FourCorners, Searches(solver=search, hint_line=endgame_line))
