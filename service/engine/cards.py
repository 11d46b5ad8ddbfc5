"""Cards, the two-pack deck and the one documented shuffle.

A card is a small immutable value whose text form is rank + suit (``AS``, ``TD``,
``QH``).  Twin cards of the two packs are equal: nothing in the games tells them apart.
"""

from __future__ import annotations

import functools
import random
import re
import threading
from array import array
from itertools import repeat
from typing import NamedTuple

from .errors import InvalidMoveError

RANKS = "A23456789TJQK"
SUITS = "SHDC"
#: Suit order of the canonical pack used by the shuffle (docs/rules.md, "Deals").
CANONICAL_SUITS = "CSHD"

ACE, JACK, QUEEN, KING = 1, 11, 12, 13


class Card(NamedTuple):
    """A playing card: ``rank`` 1 (ace) .. 13 (king) and ``suit`` one of ``S H D C``."""

    rank: int
    suit: str

    def __str__(self) -> str:
        return _TEXT[self]

    def __repr__(self) -> str:
        return f"Card.parse({_TEXT[self]!r})"

    @classmethod
    def parse(cls, text: str) -> Card:
        """The card named by ``text`` (``"TD"``); ``InvalidMoveError`` if it names none."""
        try:
            return _BY_TEXT[text]
        except (KeyError, TypeError):
            raise InvalidMoveError(
                "invalid_card", f"{text!r} is not a card (rank of {RANKS}, suit of {SUITS})"
            ) from None


_TEXT: dict[Card, str] = {}
_BY_TEXT: dict[str, Card] = {}
for _suit in SUITS:
    for _rank in range(1, 14):
        _card = Card(_rank, _suit)
        _TEXT[_card] = RANKS[_rank - 1] + _suit
        _BY_TEXT[RANKS[_rank - 1] + _suit] = _card

#: Every distinct card, spades first.
ALL_CARDS: tuple[Card, ...] = tuple(_BY_TEXT.values())


def canonical_pack() -> list[Card]:
    """The 104 cards before shuffling: index 0 is the bottom of the stock.

    Pack 1 then pack 2; within a pack suits C, S, H, D; within a suit ranks A..K.
    """
    return [Card(rank, suit) for _pack in range(2) for suit in CANONICAL_SUITS
            for rank in range(1, 14)]


def shuffled_pack(seed: int) -> list[Card]:
    """The canonical pack shuffled by ``seed``, exactly as docs/rules.md, "Deals" fixes it.

    Only ``Random.random()`` is used: Python guarantees its sequence for a seed across
    versions.  Index 103 is the top of the stock.
    """
    rng = random.Random(seed)
    cards = canonical_pack()
    for n in range(len(cards) - 1, 0, -1):
        j = int(rng.random() * (n + 1))
        cards[n], cards[j] = cards[j], cards[n]
    return cards


def take_nearest_top(cards: list[Card], card: Card) -> Card:
    """Remove from ``cards`` the copy of ``card`` nearest the top (highest index)."""
    for i in range(len(cards) - 1, -1, -1):
        if cards[i] == card:
            return cards.pop(i)
    raise ValueError(f"{card} is not in the pack")


# Every write of a game parses its 104 cards and prints them, every read splits them:
# these run in C (map over a dict lookup, a regex split) rather than a Python loop per card.
_CODE = _TEXT.__getitem__
_CARD = _BY_TEXT.__getitem__
_PAIRS = re.compile("..", re.DOTALL)
_ODD = (2).__rmod__  # n -> n % 2, called from C by map


def _pairs(text: str) -> array:
    """The two ASCII bytes of each code of ``text``, each pair as one 16-bit number (no
    string made per card); UnicodeEncodeError for a text that is not ASCII."""
    return array("H", text.encode("ascii"))


