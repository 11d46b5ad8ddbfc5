"""What the player can see of a position, and deals of the unseen cards consistent with it.

A player sees every pile but the hidden ones (``Variant.hidden_piles``: the stock in
every game here), of which only the number of cards shows, plus the game's status and
turn counter: exactly what ``GET /v1/games/<id>`` shows.  The unseen cards are then known
as a multiset (the 104 cards minus the visible ones) but not their order.

:class:`VisibleView` keeps only that.  Two positions with the same visible view are the
same to a player, whatever their stock order; anything computed from a view (a hint)
cannot depend on the stock order.  :meth:`VisibleView.sample` deals the unseen cards
into the hidden piles in a uniformly random order: every such order is a deal the
player cannot rule out, so a search on the sample is a perfect-information search of
one possible world.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass

from .base import State, Variant
from .cards import ALL_CARDS, Card, cards_text


@dataclass(frozen=True, slots=True)
class VisibleView:
    """A position as the player sees it: ``piles`` with every hidden pile replaced by
    ``None``, ``counts`` the number of cards of each hidden pile (layout order),
    ``unseen`` the cards nobody sees, sorted (twins appear twice)."""

    variant: Variant
    piles: tuple[tuple[Card, ...] | None, ...]
    counts: tuple[int, ...]
    unseen: tuple[Card, ...]
    status: str
    turn: int

    def key(self) -> bytes:
        """A byte string naming the view: equal for equal views, never for two others
        (pile texts are joined by ``|`` and a hidden pile prints as ``#`` and its count,
        neither of which a card code contains)."""
        parts = [self.variant.id, self.status, str(self.turn)]
        hidden = iter(self.counts)
        for pile in self.piles:
            parts.append(f"#{next(hidden)}" if pile is None else cards_text(pile))
        return "|".join(parts).encode()

    def seed(self) -> int:
        """A 64-bit seed for the sampler, from the view only (BLAKE2b of :meth:`key`):
        the same position always draws the same samples."""
        return int.from_bytes(hashlib.blake2b(self.key(), digest_size=8).digest(), "big")

    def sample(self, rng: random.Random) -> State:
        """A full position with this view: the unseen cards shuffled by ``rng`` and
        dealt into the hidden piles (each gets its count, in layout order)."""
        cards = list(self.unseen)
        rng.shuffle(cards)
        piles = []
        start = 0
        hidden = iter(self.counts)
        for pile in self.piles:
            if pile is None:
                count = next(hidden)
                piles.append(tuple(cards[start:start + count]))
                start += count
            else:
                piles.append(pile)
        return State(self.variant, tuple(piles), self.status, self.turn)


def visible_view(state: State) -> VisibleView:
    """The :class:`VisibleView` of ``state``."""
    variant = state.variant
    hidden = frozenset(variant.hidden_piles(state))
    seen: Counter[Card] = Counter()
    piles: list[tuple[Card, ...] | None] = []
    counts = []
    for i, pile in enumerate(state.piles):
        if i in hidden:
            piles.append(None)
            counts.append(len(pile))
        else:
            piles.append(pile)
            seen.update(pile)
    unseen = []
    for card in ALL_CARDS:
        unseen.extend([card] * (variant.decks - seen[card]))
    return VisibleView(variant, tuple(piles), tuple(counts), tuple(unseen), state.status,
                       state.turn)
