"""The Clock (Часы): twelve foundations round a dial, a circle of twelve packets."""

from __future__ import annotations

import math

from ..base import (
    FOUNDATION,
    PLAYING,
    STOCK,
    TABLEAU,
    WASTE,
    PileSpec,
    State,
    Variant,
    fail,
)
from ..cards import ALL_CARDS, Card, shuffled_pack, take_nearest_top
from ..moves import DRAW, MOVE, REFILL
from ..registry import register

HOURS = range(1, 13)
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")
#: The card each hour's foundation starts with (docs/rules.md, "The Clock": the "Big Ben"
#: arrangement).
BASES = {1: "6C", 2: "7H", 3: "8S", 4: "9D", 5: "TC", 6: "JH", 7: "QS", 8: "KD",
         9: "2C", 10: "3H", 11: "4S", 12: "5D"}
PACKET_SIZE = 3

FOUNDATIONS = range(12)       # foundation-1 .. foundation-12
PACKETS = range(12, 24)          # packet-1 .. packet-12
STOCK_PILE, TALON = 24, 25


def _next_rank(rank: int) -> int:
    return rank % 13 + 1


def _prev_rank(rank: int) -> int:
    return (rank - 2) % 13 + 1


# The card a foundation wants on a card (one rank up, same suit, K then A) and the card a
# packet takes on it (one rank down, A then K), looked up rather than built: legal moves
# and the lost-game check of every move ask for them twelve times each.
_UP = {card: Card(_next_rank(card.rank), card.suit) for card in ALL_CARDS}
_DOWN = {card: Card(_prev_rank(card.rank), card.suit) for card in ALL_CARDS}


def _dial(radius: float, hour: int, centre: float = 5.0) -> tuple[float, float]:
    angle = math.radians(hour * 30)
    return (round(centre + radius * math.sin(angle), 2),
            round(centre - radius * math.cos(angle), 2))


def _layout() -> tuple[PileSpec, ...]:
    specs = [PileSpec(f"foundation-{h}", FOUNDATION, *_dial(2.2, h), "none", ROMAN[h - 1])
             for h in HOURS]
    specs += [PileSpec(f"packet-{h}", TABLEAU, *_dial(4.4, h), "down", ROMAN[h - 1])
              for h in HOURS]
    specs += [PileSpec("stock", STOCK, 11.0, 0.0, "none", "Stock"),
              PileSpec("talon", WASTE, 11.0, 1.5, "none", "Talon")]
    return tuple(specs)


