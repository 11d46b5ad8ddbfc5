"""The Four Corners endgame search behind the quick hint once the stock is out
(:func:`endgame_line`, Four Corners' registered ``hint_line``).

Once the stock is empty every card of Four Corners lies face up, so a hint may search
the whole game without seeing anything hidden.  :func:`solve` is a depth-first search
with a transposition table and a node budget: positions keyed by their packets sorted
(and the foundation tops), safe moves forced, moves home first, and a potential that
every searched move raises (cards home, then cards lying on a neighbour of their suit,
then a fixed orientation of the lateral marriages), so the moves searched form an
acyclic graph.  The answer is the line to a won position if one is found within the
budget, else the line to the position with the most cards home that the search saw
(the first found); the search is deterministic, so consecutive hints follow one line.
Why a player who follows these hints never comes back to a position:
docs/solver.md#four-corners-the-endgame-search
"""

from __future__ import annotations

from ..base import State
from ..cards import ACE, KING
from ..rules.four_corners import ACES, KINGS, PACKETS, ROW_SUITS, STOCK_PILE
from .results import Line

#: How many positions one search may expand (keeps one hint request well under 0.2 s).
SOLVER_BUDGET = 2000
#: How many positions the quick hint's search of the endgame (:func:`endgame_line`) may
#: expand.  Most endgames are settled in far fewer; the others end at the line to the
#: most cards home seen, and a larger budget finds lines to more cards home, within
#: the hint's latency target.
ENDGAME_POSITIONS = 10000
#: The longest line searched (a line is one Python frame pair per move: this bounds the
#: recursion well inside the interpreter's limit).
MAX_DEPTH = 250


def _complete(up: list[int], down: list[int]) -> bool:
    """Every foundation complete: the game is won (all 104 cards home, see
    docs/rules.md, "Four Corners")."""
    return all(rank == KING for rank in up) and all(rank == ACE for rank in down)


def _code(card) -> int:
    return ROW_SUITS.index(card.suit) * 16 + card.rank


def _packets_key(packets) -> bytes:
    """The canonical order of a table: non-empty packets as bytes of card codes, sorted,
    joined by ``|`` (no card code is that byte, so the key names one table)."""
    return b"|".join(sorted(bytes(p) for p in packets if p))


