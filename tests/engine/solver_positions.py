"""Small random late-game positions for the solver's soundness tests: few enough cards
left that the plain exhaustive search sees every position."""

from __future__ import annotations

import random

from service.engine import PLAYING, State, get_variant
from service.engine.cards import ALL_CARDS, Card
from service.engine.rules.four_corners import ROW_SUITS


def _pack() -> list[Card]:
    return [card for card in ALL_CARDS for _twin in range(2)]


def _take(pool: list[Card], rank: int, suit: str | None = None) -> Card:
    card = next(c for c in pool if c.rank == rank and suit in (None, c.suit))
    pool.remove(card)
    return card


def salic_law(rng: random.Random, left: int, stock: int, lanes: int = 3) -> State:
    """Salic Law with ``left`` cards of ranks 2..J off the foundations (which are all
    among the first ``lanes`` foundations, as far as they hold), ``stock`` of them (and
    maybe a queen or two) still in the stock, the rest on the eight kings."""
    variant = get_variant("salic-law")
    pool = _pack()
    tops = [11] * 8
    while sum(11 - top for top in tops) < left:
        f = rng.randrange(lanes if sum(11 - top for top in tops) < 10 * lanes else 8)
        if tops[f] > 1:
            tops[f] -= 1
    piles: list[tuple[Card, ...]] = [()] * len(variant.layout)
    for f, top in enumerate(tops):
        piles[8 + f] = tuple(_take(pool, rank) for rank in range(1, top + 1))
    queens = [_take(pool, 12) for _ in range(8)]
    kings = [[_take(pool, 13)] for _ in range(8)]
    rng.shuffle(pool)
    stock_queens = rng.randrange(3) if stock else 0
    stock_cards = pool[:stock] + queens[:stock_queens]
    rng.shuffle(stock_cards)
    for n, card in enumerate(pool[stock:]):
        kings[n if n < 8 else rng.randrange(8)].append(card)  # no king bare to begin with
    for i, queen in enumerate(queens[stock_queens:]):
        piles[i] = (queen,)
    for i, pile in enumerate(kings):
        piles[16 + i] = tuple(pile)
    piles[24] = tuple(stock_cards)
    return State(variant, tuple(piles), PLAYING, 0)


def four_corners(rng: random.Random, left: int, stock: int) -> State:
    """Four Corners with ``left`` cards off the foundations (every foundation started),
    ``stock`` of them still in the stock, the rest in random packets."""
    variant = get_variant("four-corners")
    pool = _pack()
    up, down = [13] * 4, [1] * 4
    while sum(u + 14 - d for u, d in zip(up, down, strict=True)) > 104 - left:
        s = rng.randrange(4)
        if rng.random() < 0.5 and up[s] > 1:
            up[s] -= 1
        elif down[s] < 13:
            down[s] += 1
    piles: list[tuple[Card, ...]] = [()] * len(variant.layout)
    for s, suit in enumerate(ROW_SUITS):
        piles[12 + s] = tuple(_take(pool, rank, suit) for rank in range(1, up[s] + 1))
        piles[16 + s] = tuple(_take(pool, rank, suit) for rank in range(13, down[s] - 1, -1))
    rng.shuffle(pool)
    packets: list[list[Card]] = [[] for _ in range(12)]
    for card in pool[stock:]:
        packets[rng.randrange(12)].append(card)
    for p, packet in enumerate(packets):
        piles[p] = tuple(packet)
    piles[20] = tuple(pool[:stock])
    return State(variant, tuple(piles), PLAYING, rng.randrange(12) if stock else 0)


def clock(rng: random.Random, left: int, stock: int, talon: int) -> State:
    """The Clock with ``left`` cards off the foundations: ``stock`` of them in the
    stock, ``talon`` on the talon, the rest in random packets."""
    from service.engine.rules.clock import BASES

    variant = get_variant("clock")
    pool = _pack()
    bases = [Card.parse(BASES[h]) for h in range(1, 13)]
    lengths = [(h - base.rank) % 13 + 1 for h, base in zip(range(1, 13), bases, strict=True)]
    places = list(lengths)          # how many cards each foundation holds
    while sum(lengths) - sum(places) < left:
        f = rng.randrange(12)
        if places[f] > 1:
            places[f] -= 1
    piles: list[tuple[Card, ...]] = [()] * len(variant.layout)
    for f, base in enumerate(bases):
        piles[f] = tuple(_take(pool, (base.rank - 1 + i) % 13 + 1, base.suit)
                         for i in range(places[f]))
    rng.shuffle(pool)
    packets: list[list[Card]] = [[] for _ in range(12)]
    for card in pool[stock + talon:]:
        packets[rng.randrange(12)].append(card)
    for p, packet in enumerate(packets):
        piles[12 + p] = tuple(packet)
    piles[24] = tuple(pool[:stock])
    piles[25] = tuple(pool[stock:stock + talon])
    return State(variant, tuple(piles), PLAYING, 0)
