"""The game state and the base variant (the registry of variants is :mod:`.registry`).

A :class:`State` is an immutable value: the piles of one variant, the game status and
the variant's turn counter.  Legal-move generation (:meth:`Variant.legal_moves`) and
move application (:meth:`Variant.apply`) are the only ways a new state comes about;
:meth:`Variant.undo` takes a :class:`Step` back exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import ClassVar

from .cards import ALL_CARDS, Card, RecentTables, cards_text, parse_table, piles_text
from .errors import IllegalMoveError, InvalidMoveError
from .moves import MOVE, RESIGN, Event, Move, Step
from .registry import get_variant

PLAYING, WON, LOST, RESIGNED = "playing", "won", "lost", "resigned"
STATUSES = (PLAYING, WON, LOST, RESIGNED)

STOCK, WASTE, FOUNDATION, TABLEAU, RESERVE = "stock", "waste", "foundation", "tableau", "reserve"
PILE_KINDS = (STOCK, WASTE, FOUNDATION, TABLEAU, RESERVE)

#: Version of the snapshot format written by :meth:`State.to_dict`.
SNAPSHOT_FORMAT = 1


@dataclass(frozen=True, slots=True)
class PileSpec:
    """A pile of a variant's table: its id, kind and layout hints.

    ``x`` and ``y`` place the pile's first card on the table, in card slots (one slot is
    one card wide and one card high; the table is ``Variant.table`` slots).  ``fan`` is
    the direction in which the pile's cards spread so that every card stays visible:
    ``none`` (only the top shows), ``down``, ``up``, ``left`` or ``right``.
    """

    id: str
    kind: str
    x: float
    y: float
    fan: str = "none"
    label: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label,
                "layout": {"x": self.x, "y": self.y, "fan": self.fan}}


@dataclass(frozen=True, slots=True)
class State:
    """One position of one game.  ``piles[i]`` holds the cards of ``variant.layout[i]``,
    bottom first; ``turn`` is the variant's deal pointer (0 where a variant has none)."""

    variant: Variant
    piles: tuple[tuple[Card, ...], ...]
    status: str = PLAYING
    turn: int = 0

    # Everything below delegates to the variant, so a state reads like a board.
    def legal_moves(self) -> list[Move]:
        return self.variant.legal_moves(self)

    def apply(self, move: Move) -> tuple[State, Step]:
        return self.variant.apply(self, move)

    def undo(self, step: Step) -> State:
        return self.variant.undo(self, step)

    def card_of(self, move: Move) -> Card | None:
        """The card ``move`` would move (the top of its source), or None."""
        if move.type != MOVE:
            return None
        pile = self.piles[self.variant.index[move.source]]
        return pile[-1] if pile else None

    @property
    def is_over(self) -> bool:
        return self.status != PLAYING

    @property
    def stock_count(self) -> int:
        return len(self.piles[self.variant.stock])

    def to_dict(self) -> dict:
        """The compact snapshot: every pile as a string of card codes, in layout order.

        It holds the stock order: it is for storage, never for a client.
        """
        return {"format": SNAPSHOT_FORMAT, "variant": self.variant.id, "status": self.status,
                "turn": self.turn, "piles": piles_text(self.piles)}

    def to_dict_after(self, before: dict, step: Step) -> dict:
        """:meth:`to_dict` of the position ``step`` led to, from the snapshot ``before``
        of the position it was played from: only the piles its events touched are
        printed again (a move touches two of the table's twenty-odd piles).

        When ``before`` is one of :data:`RECENT_TABLES` (so it holds every card), the
        new table joins them: a step only moves cards, so it holds every card too."""
        whole = tuple(before["piles"]) in RECENT_TABLES
        texts = list(before["piles"])
        index = self.variant.index
        piles = self.piles
        for i in {index[pile_id] for event in step.events
                  for pile_id in (event.source, event.target)}:
            texts[i] = cards_text(piles[i])
        if whole:
            RECENT_TABLES.put(tuple(texts), piles)
        return {"format": SNAPSHOT_FORMAT, "variant": self.variant.id, "status": self.status,
                "turn": self.turn, "piles": texts}

    @staticmethod
    def from_dict(data: dict) -> State:
        """Rebuild a state from :meth:`to_dict`'s output; ``InvalidMoveError`` if it is
        not a well-formed snapshot of a position with all 104 cards."""
        try:
            if data["format"] != SNAPSHOT_FORMAT:
                raise InvalidMoveError("invalid_snapshot", f"unknown format {data['format']!r}")
            variant = get_variant(data["variant"])
            texts = tuple(data["piles"])
            piles = RECENT_TABLES.get(texts)
            whole_deck = piles is not None
            if piles is None:
                piles, whole_deck = parse_table(texts)
                if whole_deck:
                    RECENT_TABLES.put(texts, piles)
            status, turn = data["status"], data["turn"]
        except (KeyError, TypeError, InvalidMoveError) as exc:
            raise InvalidMoveError("invalid_snapshot", f"not a snapshot: {exc!r}") from None
        if len(piles) != len(variant.layout) or status not in STATUSES \
                or not isinstance(turn, int) or not 0 <= turn < max(1, variant.turns):
            raise InvalidMoveError("invalid_snapshot", "snapshot does not fit its variant")
        if not whole_deck:  # every read of a stored game for a write checks it
            raise InvalidMoveError("invalid_snapshot", "snapshot does not hold all 104 cards")
        return State(variant, piles, status, turn)