@register
class Clock(Variant):
    id = "clock"
    name = "The Clock"
    summary = ("Build twelve foundations round a dial up in suit, each until it shows its "
               "hour, from a circle of twelve packets, marrying down in suit and drawing "
               "the stock to a talon.")
    autoplay_rule = (
        "A card goes home when exactly one foundation takes it and no card can still need "
        "it as a marriage target: it comes from the talon (talon cards are never "
        "targets), or the only card that can marry onto it, the card one rank below in "
        "its suit, has both copies home or its other copy is wanted by a foundation now.")
    hint_rule = (
        "The move that wins the most sampled deals: the unseen stock cards are dealt in 8 "
        "random orders (the same ones for the same position), each order is searched with "
        "every card known, and the hint is the move, a refill or a draw included, that "
        "starts a winning line in the most of them (\"wins in 7 of 8 sampled deals\"). "
        "When no sampled deal is won within the search budget, the quick hint, judged "
        "from the face-up cards only. In order: a move home that autoplay would play; the "
        "first move of the line of card moves that brings the most cards home (a bounded "
        "breadth-first search; of the positions with as many cards home, the one with "
        "the most packets left short for the refill and the fewest cards buried that "
        "their foundations soon want); a marriage that leaves a packet short, so that "
        "the stock refills it. When no card move helps: refill or draw, whichever is "
        "legal, else no move.")
    order = 1
    rule_codes = {
        "packet_too_short": "Clock: a marriage needs a receiving packet of at least three "
                            "cards",
        "talon_cannot_marry": "Clock: a talon card goes only to a foundation",
        "gaps_must_be_refilled": "Clock: short packets must be refilled before drawing",
        "no_gaps": "Clock: no packet is short, there is nothing to refill",
    }
    actions = (DRAW, REFILL)
    action_reasons = {
        DRAW: "no card move helps now: draw the next stock card onto the talon",
        REFILL: "no card move helps now: refill the short packets from the stock",
    }
    layout = _layout()
    table = (12.0, 11.4)

    def _deal(self, seed: int) -> State:
        pack = shuffled_pack(seed)
        piles: list[tuple[Card, ...]] = [
            (take_nearest_top(pack, Card.parse(BASES[h])),) for h in HOURS]
        for _packet in HOURS:
            piles.append(tuple(pack.pop() for _ in range(PACKET_SIZE)))
        piles.append(tuple(pack))
        piles.append(())
        return State(self, tuple(piles), PLAYING, 0)

    # --- what each pile wants --------------------------------------------------------
    @staticmethod
    def _foundation_needs(state: State) -> dict[Card, list[int]]:
        needs: dict[Card, list[int]] = {}
        piles = state.piles
        for f in FOUNDATIONS:
            top = piles[f][-1]
            if top.rank != f + 1:
                needs.setdefault(_UP[top], []).append(f)
        return needs

    @staticmethod
    def _marriage_takers(state: State) -> dict[Card, list[int]]:
        takers: dict[Card, list[int]] = {}
        piles = state.piles
        for p in PACKETS:
            pile = piles[p]
            if len(pile) >= PACKET_SIZE:
                takers.setdefault(_DOWN[pile[-1]], []).append(p)
        return takers

    def _pile_moves(self, state: State):
        piles = state.piles
        needs = self._foundation_needs(state)
        takers = self._marriage_takers(state)
        for p in PACKETS:
            pile = piles[p]
            if pile:
                card = pile[-1]
                for f in needs.get(card, ()):
                    yield p, f
                for q in takers.get(card, ()):
                    if q != p:
                        yield p, q
        talon = piles[TALON]
        if talon:
            for f in needs.get(talon[-1], ()):
                yield TALON, f

    def _actions(self, state: State) -> tuple[str, ...]:
        piles = state.piles
        if not piles[STOCK_PILE]:
            return ()
        short = any(len(piles[p]) < PACKET_SIZE for p in PACKETS)
        return (REFILL,) if short else (DRAW,)

    def _check_action(self, state: State, action: str) -> None:
        piles = state.piles
        if not piles[STOCK_PILE]:
            fail("stock_empty", f"{action}: the stock is empty")
        short = [self.pile_ids[p] for p in PACKETS if len(piles[p]) < PACKET_SIZE]
        if action == DRAW and short:
            fail("gaps_must_be_refilled",
                 f"draw: refill the short packet(s) {', '.join(short)} first")
        if action == REFILL and not short:
            fail("no_gaps", "refill: every packet holds three cards or more")

    def _check_pile_move(self, state: State, source: int, target: int) -> None:
        ids, piles = self.pile_ids, state.piles
        if source not in PACKETS and source != TALON:
            fail("not_a_source", f"cards never leave {ids[source]}")
        if target not in PACKETS and target not in FOUNDATIONS:
            fail("not_a_target", f"cards never go onto {ids[target]} by a move")
        if not piles[source]:
            fail("empty_pile", f"{ids[source]} is empty")
        card = piles[source][-1]
        where = f"{card} from {ids[source]} onto {ids[target]}"
        if target in FOUNDATIONS:
            top = piles[target][-1]
            if top.rank == target + 1:
                fail("foundation_complete", f"{where}: the foundation shows its hour "
                                            f"{ROMAN[target]} and is complete")
            if card.suit != top.suit:
                fail("wrong_suit", f"{where}: it builds in {top.suit}")
            if card.rank != _next_rank(top.rank):
                fail("wrong_rank", f"{where}: it needs {Card(_next_rank(top.rank), top.suit)}")
            return
        if source == TALON:
            fail("talon_cannot_marry", f"{where}: a talon card goes only to a foundation")
        receiving = piles[target]
        if len(receiving) < PACKET_SIZE:
            fail("packet_too_short", f"{where}: a marriage needs a packet of three cards, "
                                     f"{ids[target]} has {len(receiving)}")
        top = receiving[-1]
        if card.suit != top.suit:
            fail("wrong_suit", f"{where}: a marriage is in suit, {top} takes "
                               f"{Card(_prev_rank(top.rank), top.suit)}")
        if card.rank != _prev_rank(top.rank):
            fail("wrong_rank", f"{where}: {top} takes only {Card(_prev_rank(top.rank), top.suit)}")

    def _perform(self, state: State, table, move) -> int:
        if move.type == MOVE:
            table.move(self.index[move.source], self.index[move.target])
        elif move.type == DRAW:
            table.move(STOCK_PILE, TALON)
        else:  # REFILL: top up I, II, ... XII to three cards each, while the stock lasts
            piles = table.piles
            for p in PACKETS:
                while len(piles[p]) < PACKET_SIZE and piles[STOCK_PILE]:
                    table.move(STOCK_PILE, p)
        return 0

    def _is_won(self, state: State) -> bool:
        piles = state.piles
        return all(piles[f][-1].rank == f + 1 for f in FOUNDATIONS)

    # --- help and presentation hooks ------------------------------------------------
    def play_key(self, state: State) -> tuple:
        """Once the stock is out, the packets play alike in any order (nothing refills
        them, a marriage or a move home reads only the cards): they are sorted."""
        piles = state.piles
        if piles[STOCK_PILE]:
            return piles, state.turn
        return piles[FOUNDATIONS[0]:PACKETS[0]], tuple(sorted(piles[p] for p in PACKETS)), \
            piles[TALON]

    def is_safe_home(self, state: State, source: int, target: int) -> bool:
        """Card X going home to foundation F is safe when

        * F is the only foundation that takes X now (no choice between two dials), and
        * X is no longer wanted as a marriage target: only the card one rank below X in
          its suit (call it W) can marry onto X, and F's top is one copy of W; the other
          copy of W must be on a foundation already or be taken by another foundation
          now, so it never needs to park on X.  A talon card is never a marriage target.
        """
        piles = state.piles
        card = piles[source][-1]
        needs = self._foundation_needs(state)
        if needs.get(card) != [target]:
            return False
        if source == TALON:
            return True
        below = Card(_prev_rank(card.rank), card.suit)
        home = sum(piles[f].count(below) for f in FOUNDATIONS)
        return home >= 2 or below in needs

    def idle_move_reason(self, state: State, source: int, target: int) -> str | None:
        """A marriage that leaves its packet short while the stock lasts: the next
        refill brings a new card into play."""
        if len(state.piles[source]) > PACKET_SIZE or not state.piles[STOCK_PILE]:
            return None
        ids = self.pile_ids
        return (f"moving {state.piles[source][-1]} onto {ids[target]} leaves {ids[source]} "
                "short, so the stock refills it")
