"""The commands: what each write does to a game, as pure functions.

A command takes the stored game (and, for undo, its journal) and returns a
:class:`Change`: the new version and record, the journal tokens to append, the events to
answer, and the statistics counter to increment.  It reads and writes nothing, keeps no
metrics and publishes nothing: :mod:`service.game.pipeline` does that for every write
alike.  A refusal is raised: a rule's ``IllegalMoveError`` (422) or a
:class:`~service.game.errors.GameError`.

``resign`` is a move (``{"type": "resign"}``): :func:`move` plays it like any other.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field

from service.engine import IllegalMoveError, Move, State, get_variant
from service.engine.hints import autoplay as autoplay_steps
from service.engine.journal import UNDO
from service.engine.journal import encode as journal_token
from service.engine.moves import RESIGN
from service.game import ranked as scoring
from service.game.errors import GameError, ranked_game
from service.game.record import GameRecord, StoredGame, deal_commitment, epoch_ms, token_hash
from service.game.replay import replay

#: Kinds of change (the metrics tell them apart).
CREATE, MOVE, UNDO_MOVE, AUTOPLAY, DELETE = "create", "move", "undo", "autoplay", "delete"
CLAIM, ABANDON = "claim", "abandon"


@dataclass(frozen=True, slots=True)
class Change:
    """What a write stores, and what its answer says.

    ``version`` None deletes the game.  ``journal`` holds one token per version added;
    ``events`` the answer's events; ``stat`` the name of the statistics counter to
    increment (``created``, or the status of a game this change ended); ``moves`` how
    many moves it played; ``token`` the new player token (create only)."""

    kind: str
    variant: str
    version: int | None
    record: GameRecord | None
    journal: str = ""
    events: list[dict] = field(default_factory=list)
    stat: str | None = None
    moves: int = 0
    token: str | None = None


def game_over(status: str, what: str) -> IllegalMoveError:
    """The refusal of a write to a finished game: the rule ``game_over`` (422), for a
    move, an undo and an autoplay alike."""
    return IllegalMoveError("game_over", f"the game is {status}: {what}")


def _ended(before: State, after: State) -> str | None:
    return after.status if after.is_over and not before.is_over else None


def create(variant_id: str, seed: int | None, undo: str, at: str, *,
           winnable_seed: int | None = None, owner: str | None = None,
           secret_seed: int | None = None, salt: str | None = None,
           ranked: dict | None = None) -> Change:
    """A new game at version 0: the deal numbered ``seed`` (None: a secret random one,
    or ``winnable_seed``, a secret seed the solver proved winnable, or ``secret_seed``,
    a secret seed the caller chose: a daily deal), a random salt (or ``salt``) and a
    random player token, of which only the hash is stored; ``owner``: the player who
    owns it (None: an anonymous game); ``ranked``: the ``{"day", "index",
    "deadline_ms"}`` of a ranked game of a daily deal (undo off)."""
    variant = get_variant(variant_id)
    chosen = seed is not None
    if winnable_seed is not None:
        seed = winnable_seed
    elif secret_seed is not None:
        seed = secret_seed
    elif seed is None:
        seed = secrets.randbits(64)
    salt = salt or secrets.token_hex(16)
    token = secrets.token_urlsafe(32)
    record = GameRecord(
        variant=variant.id, seed=seed, chosen=chosen, salt=salt,
        commitment=deal_commitment(variant.id, seed, salt), token=token_hash(token),
        undo=undo, undos=0, moves=0, created=at, updated=at,
        state=variant.deal(seed).to_dict(), winnable=winnable_seed is not None, owner=owner,
        ranked=ranked)
    return Change(CREATE, variant.id, 0, record, stat="created", token=token)


def move(game: StoredGame, played: Move, at: str, *, card: str | None = None) -> Change:
    """``played`` applied (IllegalMoveError: nothing changes).  ``card``, when given, is
    a precondition: the card the move would take; another one is 409 ``card_mismatch``."""
    record = game.record
    state = record.engine_state()
    if card is not None:
        _check_card(state, played, card)
    after, step = state.apply(played)
    return Change(
        MOVE, record.variant, game.version + 1,
        record.replace(state=after.to_dict_after(record.state, step),
                       moves=record.moves + 1, updated=at, started=record.started or at),
        journal=journal_token(state.variant, played),
        events=[event.to_dict() for event in step.events],
        stat=_ended(state, after), moves=1)


def _check_card(state: State, played: Move, card: str) -> None:
    if played.source not in state.variant.index:
        return  # the rules refuse the move (unknown_pile)
    moving = state.card_of(played)
    if moving is None or str(moving) != card:
        what = f"the card on {played.source} is {moving}" if moving else \
            f"{played.source} is empty"
        raise GameError(409, "card_mismatch", f"{card} would not move: {what}")


def undo(game: StoredGame, journal: str, at: str) -> Change:
    """The last move not yet undone taken back, as the game's undo policy allows."""
    record = game.record
    if record.ranked is not None:
        raise ranked_game("undo is off")
    if record.is_over:
        raise game_over(record.status, "a finished game is final")
    if record.undo == "off":
        raise GameError(409, "undo_disabled", "this game was created with undo off")
    replayed = replay(game, journal)[0]
    if not replayed.history:
        raise GameError(409, "nothing_to_undo", "no move is left to take back")
    step = replayed.history[-1][1]
    if record.undo == "safe" and step.reveals:
        raise GameError(409, "undo_blocked",
                        f"{step.move} turned a stock card face up: with undo 'safe' "
                        "it cannot be taken back, nor anything before it")
    undone = replayed.advance(UNDO)
    return Change(
        UNDO_MOVE, record.variant, game.version + 1,
        record.replace(state=replayed.state.to_dict(), moves=record.moves - 1,
                       undos=record.undos + 1, updated=at),
        journal=UNDO, events=undone.entry()["events"])