#: The tables this process parsed (:meth:`State.from_dict`) or printed after a step
#: (:meth:`State.to_dict_after`) last: a game's next write finds the one its last
#: write stored.
RECENT_TABLES = RecentTables(2048)

_FULL_DECK = dict.fromkeys(ALL_CARDS, 2)


def holds_every_card(state: State) -> bool:
    """Card conservation: the 104 cards are all present, each twin exactly twice."""
    return dict.__eq__(Counter(chain.from_iterable(state.piles)), _FULL_DECK)


class _Table:
    """A mutable copy of a state's piles that records every card it moves."""

    __slots__ = ("piles", "ids", "events")

    def __init__(self, state: State):
        self.piles = list(state.piles)
        self.ids = state.variant.pile_ids
        self.events: list[Event] = []

    def move(self, source: int, target: int) -> Card:
        pile = self.piles[source]
        card = pile[-1]
        self.piles[source] = pile[:-1]
        self.piles[target] += (card,)
        self.events.append(Event(card, self.ids[source], self.ids[target]))
        return card


class Variant:
    """The base game: a table of piles, a deal, legal moves and their application.

    A variant fills in the class attributes and overrides the rule hooks ``_deal``,
    ``_check_pile_move``, ``_perform``, ``_pile_moves`` and ``_is_won``, and
    ``_actions`` and ``_check_action`` unless its actions need only a card in the
    stock.  The public hooks under "help and presentation" have a default that suits a
    variant without the feature; a variant overrides the ones its rules call for.  The
    rules know nothing of the searches: each game's searches are registered with
    :mod:`service.engine.search`, keyed by the variant.
    """

    id: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    #: What autoplay plays (the variant's safe moves home, ``is_safe_home``), for people.
    autoplay_rule: ClassVar[str]
    #: What a hint looks for in this variant, for people.
    hint_rule: ClassVar[str]
    decks: ClassVar[int] = 2
    #: Where the variant comes in the list of variants (:func:`variants`).
    order: ClassVar[int] = 100
    #: The action move types (besides card moves and resign) this variant knows.
    actions: ClassVar[tuple[str, ...]] = ()
    #: Why a hint suggests each action move, when no card move helps.
    action_reasons: ClassVar[dict[str, str]] = {}
    #: The rule codes only this variant refuses a move with, and what they mean.
    rule_codes: ClassVar[dict[str, str]] = {}
    #: Size of the turn counter (Four Corners' deal pointer); 0 when the variant has none.
    turns: ClassVar[int] = 0
    layout: tuple[PileSpec, ...]
    table: tuple[float, float]

    def __init__(self):
        self.pile_ids = tuple(spec.id for spec in self.layout)
        self.index = {pile_id: i for i, pile_id in enumerate(self.pile_ids)}
        self.kinds = tuple(spec.kind for spec in self.layout)
        self.stock = self.index["stock"]
        self.move_types = frozenset((MOVE, RESIGN, *self.actions))
        self.foundations = frozenset(i for i, kind in enumerate(self.kinds) if kind == FOUNDATION)

    def __repr__(self) -> str:
        return f"get_variant({self.id!r})"

    # --- the public surface -------------------------------------------------------
    def deal(self, seed: int) -> State:
        """The opening position of the deal numbered ``seed`` (0 .. 2**64-1)."""
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 64:
            raise InvalidMoveError("invalid_seed", "a seed is an integer 0 .. 2**64-1")
        return self._deal(seed)

    def legal_moves(self, state: State) -> list[Move]:
        """Every legal move of ``state`` (resign, always allowed in play, is not listed)."""
        if state.status != PLAYING:
            return []
        moves = [Move(MOVE, self.pile_ids[s], self.pile_ids[t])
                 for s, t in self._pile_moves(state)]
        moves.extend(Move(action) for action in self._actions(state))
        return moves

    def check(self, state: State, move: Move) -> None:
        """Raise ``IllegalMoveError`` naming the broken rule if ``move`` is illegal."""
        if state.status != PLAYING:
            raise IllegalMoveError("game_over", f"the game is {state.status}: {move} is refused")
        if move.type not in self.move_types:
            raise IllegalMoveError("not_in_variant", f"{self.name} has no {move.type!r} move")
        if move.type == RESIGN:
            return
        if move.type != MOVE:
            self._check_action(state, move.type)
            return
        source, target = self.index.get(move.source), self.index.get(move.target)
        for pile_id, i in ((move.source, source), (move.target, target)):
            if i is None:
                raise IllegalMoveError("unknown_pile", f"{self.name} has no pile {pile_id!r}")
        if source == target:
            raise IllegalMoveError("same_pile", f"{move}: a card cannot move onto its own pile")
        self._check_pile_move(state, source, target)

    def apply(self, state: State, move: Move) -> tuple[State, Step]:
        """The state after ``move`` and the step that records it; the move is checked
        first, and an illegal one raises ``IllegalMoveError`` and changes nothing."""
        self.check(state, move)
        if move.type == RESIGN:
            return State(self, state.piles, RESIGNED, state.turn), Step(move, (), state.turn)
        table = _Table(state)
        turn = self._perform(state, table, move)
        after = State(self, tuple(table.piles), PLAYING, turn)
        if self._is_won(after):
            after = State(self, after.piles, WON, turn)
        elif not self._has_move(after):
            after = State(self, after.piles, LOST, turn)
        return after, Step(move, tuple(table.events), state.turn)

    def undo(self, state: State, step: Step) -> State:
        """The state before ``step``: every event reversed, last first."""
        piles = list(state.piles)
        index = self.index
        for event in reversed(step.events):
            source, target = index[event.source], index[event.target]
            if not piles[target] or piles[target][-1] != event.card:
                raise InvalidMoveError("invalid_step", f"{event.card} is not on top of "
                                                       f"{event.target}: wrong step")
            piles[target] = piles[target][:-1]
            piles[source] += (event.card,)
        return State(self, tuple(piles), PLAYING, step.turn)

    def describe(self) -> dict:
        """The variant as ``GET /v1/variants`` shows it."""
        return {"id": self.id, "name": self.name, "decks": self.decks, "summary": self.summary,
                "autoplay_rule": self.autoplay_rule, "hint_rule": self.hint_rule,
                "moves": sorted(self.move_types),
                "table": {"width": self.table[0], "height": self.table[1]},
                "piles": [spec.to_dict() for spec in self.layout]}

    # --- rule hooks (every variant overrides them) ---------------------------------
    def _deal(self, seed: int) -> State:
        raise NotImplementedError

    def _pile_moves(self, state: State):
        """Yield ``(source, target)`` pile indexes of every legal card move."""
        raise NotImplementedError

    def _actions(self, state: State) -> tuple[str, ...]:
        """The legal action moves (deal, draw, refill) of ``state``; by default every
        action of the variant while the stock has cards."""
        return self.actions if state.piles[self.stock] else ()

    def _check_pile_move(self, state: State, source: int, target: int) -> None:
        raise NotImplementedError

    def _check_action(self, state: State, action: str) -> None:
        """Refuse the action move ``action`` if it is illegal; by default an action
        needs a card in the stock."""
        if not state.piles[self.stock]:
            fail("stock_empty", f"{action}: the stock is empty")

    def _perform(self, state: State, table: _Table, move: Move) -> int:
        """Carry out a checked move on ``table``; return the new turn counter."""
        raise NotImplementedError

    def _is_won(self, state: State) -> bool:
        raise NotImplementedError

    # --- help and presentation hooks (public; defaults for a plain variant) ----------
    def card_moves(self, state: State) -> Iterable[tuple[int, int]]:
        """Every legal card move of ``state`` as ``(source, target)`` pile indexes, in
        the order :meth:`legal_moves` lists them."""
        if state.status != PLAYING:
            return ()
        return self._pile_moves(state)

    def is_safe_home(self, state: State, source: int, target: int) -> bool:
        """Whether the legal foundation move ``source`` -> ``target`` can never hurt the
        player (autoplay plays only these).  Each variant defines it; none by default."""
        return False

    def hidden_piles(self, state: State) -> tuple[int, ...]:
        """The piles whose cards the player cannot see, only count (see
        :mod:`.visible`): the stock by default."""
        return (self.stock,)

    def play_key(self, state: State) -> tuple:
        """A key equal for two positions that play alike: the same moves up to pile ids,
        the same outcome (the hint compares lines of play with it).  By default the
        position itself; a variant whose piles become interchangeable says so."""
        return state.piles, state.turn

    def moves_reveal_stock(self, state: State) -> bool:
        """Whether a card move may deal from the stock in reply (Four Corners)."""
        return False

    def idle_move_reason(self, state: State, source: int, target: int) -> str | None:
        """Why the legal card move ``source`` -> ``target``, which brings no card home
        and lets none go home, is still worth a hint (the weakest kind); None when it
        is not.  None by default."""
        return None

    def public_fields(self, turn: int, stock_count: int) -> dict[str, object]:
        """The fields this variant adds to a game as a client sees it, from the
        position's turn counter and the number of cards in its stock (read without
        building a :class:`State`).  No field by default."""
        return {}

    def _has_move(self, state: State) -> bool:
        if self._actions(state):
            return True
        return next(iter(self._pile_moves(state)), None) is not None


def fail(code: str, message: str):
    """Raise the ``IllegalMoveError`` of rule ``code``."""
    raise IllegalMoveError(code, message)