class _Search:
    __slots__ = ("packets", "up", "down", "budget", "nodes", "seen", "line", "home",
                 "best_home", "best_line", "won", "cut", "partial")

    def __init__(self, state: State, budget: int):
        piles = state.piles
        self.packets = [[_code(c) for c in piles[p]] for p in PACKETS]
        # up[s]: the top rank of the ace foundation of suit s (0 when empty);
        # down[s]: the top rank of the king foundation (14 when empty).
        self.up = [len(piles[f]) for f in ACES]
        self.down = [KING + 1 - len(piles[f]) for f in KINGS]
        self.budget = budget
        self.nodes = 0
        self.seen: set[bytes] = set()
        self.line: list[tuple[int, int]] = []
        self.home = sum(len(piles[f]) for f in (*ACES, *KINGS))
        self.best_home = -1
        self.best_line: list[tuple[int, int]] = []
        self.won = False
        self.cut = False        # the budget ran out: the search stops
        self.partial = False    # some line was cut at MAX_DEPTH

    def key(self) -> bytes:
        return _packets_key(self.packets) + bytes(self.up) + bytes(self.down)

    # --- one position -------------------------------------------------------------
    def force_safe(self) -> list[int]:
        """Play every safe move home; return the packets played from, in order."""
        packets, up, down, line = self.packets, self.up, self.down, self.line
        played: list[int] = []
        changed = True
        while changed:
            changed = False
            for i, pile in enumerate(packets):
                while pile:
                    card = pile[-1]
                    suit, rank = card >> 4, card & 15
                    if rank == up[suit] + 1 and down[suit] <= rank:
                        up[suit] = rank
                        line.append((i, ACES[suit]))
                    elif rank == down[suit] - 1 and up[suit] >= rank:
                        down[suit] = rank
                        line.append((i, KINGS[suit]))
                    else:
                        break
                    pile.pop()
                    played.append(i)
                    changed = True
        self.home += len(played)
        return played

    def unforce(self, played: list[int]) -> None:
        packets, up, down, line = self.packets, self.up, self.down, self.line
        for i in reversed(played):
            _source, target = line.pop()
            if target in ACES:
                suit = target - ACES[0]
                packets[i].append(suit * 16 + up[suit])
                up[suit] -= 1
            else:
                suit = target - KINGS[0]
                packets[i].append(suit * 16 + down[suit])
                down[suit] += 1
        self.home -= len(played)

    def visit(self) -> bool:
        """Search from the current position (safe moves first); True once won."""
        played = self.force_safe()
        if self.explore():
            return True
        self.unforce(played)
        return False

    def explore(self) -> bool:
        """Search the current position once its safe moves are played: its moves home
        first, then its marriages; True once won."""
        key = self.key()
        if key in self.seen:
            return False
        self.seen.add(key)
        self.nodes += 1
        if self.home > self.best_home:
            self.best_home, self.best_line = self.home, list(self.line)
        if _complete(self.up, self.down):
            self.won = True
            return True
        if self.nodes >= self.budget:
            self.cut = True
            return False
        if len(self.line) >= MAX_DEPTH:
            self.partial = True
            return False
        tops: dict[int, list[int]] = {}
        for i, pile in enumerate(self.packets):
            if pile:
                tops.setdefault(pile[-1], []).append(i)
        if self.moves_home():
            return True
        return not self.cut and self.marry(tops, key)

    def moves_home(self) -> bool:
        """Search each move home from the current position; True once won."""
        packets, up, down = self.packets, self.up, self.down
        for i, pile in enumerate(packets):
            if not pile:
                continue
            card = pile[-1]
            suit, rank = card >> 4, card & 15
            for target in ((ACES[suit],) if rank == up[suit] + 1 else ()) \
                    + ((KINGS[suit],) if rank == down[suit] - 1 else ()):
                pile.pop()
                if target in ACES:
                    up[suit] = rank
                else:
                    down[suit] = rank
                self.home += 1
                self.line.append((i, target))
                if self.visit():
                    return True
                self.line.pop()
                self.home -= 1
                if target in ACES:
                    up[suit] = rank - 1
                else:
                    down[suit] = rank + 1
                pile.append(card)
                if self.cut:
                    return False
        return False

    def marry(self, tops: dict[int, list[int]], key) -> bool:
        """Search each marriage from the current position (whose :meth:`key` is ``key``,
        its packets by top card ``tops``), best first; True once won."""
        packets = self.packets
        for _order, i, j, lateral in self.marriages(tops):
            card = packets[i].pop()
            packets[j].append(card)
            if lateral and self.key() <= key:
                packets[j].pop()
                packets[i].append(card)
                continue
            self.line.append((i, j))
            if self.visit():
                return True
            self.line.pop()
            packets[j].pop()
            packets[i].append(card)
            if self.cut:
                return False
        return False

    def marriages(self, tops: dict[int, list[int]]) -> list[tuple[int, int, int, bool]]:
        """Every marriage ``(order, source, target, lateral)``, best first."""
        packets, up, down = self.packets, self.up, self.down
        found = []
        for i, pile in enumerate(packets):
            if not pile:
                continue
            card = pile[-1]
            lateral = len(pile) > 1 and abs(pile[-2] - card) == 1
            if len(pile) == 1:
                order = 3                       # empties a packet for good
            else:
                under = pile[-2]
                suit, rank = under >> 4, under & 15
                order = 0 if rank in (up[suit] + 1, down[suit] - 1) else 1
                order += 2 * lateral
            for other in (card - 1, card + 1):
                for j in tops.get(other, ()):
                    if j != i:
                        found.append((order, i, j, lateral))
        found.sort()
        return found


def solve(state: State, budget: int | None = None) -> Line:
    """Search a Four Corners position whose stock is empty (see the module docstring).

    At most ``budget`` positions (default :data:`SOLVER_BUDGET`) are expanded, so the
    time of one call is bounded.
    """
    if budget is None:
        budget = SOLVER_BUDGET
    if state.piles[STOCK_PILE]:
        raise ValueError("the endgame solver needs every card face up (stock empty)")
    search = _Search(state, budget)
    search.visit()
    moves = search.line if search.won else search.best_line
    return Line(tuple(moves), search.won, search.best_home,
                search.nodes, not (search.cut or search.partial))


def endgame_line(state: State) -> Line | None:
    """Once the stock is out every card is face up: the line of :func:`solve`, searched
    over at most :data:`ENDGAME_POSITIONS` positions; None while the stock lasts."""
    if state.piles[STOCK_PILE]:
        return None
    return solve(state, ENDGAME_POSITIONS)
