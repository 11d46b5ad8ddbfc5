"""The Clock's positions as its searches read them (:mod:`.clock_search`, the quick
hint's :func:`.clock.card_line`): cards as codes (suit * 16 + rank), the foundations'
sequences, what each foundation takes next, the refill, and the checks of a card that
can never go home."""

from __future__ import annotations

from ..cards import Card
from ..moves import DRAW, REFILL, Move
from ..rules.clock import BASES, FOUNDATIONS, HOURS, PACKET_SIZE, PACKETS, Clock
from .results import move_table

_SUITS = "SHDC"


def _code(card: Card) -> int:
    return _SUITS.index(card.suit) * 16 + card.rank


#: Foundation f's suit, and the ranks it holds from its base to its hour.
_F_SUIT = tuple(_SUITS.index(BASES[h][1]) for h in HOURS)
_F_RANKS = tuple(
    tuple((Card.parse(BASES[h]).rank - 1 + i) % 13 + 1
          for i in range((h - Card.parse(BASES[h]).rank) % 13 + 1)) for h in HOURS)
_MOVES = move_table(Clock)
_DRAW, _REFILL = Move(DRAW), Move(REFILL)
#: Foundation tops that match no position's (the start of a search: every talon card
#: is checked).
_NO_TOPS = bytes(12)
_DONE = bytes(f + 1 for f in FOUNDATIONS)
#: Each packet's row of the move table, and each card code's rank as a byte (a
#: foundation's new top).
_PACKET_MOVES = tuple(_MOVES[p] for p in PACKETS)
_RANK_BYTE = {s * 16 + r: bytes((r,)) for s in range(4) for r in range(1, 14)}
#: The card one rank below each card code, same suit (A below 2, K below A).
_DOWN_CODE = {s * 16 + r: s * 16 + (r - 2) % 13 + 1 for s in range(4) for r in range(1, 14)}
#: For each foundation, the place of each of its ranks in its sequence.
_F_PLACE = tuple({rank: i for i, rank in enumerate(ranks)} for ranks in _F_RANKS)


#: The two places of each card code in the foundations' sequences, ``(f, place)``: the
#: foundations use all 104 cards, so every card lies in exactly two of them, or twice in
#: one.
_COPIES = {code: tuple((f, place) for f in FOUNDATIONS if _F_SUIT[f] == code >> 4
                       for place, rank in enumerate(_F_RANKS[f]) if rank == code & 15)
           for code in _DOWN_CODE}


#: The tables of :func:`_wants` already built, by ``tops``; cleared when this large.
_WANTS_KEPT = 4096
_wants_built: dict[bytes, dict[int, tuple[int, ...]]] = {}


def _wants(tops: bytes) -> dict[int, tuple[int, ...]]:
    """Which card code each unfinished foundation takes next: the foundations (in their
    order) by the card they want.  The searches ask it of every position, so the tables
    are kept (and must not be changed by the caller)."""
    wants = _wants_built.get(tops)
    if wants is None:
        built: dict[int, list[int]] = {}
        for f in FOUNDATIONS:
            top = tops[f]
            if top != f + 1:
                built.setdefault(_F_SUIT[f] * 16 + top % 13 + 1, []).append(f)
        wants = {card: tuple(targets) for card, targets in built.items()}
        if len(_wants_built) >= _WANTS_KEPT:
            _wants_built.clear()
        _wants_built[tops] = wants
    return wants


def _refilled(packets, stock: bytes, n: int):
    """The packets after a refill, and the cards left in the stock: the short packets
    topped up to three in their order from the top of the stock (its first ``n``
    cards, top last), until none is short or the stock is out."""
    after = list(packets)
    for i, pile in enumerate(after):
        while len(pile) < PACKET_SIZE and n:
            n -= 1
            pile += stock[n:n + 1]
        after[i] = pile
    return tuple(after), n


def _home_count(card: int, tops: bytes) -> int:
    """How many copies of ``card`` lie on the foundations."""
    count = 0
    for f, place in _COPIES[card]:
        if place <= _F_PLACE[f][tops[f]]:
            count += 1
    return count


def _buries_itself(card: int, talon: bytes, tops: bytes) -> bool:
    """Whether ``card`` drawn onto ``talon`` could never leave it: every foundation that
    still wants a copy of it must first take a card whose every copy off the
    foundations lies in the talon already (under it, since only the talon's top card
    moves).  Then the game is lost: the card is never home.
    Why the search may skip such a draw: docs/solver.md#clock-a-draw-that-buries-its-own-card
    """
    suit, rank = card >> 4, card & 15
    for f in FOUNDATIONS:
        if _F_SUIT[f] != suit:
            continue
        place = _F_PLACE[f].get(rank)
        top = _F_PLACE[f][tops[f]]
        if place is None or place <= top:
            continue
        for between in _F_RANKS[f][top + 1:place]:
            code = suit * 16 + between
            away = 2 - _home_count(code, tops)
            if away and talon.count(code) >= away:
                break
        else:
            return False            # this foundation can come up to the card
    return True


def _dead_talon(talon: bytes, tops: bytes, before: bytes) -> bool:
    """Whether a card of ``talon`` can never go home, so that the position is lost,
    when the foundations have come from ``before`` to ``tops``: every foundation that
    still wants the card must first take a card whose copies off the foundations all lie
    under it (:func:`_buries_itself` of the card on the talon below it).  Only the cards
    of the suits of the cards gone home since ``before`` are checked, from the lowest
    talon copy of one of them up (every card when ``before`` is :data:`_NO_TOPS`, the
    start of a search).
    Why this is sound, and why those cards suffice: docs/solver.md#clock-a-dead-talon-card
    """
    if before == _NO_TOPS:
        lowest, suits = 1, {0, 1, 2, 3}
    else:
        lowest, suits = len(talon), set()
        for f in FOUNDATIONS:
            if tops[f] != before[f]:
                suit, place = _F_SUIT[f], _F_PLACE[f]
                for rank in _F_RANKS[f][place[before[f]] + 1:place[tops[f]] + 1]:
                    at = talon.find(suit * 16 + rank)
                    if at >= 0:
                        lowest = min(lowest, at)
                        suits.add(suit)
    for i in range(max(lowest, 1), len(talon)):
        card = talon[i]
        if card >> 4 in suits and _buries_itself(card, talon[:i], tops):
            return True
    return False


#: The source packet (0 .. 11) of each marriage, and the moves home, by move.

def _placed(tops: bytes) -> int:
    """How many cards the foundations hold above their bases."""
    return sum(_F_PLACE[f][tops[f]] for f in FOUNDATIONS)



def _takers(packets) -> dict[int, list[int]]:
    """The packets that take a card in marriage (those of three cards or more), by the
    card they take: the card one rank below their top, same suit."""
    takers: dict[int, list[int]] = {}
    for j, pile in enumerate(packets):
        if len(pile) >= PACKET_SIZE:
            down = _DOWN_CODE[pile[-1]]
            if down in takers:
                takers[down].append(j)
            else:
                takers[down] = [j]
    return takers