def autoplay(game: StoredGame, at: str) -> Change:
    """The safe moves (``Variant.is_safe_home``) played one after another until none is
    left, one version and one journal token each (undo takes them back one at a time).
    When no move is safe nothing changes (same version, no events)."""
    record = game.record
    state = record.engine_state()
    if state.is_over:
        raise game_over(state.status, "autoplay is refused")
    after, steps = autoplay_steps(state)
    if not steps:
        return Change(AUTOPLAY, record.variant, game.version, record)
    return Change(
        AUTOPLAY, record.variant, game.version + len(steps),
        record.replace(state=after.to_dict(), moves=record.moves + len(steps), updated=at,
                       started=record.started or at),
        journal="".join(journal_token(state.variant, step.move) for step in steps),
        events=[event.to_dict() for step in steps for event in step.events],
        stat=_ended(state, after), moves=len(steps))


def delete(game: StoredGame) -> Change:
    if game.record.ranked is not None:
        raise ranked_game("it stays until its board is trimmed")
    return Change(DELETE, game.record.variant, None, None)


def claim(game: StoredGame, player_id: str) -> Change:
    """The anonymous game made the player's: the same version (the Game a client sees
    does not change), its record naming its owner.  A game owned already is 409
    ``already_owned``."""
    if game.record.ranked is not None:
        raise ranked_game("it belongs to the player who made the attempt")
    if game.record.owner is not None:
        raise GameError(409, "already_owned", "this game belongs to a player already")
    return Change(CLAIM, game.record.variant, game.version, game.record.replace(owner=player_id))


def abandon(game: StoredGame, at: str) -> Change:
    """A ranked game still in play when its day closes, ended by the server: resigned,
    its result ``abandoned`` (the close of the day, docs/daily.md)."""
    record = game.record
    if record.ranked is None or record.is_over:
        return Change(ABANDON, record.variant, game.version, record)
    change = dataclasses.replace(move(game, Move(RESIGN), at), kind=ABANDON)
    return settle(change, scoring.ABANDONED)


def settle(change: Change, outcome: str | None = None) -> Change:
    """``change`` with the ``ranked.result`` of the ranked game it ends (None: not one):
    computed from the record the server validated (docs/daily.md)."""
    record = change.record
    if record is None or record.ranked is None or not record.is_over \
            or "result" in record.ranked:
        return change
    variant = get_variant(record.variant)
    home = scoring.cards_home(tuple(spec.kind for spec in variant.layout),
                              record.state["piles"])
    took = max(0, epoch_ms(record.updated) - epoch_ms(record.created))
    result = scoring.result(outcome or record.status, record.moves, took, home)
    return dataclasses.replace(change, record=record.replace(
        ranked={**record.ranked, "result": result}))
