"""Salic Law (Салическій законъ): eight kings dealt upon, aces built up to jacks."""

from __future__ import annotations

from ..base import (
    FOUNDATION,
    PLAYING,
    RESERVE,
    STOCK,
    TABLEAU,
    PileSpec,
    State,
    Variant,
    fail,
)
from ..cards import ACE, JACK, KING, QUEEN, Card, shuffled_pack
from ..moves import DEAL, MOVE
from ..registry import register

QUEENS = range(8)        # queen-1 .. queen-8
FOUNDATIONS = range(8, 16)  # foundation-1 .. foundation-8
KINGS = range(16, 24)       # king-1 .. king-8
STOCK_PILE = 24


def _first_empty(piles, indexes) -> int:
    return next(i for i in indexes if not piles[i])


def _layout() -> tuple[PileSpec, ...]:
    specs = [PileSpec(f"queen-{i}", RESERVE, i - 1.0, 0.0, "none", f"Queen {i}")
             for i in range(1, 9)]
    specs += [PileSpec(f"foundation-{i}", FOUNDATION, i - 1.0, 1.25, "none", f"Foundation {i}")
              for i in range(1, 9)]
    specs += [PileSpec(f"king-{i}", TABLEAU, i - 1.0, 2.5, "down", f"King {i}")
              for i in range(1, 9)]
    specs.append(PileSpec("stock", STOCK, 8.5, 0.0, "none", "Stock"))
    return tuple(specs)


@register
class SalicLaw(Variant):
    id = "salic-law"
    name = "Salic Law"
    summary = ("Deal the pack onto a growing row of eight kings; build eight aces up to "
               "jacks regardless of suit from the tops of the king piles; queens are set "
               "aside.")
    autoplay_rule = (
        "A card goes home when every foundation is started and none is more than one "
        "rank below it: the foundations that can take it are then alike (any suit, all "
        "up to the jack). With a foundation further behind, which of two equal cards goes "
        "home first can decide the game, so autoplay leaves that choice to the player.")
    hint_rule = (
        "The move that wins the most sampled deals: the unseen stock cards are dealt in 8 "
        "random orders (the same ones for the same position), each order is searched with "
        "every card known, and the hint is the move, a deal included, that starts a "
        "winning line in the most of them (\"wins in 7 of 8 sampled deals\"); once the "
        "stock is dealt out every card is in view and the one deal is searched. When no "
        "sampled deal is won within the search budget, the quick hint, judged from the "
        "face-up cards only. In order: a move home; the first move of the shortest line "
        "of card moves (onto bare kings) that brings the most cards home (a bounded "
        "breadth-first search). When no card move helps: deal, else no move.")
    order = 2
    rule_codes = {
        "king_cannot_move": "Salic Law: a king never leaves its pile",
        "not_a_free_king": "Salic Law: the target king pile holds more than its king",
    }
    actions = (DEAL,)
    action_reasons = {DEAL: "no card move helps now: deal the next card"}
    layout = _layout()
    table = (9.5, 8.0)

    def _deal(self, seed: int) -> State:
        pack = shuffled_pack(seed)
        top_king = max(i for i, card in enumerate(pack) if card.rank == KING)
        king = pack.pop(top_king)
        piles: list[tuple[Card, ...]] = [()] * len(self.layout)
        piles[KINGS[0]] = (king,)
        piles[STOCK_PILE] = tuple(pack)
        return State(self, tuple(piles), PLAYING, 0)

    def _pile_moves(self, state: State):
        piles = state.piles
        takers: dict[int, list[int]] = {}
        for f in FOUNDATIONS:
            pile = piles[f]
            if pile and pile[-1].rank < JACK:
                takers.setdefault(pile[-1].rank + 1, []).append(f)
        dealt_out = not piles[STOCK_PILE]
        bare = [k for k in KINGS if len(piles[k]) == 1] if dealt_out else ()
        for k in KINGS:
            pile = piles[k]
            if len(pile) > 1:
                for f in takers.get(pile[-1].rank, ()):
                    yield k, f
                for b in bare:
                    yield k, b

    def _check_pile_move(self, state: State, source: int, target: int) -> None:
        ids, piles = self.pile_ids, state.piles
        if source not in KINGS:
            fail("not_a_source", f"cards never leave {ids[source]}")
        if target not in KINGS and target not in FOUNDATIONS:
            fail("not_a_target", f"cards never go onto {ids[target]} by a move")
        pile = piles[source]
        if not pile:
            fail("empty_pile", f"{ids[source]} is empty")
        if len(pile) == 1:
            fail("king_cannot_move", f"{pile[0]} on {ids[source]} is its king: it stays")
        card = pile[-1]
        where = f"{card} from {ids[source]} onto {ids[target]}"
        if target in FOUNDATIONS:
            foundation = piles[target]
            if not foundation:
                fail("wrong_rank", f"{where}: the foundation is empty; only an ace, dealt "
                                   "from the stock, starts one")
            if foundation[-1].rank == JACK:
                fail("foundation_complete", f"{where}: the foundation is complete at its jack")
            if card.rank != foundation[-1].rank + 1:
                fail("wrong_rank", f"{where}: it needs a card of rank "
                                   f"{str(Card(foundation[-1].rank + 1, 'S'))[0]}, any suit")
            return
        if piles[STOCK_PILE]:
            fail("deal_not_finished", f"{where}: a card goes onto a free king only once the "
                                      "stock is dealt out")
        if len(piles[target]) != 1:
            fail("not_a_free_king", f"{where}: {ids[target]} holds more than its king")

    def _perform(self, state: State, table, move) -> int:
        if move.type == MOVE:
            table.move(self.index[move.source], self.index[move.target])
            return 0
        piles = table.piles
        card = piles[STOCK_PILE][-1]
        if card.rank == KING:
            target = _first_empty(piles, KINGS)
        elif card.rank == ACE:
            target = _first_empty(piles, FOUNDATIONS)
        elif card.rank == QUEEN:
            target = _first_empty(piles, QUEENS)
        else:  # onto the newest king pile
            target = max(k for k in KINGS if piles[k])
        table.move(STOCK_PILE, target)
        return 0

    def _is_won(self, state: State) -> bool:
        piles = state.piles
        return all(piles[f] and piles[f][-1].rank == JACK for f in FOUNDATIONS)

    # --- help and presentation hooks ------------------------------------------------
    def play_key(self, state: State) -> tuple:
        """Once the stock is dealt out, the king piles play alike whatever their king (a
        king never moves and takes a card only when bare) and in any order, and so do
        the foundations (any suit, all up to a jack): the key is the cards on the kings,
        sorted, and the foundation heights, sorted."""
        piles = state.piles
        if piles[STOCK_PILE]:
            return piles, state.turn
        return (tuple(sorted(piles[k][1:] for k in KINGS)),
                tuple(sorted(len(piles[f]) for f in FOUNDATIONS)))

    def is_safe_home(self, state: State, source: int, target: int) -> bool:
        """A card of rank r goes home safely when no foundation is below r - 1 (every
        foundation is started and shows r - 1 or more; a finished one counts as a jack).
        Then the foundations that could take it are alike (any suit, all up to a jack),
        and every winning line stays a winning line with this move played first (the
        solver forces these moves: docs/solver.md#salic-law-safe-moves-home).
        Below that a move home can lose: with one foundation at 6 and one at 2, of two
        7s the one over an 8 must go first, the other strands the 8 (docs/rules.md,
        "Safe moves")."""
        card = state.piles[source][-1]
        piles = state.piles
        return all(piles[f] and piles[f][-1].rank >= card.rank - 1 for f in FOUNDATIONS)
