"""Reading one pile of a state by its id, as the tests write positions."""

from __future__ import annotations

from service.engine import Card, State


def cards_on(state: State, pile_id: str) -> tuple[Card, ...]:
    """The cards of pile ``pile_id`` of ``state``, bottom first."""
    return state.piles[state.variant.index[pile_id]]
