"""Four Corners (Четыре угла): twelve packets dealt round, ace and king foundations."""

from __future__ import annotations

from ..base import FOUNDATION, PLAYING, STOCK, TABLEAU, PileSpec, State, Variant, fail
from ..cards import ACE, KING, Card, shuffled_pack
from ..moves import DEAL, MOVE
from ..registry import register

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


    # --- help and presentation hooks ------------------------------------------------
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

class _OpeningTable:
    """The deal's own table: moves cards like the game's but records no events."""

    __slots__ = ("piles",)

    def __init__(self, variant, piles):
        self.piles = piles

    def move(self, source: int, target: int) -> None:
        card = self.piles[source][-1]
        self.piles[source] = self.piles[source][:-1]
        self.piles[target] += (card,)