#: A code's two bytes as one number (:func:`_pairs`) to its card.
_CARD_OF_PAIR = {_pairs(text)[0]: card for text, card in _BY_TEXT.items()}.__getitem__
#: The 104 cards' codes as :func:`_pairs` numbers, sorted: every code twice.
_WHOLE_DECK = sorted(_pairs("".join(text * 2 for text in _BY_TEXT)))


class RecentTables:
    """The piles of the tables a process printed or parsed last, by their texts (a
    tuple of :func:`cards_text` strings), at most ``size``, the oldest dropped first.

    A game's next write reads back the snapshot its last write stored.  A client keeps
    its connection, and a connection stays with one worker process: unless a load
    balancer spreads its requests, that process printed the snapshot and finds its piles
    here instead of parsing 104 cards again.  The key is the texts themselves: a hit is
    the very same table.  Only tables known to hold every card are kept."""

    def __init__(self, size: int):
        self.size = size
        self._tables: dict[tuple[str, ...], tuple[tuple[Card, ...], ...]] = {}
        self._lock = threading.Lock()

    def get(self, texts: tuple[str, ...]) -> tuple[tuple[Card, ...], ...] | None:
        return self._tables.get(texts)

    def put(self, texts: tuple[str, ...], piles: tuple[tuple[Card, ...], ...]) -> None:
        with self._lock:
            tables = self._tables
            tables[texts] = piles
            while len(tables) > self.size:
                del tables[next(iter(tables))]

    def __contains__(self, texts: tuple[str, ...]) -> bool:
        return texts in self._tables

    def __len__(self) -> int:
        return len(self._tables)


def cards_text(cards) -> str:
    """Cards as one string of two-character codes, bottom first (``"KS9D4C"``)."""
    return "".join(map(_CODE, cards))


def piles_text(piles) -> list[str]:
    """:func:`cards_text` of each pile, in one pass of C ``map`` calls."""
    return list(map("".join, map(map, repeat(_CODE), piles)))


@functools.lru_cache(maxsize=16384)
def pile_codes(text: str) -> tuple[str, ...]:
    """The card codes of a :func:`cards_text` string, as the API shows a pile (no check
    that they name cards: the text was printed by :func:`cards_text`), remembered: a
    move changes two of a table's twenty-odd piles, so the answer to it, and every
    read, shows piles already split."""
    codes = _PAIRS.findall(text)
    return tuple(map(_SAME_CODE, codes, codes))


#: A code to the one string object of its card's text (the tuples remembered by
#: :func:`pile_codes` share them); any other code to itself.
_SAME_CODE = {text: text for text in _BY_TEXT}.get


def parse_cards(text: str) -> tuple[Card, ...]:
    """The inverse of :func:`cards_text`."""
    if len(text) % 2:
        raise InvalidMoveError("invalid_card", f"{text!r} is not a list of card codes")
    try:
        return tuple(map(_CARD, _PAIRS.findall(text)))
    except (KeyError, TypeError):
        # Name the first code that is no card, as Card.parse words it.
        return tuple(Card.parse(text[i:i + 2]) for i in range(0, len(text), 2))


def parse_table(texts) -> tuple[tuple[tuple[Card, ...], ...], bool]:
    """:func:`parse_cards` of each text, all the cards of a table in one pass; and card
    conservation, on the codes as read: whether the 104 cards are all there, each twin
    exactly twice (the check of :func:`~service.engine.base.holds_every_card`)."""
    if not any(map(_ODD, map(len, texts))):
        try:
            codes = _pairs("".join(texts))
            cards = list(map(_CARD_OF_PAIR, codes))
        except (KeyError, TypeError, UnicodeEncodeError):
            pass
        else:
            piles, start = [], 0
            for text in texts:
                end = start + len(text) // 2
                piles.append(tuple(cards[start:end]))
                start = end
            return tuple(piles), sorted(codes) == _WHOLE_DECK
    # An odd text or a code that is no card: parse_cards names it.
    return parse_table([cards_text(parse_cards(text)) for text in texts])
