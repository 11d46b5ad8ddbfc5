"""Four Corners (Четыре угла): twelve packets dealt round, ace and king foundations."""

from __future__ import annotations

from ..base import FOUNDATION, PLAYING, STOCK, TABLEAU, PileSpec, State, Variant, fail, register
from ..cards import ACE, KING, Card, shuffled_pack
from ..moves import DEAL, MOVE, Line, Move
from ..search.solver import move_table

#: Foundation rows 1..4 hold these suits (a decision of docs/rules.md, "Four Corners").
ROW_SUITS = "SHDC"
#: The twelve packets, in the order of one round of the deal.
PACKET_IDS = ("corner-tl", "left-1", "left-2", "left-3", "left-4", "corner-bl",
              "corner-tr", "right-1", "right-2", "right-3", "right-4", "corner-br")
PACKETS = range(12)
CORNERS = frozenset((0, 5, 6, 11))
ACES = range(12, 16)        # ace-1 .. ace-4
KINGS = range(16, 20)       # king-1 .. king-4
STOCK_PILE = 20
#: The foundation beside each side packet: left-i by ace-i, right-i by king-i.
BESIDE = {1: 12, 2: 13, 3: 14, 4: 15, 7: 16, 8: 17, 9: 18, 10: 19}


def _layout() -> tuple[PileSpec, ...]:
    specs = []
    for column, (x, fan) in enumerate(((0.0, "left"), (5.0, "right"))):
        names = PACKET_IDS[6 * column:6 * column + 6]
        labels = ["Top corner", "Side 1", "Side 2", "Side 3", "Side 4", "Bottom corner"]
        for row, (pile_id, label) in enumerate(zip(names, labels, strict=True)):
            specs.append(PileSpec(pile_id, TABLEAU, x, 1.1 * row, fan, label))
    specs += [PileSpec(f"ace-{r}", FOUNDATION, 2.0, 1.1 * r, "none", f"{ROW_SUITS[r - 1]} ace")
              for r in range(1, 5)]
    specs += [PileSpec(f"king-{r}", FOUNDATION, 3.0, 1.1 * r, "none",
                       f"{ROW_SUITS[r - 1]} king") for r in range(1, 5)]
    specs.append(PileSpec("stock", STOCK, 2.5, 0.0, "none", "Stock"))
    return tuple(specs)


def _wants(pile: tuple[Card, ...], f: int) -> Card | None:
    """The card foundation ``f`` takes next, or None once it is complete."""
    if f < KINGS[0]:
        suit = ROW_SUITS[f - ACES[0]]
        if not pile:
            return Card(ACE, suit)
        return Card(pile[-1].rank + 1, suit) if pile[-1].rank < KING else None
    suit = ROW_SUITS[f - KINGS[0]]
    if not pile:
        return Card(KING, suit)
    return Card(pile[-1].rank - 1, suit) if pile[-1].rank > ACE else None


