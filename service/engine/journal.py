"""The journal of a game: every accepted change as a short token, replayed from the deal.

A game is fully determined by its variant, its seed and the changes made to it, in
order (like a saved game of OpenSpiel: the game and its list of actions).  The journal
writes each change as one token of one or two characters:

- a card move: two pile characters, the source then the target (``"ab"`` is pile 0
  onto pile 1 of the variant's layout; ``PILE_CHARS`` has room for 52 piles);
- ``deal`` ``"0"``, ``draw`` ``"1"``, ``refill`` ``"2"``, ``resign`` ``"3"``;
- an undo ``"4"``: the last move not yet undone is taken back.

The journal of a game at version *n* holds exactly *n* tokens, one per version, and
:class:`Replay` rebuilds from the deal every position, every move with its events, the
history (moves not undone) and the feed (every change, undos included).  A hundred moves
are a few hundred bytes, against a few kilobytes for the steps with their events.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .base import State, Variant
from .errors import IllegalMoveError, InvalidMoveError
from .moves import DEAL, DRAW, MOVE, REFILL, RESIGN, Event, Move, Step

__all__ = ["UNDO", "FeedEntry", "Replay", "encode", "tokens"]

PILE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PILE_INDEX = {char: i for i, char in enumerate(PILE_CHARS)}
_ACTION_TOKENS = {DEAL: "0", DRAW: "1", REFILL: "2", RESIGN: "3"}
_TOKEN_ACTIONS = {token: action for action, token in _ACTION_TOKENS.items()}
#: The token of an undo.
UNDO = "4"
#: The ``kind`` of a change that is a move (resign included) and of an undo.
MOVED, UNDONE = "move", "undo"


def encode(variant: Variant, move: Move) -> str:
    """The token of ``move`` (a move of ``variant``, already accepted)."""
    if move.type == MOVE:
        index = variant.index
        return PILE_CHARS[index[move.source]] + PILE_CHARS[index[move.target]]
    return _ACTION_TOKENS[move.type]


def tokens(text: str) -> Iterator[str]:
    """The tokens of a journal, in order; ``InvalidMoveError`` on a malformed one."""
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if char in _PILE_INDEX:
            if i + 1 >= end or text[i + 1] not in _PILE_INDEX:
                raise InvalidMoveError("invalid_journal", f"a card move is cut short at {i}")
            yield text[i:i + 2]
            i += 2
        elif char in _TOKEN_ACTIONS or char == UNDO:
            yield char
            i += 1
        else:
            raise InvalidMoveError("invalid_journal", f"{char!r} at {i} is no journal token")


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One accepted change, as the feed shows it: the version it made, ``kind``
    (``move`` or ``undo``), the move (None for an undo) and the cards that moved."""

    version: int
    kind: str
    move: Move | None
    events: tuple[Event, ...]
    status: str  # the game's status right after the change

    def entry(self) -> dict:
        """``{"version", "move", "events"}``, the feed entry of openapi.yaml (an undo's move is
        ``{"type": "undo"}``)."""
        return {"version": self.version,
                "move": self.move.to_dict() if self.move is not None else {"type": UNDONE},
                "events": [event.to_dict() for event in self.events]}


class Replay:
    """A game replayed from its deal, one token at a time.

    ``state`` is the position after the last token, ``version`` the number of tokens
    applied, ``history`` the moves not undone as ``(version, step)``.  A token that is
    malformed, an illegal move or an undo with nothing to undo raises
    ``InvalidMoveError`` (``invalid_journal``): a journal is only ever written from
    accepted changes.
    """

    __slots__ = ("history", "state", "version")

    def __init__(self, variant: Variant, seed: int):
        self.state: State = variant.deal(seed)
        self.version = 0
        self.history: list[tuple[int, Step]] = []

    def advance(self, token: str) -> FeedEntry:
        """Apply one token; the change it makes."""
        state = self.state
        variant = state.variant
        version = self.version + 1
        if token == UNDO:
            if not self.history:
                raise InvalidMoveError("invalid_journal", f"undo at version {version} "
                                                          "with nothing to undo")
            _made, step = self.history.pop()
            self.state = variant.undo(state, step)
            events = tuple(Event(event.card, event.target, event.source)
                           for event in reversed(step.events))
            change = FeedEntry(version, UNDONE, None, events, self.state.status)
        else:
            if len(token) == 2:
                ids = variant.pile_ids
                source, target = _PILE_INDEX[token[0]], _PILE_INDEX[token[1]]
                if source >= len(ids) or target >= len(ids):
                    raise InvalidMoveError("invalid_journal",
                                           f"{token!r} names a pile {variant.name} lacks")
                move = Move(MOVE, ids[source], ids[target])
            else:
                move = Move(_TOKEN_ACTIONS[token])
            try:
                self.state, step = variant.apply(state, move)
            except IllegalMoveError as error:
                raise InvalidMoveError("invalid_journal",
                                       f"version {version}: {error.message}") from None
            self.history.append((version, step))
            change = FeedEntry(version, MOVED, move, step.events, self.state.status)
        self.version = version
        return change

    def run(self, text: str) -> Iterator[FeedEntry]:
        """Apply every token of ``text``, yielding each change."""
        for token in tokens(text):
            yield self.advance(token)
