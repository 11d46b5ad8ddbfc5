"""Reading a state as the tests write about it: one pile by its id, the next deal."""

from __future__ import annotations

from service.engine import Card, State


def cards_on(state: State, pile_id: str) -> tuple[Card, ...]:
    """The cards of pile ``pile_id`` of ``state``, bottom first."""
    return state.piles[state.variant.index[pile_id]]


def next_deal(state: State) -> str | None:
    """Four Corners: the packet the next dealt card lands on (None once the stock is
    empty), as a game shows it."""
    return state.variant.public_fields(state.turn, state.stock_count)["next_deal"]