@register
class FourCorners(Variant):
    id = "four-corners"
    name = "Four Corners"
    summary = ("Deal the pack round twelve packets in two columns; build an ace and a king "
               "foundation of each suit, up and down; marry up or down in suit once the "
               "stock is out.")
    autoplay_rule = (
        "Nothing while the stock lasts (a card sent home is replaced from the stock, "
        "which changes where every later card falls). Once the stock is out, a card goes "
        "to its ace foundation when the king foundation of its suit is down to its rank "
        "or below, and to its king foundation when the ace foundation is up to its rank "
        "or above: then every card that could marry onto it can go home directly instead.")
    hint_rule = (
        "The move that wins the most sampled deals: the unseen stock cards are dealt in 8 "
        "random orders (the same ones for the same position), each order is searched with "
        "every card known, and the hint is the move, a deal included, that starts a "
        "winning line in the most of them (\"wins in 7 of 8 sampled deals\"); once the "
        "stock is out every card is face up and the one deal is searched. When no sampled "
        "deal is won within the search budget, the quick hint: more cards home. While the "
        "stock lasts, from the face-up cards only: a move home, else a marriage after "
        "which a card that could not go home can. Once the stock is out, a move that "
        "autoplay would play, else the first move of a line that wins the game, else of "
        "the line that brings the most cards home (a bounded search). When no card move "
        "helps: deal, else no move.")
    order = 3
    rule_codes = {
        "not_adjacent": "Four Corners: while the stock lasts a side packet plays only to "
                        "the foundation beside it",
        "target_empty": "Four Corners: an empty packet stays empty",
    }
    actions = (DEAL,)
    action_reasons = {DEAL: "no card move helps now: deal the next card"}
    turns = len(PACKETS)
    layout = _layout()
    table = (6.0, 6.5)

    def _deal(self, seed: int) -> State:
        piles: list[tuple[Card, ...]] = [()] * len(self.layout)
        piles[STOCK_PILE] = tuple(shuffled_pack(seed))
        table = _OpeningTable(self, piles)
        for packet in PACKETS:
            self._deal_to(table, packet)
        return State(self, tuple(table.piles), PLAYING, 0)

    @staticmethod
    def _deal_to(table, packet: int) -> None:
        """Deal stock cards to ``packet`` until one lands on it: an ace or king whose
        foundation is still empty goes straight there instead (docs/rules.md, "Four
        Corners")."""
        piles = table.piles
        while piles[STOCK_PILE]:
            card = piles[STOCK_PILE][-1]
            row = ROW_SUITS.index(card.suit)
            if card.rank == ACE and not piles[ACES[row]]:
                table.move(STOCK_PILE, ACES[row])
            elif card.rank == KING and not piles[KINGS[row]]:
                table.move(STOCK_PILE, KINGS[row])
            else:
                table.move(STOCK_PILE, packet)
                return

    def _needs(self, state: State) -> dict[Card, list[int]]:
        needs: dict[Card, list[int]] = {}
        piles = state.piles
        for f in (*ACES, *KINGS):
            card = _wants(piles[f], f)
            if card is not None:
                needs.setdefault(card, []).append(f)
        return needs

    def _pile_moves(self, state: State):
        piles = state.piles
        needs = self._needs(state)
        dealing = bool(piles[STOCK_PILE])
        takers: dict[Card, list[int]] = {}
        if not dealing:
            for p in PACKETS:
                if piles[p]:
                    top = piles[p][-1]
                    for rank in (top.rank - 1, top.rank + 1):
                        if ACE <= rank <= KING:
                            takers.setdefault(Card(rank, top.suit), []).append(p)
        for p in PACKETS:
            pile = piles[p]
            if not pile:
                continue
            card = pile[-1]
            for f in needs.get(card, ()):
                if not dealing or p in CORNERS or BESIDE[p] == f:
                    yield p, f
            for q in takers.get(card, ()):
                if q != p:
                    yield p, q

    def _check_pile_move(self, state: State, source: int, target: int) -> None:
        ids, piles = self.pile_ids, state.piles
        if source not in PACKETS:
            fail("not_a_source", f"cards never leave {ids[source]}")
        if target == STOCK_PILE:
            fail("not_a_target", f"cards never go onto {ids[target]} by a move")
        if not piles[source]:
            fail("empty_pile", f"{ids[source]} is empty")
        card = piles[source][-1]
        where = f"{card} from {ids[source]} onto {ids[target]}"
        dealing = bool(piles[STOCK_PILE])
        if target in PACKETS:
            if dealing:
                fail("deal_not_finished", f"{where}: no marriages while the stock lasts")
            if not piles[target]:
                fail("target_empty", f"{where}: an empty packet stays empty")
            top = piles[target][-1]
            if card.suit != top.suit:
                fail("wrong_suit", f"{where}: a marriage is in suit, onto {top}")
            if abs(card.rank - top.rank) != 1:
                fail("wrong_rank", f"{where}: a marriage is one rank above or below {top}")
            return
        if dealing and source not in CORNERS and BESIDE[source] != target:
            fail("not_adjacent", f"{where}: while the stock lasts {ids[source]} plays only to "
                                 f"{ids[BESIDE[source]]}")
        wanted = _wants(piles[target], target)
        if wanted is None:
            fail("foundation_complete", f"{where}: the foundation is complete")
        if card.suit != wanted.suit:
            fail("wrong_suit", f"{where}: it builds in {wanted.suit}")
        if card.rank != wanted.rank:
            fail("wrong_rank", f"{where}: it needs {wanted}")

    def _perform(self, state: State, table, move) -> int:
        if move.type == MOVE:
            source = self.index[move.source]
            table.move(source, self.index[move.target])
            if table.piles[STOCK_PILE] and source in PACKETS and move.target not in PACKET_IDS:
                self._deal_to(table, source)  # footnote 4: the gap is filled at once
            return state.turn
        self._deal_to(table, state.turn)
        return (state.turn + 1) % len(PACKETS)

    def _is_won(self, state: State) -> bool:
        piles = state.piles
        return all(len(piles[f]) == 13 for f in (*ACES, *KINGS))


    # --- help, search and presentation hooks ----------------------------------------
    def public_fields(self, turn: int, stock_count: int) -> dict[str, object]:
        """``next_deal``: the packet the next dealt card lands on; None once the stock is
        empty."""
        return {"next_deal": PACKET_IDS[turn] if stock_count else None}

    def moves_reveal_stock(self, state: State) -> bool:
        return bool(state.piles[STOCK_PILE])

    def play_key(self, state: State) -> tuple:
        """Once the stock is out, the packets play alike in any order (any top may go to
        any foundation that wants it or onto any packet): they are sorted."""
        piles = state.piles
        if piles[STOCK_PILE]:
            return piles, state.turn
        return tuple(sorted(piles[p] for p in PACKETS)), piles[ACES[0]:STOCK_PILE]

    def is_safe_home(self, state: State, source: int, target: int) -> bool:
        """Card X going home is safe when every card that could ever marry onto X can go
        home directly instead, and nothing is dealt in reply:

        * the stock is empty (while it lasts, the replacement card a foundation move
          brings changes which packet every later card falls on);
        * to the ace foundation (top X-1): the king foundation of the suit is down to X
          or below, so it holds or takes next the other X-1, holds the other X+1, and
          the first X+1 goes onto X;
        * to the king foundation (top X+1): mirrored, the ace foundation is up to X or
          above.
        """
        piles = state.piles
        if piles[STOCK_PILE]:
            return False
        card = piles[source][-1]
        row = ROW_SUITS.index(card.suit)
        if target in ACES:
            other = piles[KINGS[row]]
            return bool(other) and other[-1].rank <= card.rank
        other = piles[ACES[row]]
        return bool(other) and other[-1].rank >= card.rank

    def endgame_line(self, state: State) -> Line | None:
        """Once the stock is out every card is face up: the solver's line
        (:func:`.endgame.solve`), searched over at most :data:`ENDGAME_POSITIONS`
        positions."""
        if state.piles[STOCK_PILE]:
            return None
        from ..search.endgame import solve  # it builds on this module's constants

        return solve(state, ENDGAME_POSITIONS)

    def solver_search(self, state: State, budget):
        """The solver's search (:class:`_FourCornersSearch`): ``(result, moves)``."""
        return _FourCornersSearch(state.piles[STOCK_PILE], budget).run(state)


class _OpeningTable:
    """The deal's own table: moves cards like the game's but records no events."""

    __slots__ = ("piles",)

    def __init__(self, variant, piles):
        self.piles = piles

    def move(self, source: int, target: int) -> None:
        card = self.piles[source][-1]
        self.piles[source] = self.piles[source][:-1]
        self.piles[target] += (card,)


# --- the solver's search (see .solver) ------------------------------------------------
class _FourCornersSearch:
    """The search of ``FourCorners.solver_search``: depth first over compact positions,
    with a table of the positions already searched.

    A position is the twelve packets (each a ``bytes`` of card codes, suit row * 16 +
    rank, bottom first), the top rank of each ace foundation (0 when empty) and of each
    king foundation (14 when empty), how many cards the stock still holds (its order is
    the deal's) and the turn counter.

    * **Equal positions are searched once.**  While the stock lasts every packet has its
      own place in the deal and its own foundation, so the key is the position as it
      is; once the stock is out the packets are interchangeable (any top may go to any
      foundation or onto any other packet), so the key has them sorted, and of two
      packets with the same cards only one is tried as a source or a target.
    * **Safe moves home are forced once the stock is out**, those ``is_safe_home``
      names: card X home to its ace foundation when the king foundation of its suit is
      down to X or below, or to its king foundation when the ace foundation is up to X
      or above.  Then every other card of the suit that could marry onto X (an X - 1 or
      an X + 1) has a foundation that takes it in its turn without X on the table: one
      X - 1 and one X + 1 are home already, the other X - 1 is the next card the king
      foundation wants (or home too), and the other X + 1 the next card the ace
      foundation wants after X; so a winning line that marries such a card onto X wins
      as well sending it home instead, and X itself has nowhere to go but home.
    * **A packet's last card is never married** onto another packet: the position that
      gives is the one before with that card lying on another packet's top instead of
      on its own, so every line from it is open from the position before (the other
      packet's top is only covered).
    * **Trapped positions are lost** (:func:`_trapped`): a relaxed game, a superset of
      the real one, shows that some card can never leave its packet.  It is tried at
      every position: with every case of :func:`_trapped` weighed where the stock
      runs out and while it holds at most ``_CASES_STOCK`` cards, elsewhere with the
      rules that hold in every case only (one relaxed game, cheaper).  Each relaxed
      game of a case counts as a position against the budget.
    """

    __slots__ = ("stock", "budget", "line", "seen")

    def __init__(self, stock: tuple[Card, ...], budget):
        self.stock = bytes(_code(card) for card in stock)
        self.budget = budget
        self.line: list[Move] = []
        self.seen: set[bytes] = set()

    def run(self, state: State):
        from ..search.solver import LOST, UNDECIDED, WON

        piles = state.piles
        packets = tuple(bytes(_code(card) for card in piles[p]) for p in PACKETS)
        up = bytes(len(piles[f]) for f in ACES)
        down = bytes(KING + 1 - len(piles[f]) for f in KINGS)
        if self.visit(packets, up, down, len(self.stock), state.turn):
            return WON, self.line
        return (UNDECIDED, None) if self.budget.out else (LOST, None)

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
#: How many positions the quick hint's search of the endgame (``endgame_line``) may
#: expand.  Most endgames are settled in far fewer; the others end at the line to the
#: most cards home seen, and a larger budget finds lines to more cards home, within
#: the hint's latency target.
ENDGAME_POSITIONS = 10000
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
    under rules every winning line of the real game obeys:

    * **A second ace goes home last.**  Once a suit's ace foundation holds its 2, the
      other ace of the suit (on the table) never marries: it could only marry onto the
      last 2 on the table, which then stays under it, and it could leave that 2 only
      onto another 2 (none left) or home, onto the king foundation when that is down
      to 2, which needs the 2 under it.  Mirrored for a second king once the king
      foundation holds its queen.
    * **Which foundation takes its 2 first.**  While the ace foundation still waits for
      its 2, either (i) it takes a 2 before the king foundation does, and then the other
      ace never moves until it goes home (were it ever on a 2 when the ace foundation
      takes the other, it would be stuck there as above; so an ace lying on a 2 now
      rules this case out), or (ii) the king foundation is down to 2 before the ace
      foundation goes past its ace.  Mirrored for the queens and the other king; both
      foundations of a suit cannot wait for each other.  A position is trapped when,
      for some suit, the relaxed game is stuck in every case left for that suit.
      Cases ruled out for one suit narrow the rules of the others' cases, until
      nothing more is ruled out.  Without ``cases``, only the rules that hold in every
      case are played (one relaxed game instead of up to a dozen).  ``spend`` (the
      search's ``Budget.spend``) is called before each relaxed game of a case, so that
      they count against the search's budget like positions; once it answers False
      the position counts as not trapped.
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
    *free* for good, both as a marriage partner and as a card a foundation may take
    (even once it is home).  Card Y (rank r of suit s) on top of what is left of its
    packet may leave when

    * a partner (r - 1 or r + 1 of s) is free or on top of what is left of another
      packet (marriage, allowed at any time, stock or not), unless Y is an ace and
      ``marry_ace[s]`` is false, or a king and ``marry_king[s]`` is false;
    * or r > the ace foundation's top and every rank between is free (home to the ace
      foundation: any packet, any time); with ``ace_waits[s]``, also every rank from 2
      down to the king foundation's top is free, twice below r (the king foundation
      first goes down to 2, and the ace foundation's own copies are others);
    * or mirrored, home to the king foundation (``king_waits[s]``: the ace foundation
      first goes up to the queen).

    The stock's cards start free: they are dealt on top of what is there now, so they
    never lie under a card of it.  Leaving only adds free cards, so which cards leave
    does not depend on the order tried: repeat until nothing more leaves.  Every line of
    the real game that keeps the rules given maps to a line of the relaxed one (a card
    married onto another, or home, is free there; a real top of a packet is a top of
    what is left of it, since cards married onto it are no longer counted), so when a
    card never leaves in the relaxed game, it never leaves in the real one either and
    never goes home.
    """
    free = [0] * 64
    for c in stock:
        free[c] += 1
    # reach_up[s]: how far the ace foundation could go up on free cards; reach_down[s]
    # how far the king foundation could go down.
    reach_up, reach_down = list(up), list(down)
    for suit in range(4):
        base = suit << 4
        while reach_up[suit] < KING and free[base + reach_up[suit] + 1]:
            reach_up[suit] += 1
        while reach_down[suit] > ACE and free[base + reach_down[suit] - 1]:
            reach_down[suit] -= 1
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
                if rank == reach_up[suit] + 1:
                    base = suit << 4
                    while reach_up[suit] < KING and free[base + reach_up[suit] + 1]:
                        reach_up[suit] += 1
                if rank == reach_down[suit] - 1:
                    base = suit << 4
                    while reach_down[suit] > ACE and free[base + reach_down[suit] - 1]:
                        reach_down[suit] -= 1
                h -= 1
                if h:
                    ontop[pile[h - 1]] += 1
                changed = True
            left -= height[i] - h
            height[i] = h
    return left > 0
