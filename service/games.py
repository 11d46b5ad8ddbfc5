"""The application between HTTP and the rules engine: games, moves, undo, idempotency.

Nothing here knows Flask.  The views validate a request, call one method of
:class:`Games` and send what it returns; a write returns a :class:`Reply` (status, ETag,
Location and the JSON body as bytes), because the bytes of the first answer to a write
with an ``Idempotency-Key`` are stored with the write and sent again, unchanged, to every
retry.  Refusals are :class:`GameError` (status, stable code, detail) or the engine's
``IllegalMoveError``; storage failures are the store's ``StorageUnavailable``.

Secrets: the engine snapshot (with the stock order), the seed (when the server chose it)
and the salt stay in the stored record; :func:`game_json` shows the seed only when the
client chose it or the game is over, the salt only when it is over, the stock's count
but never its cards.  The player token is stored only as its SHA-256.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from service import metrics
from service.engine import (
    PLAYING,
    STOCK,
    IllegalMoveError,
    InvalidMoveError,
    Move,
    State,
    Step,
    get_variant,
    variants,
)
from service.engine.cards import split_codes
from service.engine.help import autoplay as autoplay_steps
from service.engine.help import hint as engine_hint
from service.engine.journal import UNDO, Change, Replay
from service.engine.journal import encode as journal_token
from service.store import CONFLICT, MISSING, OK, REPLAY, GameStore, Stored, new_game_id

UNDO_POLICIES = ("full", "safe", "off")
DEFAULT_UNDO = "safe"


class GameError(Exception):
    """A refusal of the service (not of the rules): HTTP status, stable code, detail."""

    def __init__(self, status: int, code: str, detail: str):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to a write, as sent and as stored for idempotent retries."""

    status: int
    body: bytes
    version: int | None = None  # the ETag, if the answer carries a game
    location: str | None = None

    def to_json(self) -> dict:
        return {"s": self.status, "b": self.body.decode(), "v": self.version,
                "l": self.location}

    @classmethod
    def from_json(cls, data: dict) -> Reply:
        return cls(data["s"], data["b"].encode(), data["v"], data["l"])


def now() -> str:
    """The current UTC time as ``2026-11-29T16:04:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def deal_commitment(variant_id: str, seed: int, salt: str) -> str:
    """API.md: the SHA-256 of ``"<variant>:<seed>:<salt>"``, lowercase hex."""
    return hashlib.sha256(f"{variant_id}:{seed}:{salt}".encode()).hexdigest()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def request_hash(kind: str, body: dict) -> str:
    """What makes two writes "the same body": their kind and their parsed JSON, so that
    key order and white space do not matter (an empty undo body equals ``{}``)."""
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(kind.encode() + b"\n" + canonical).hexdigest()


def _seal(secret: str, data: bytes) -> str:
    """Encrypt ``data`` with a key stream derived from ``secret`` (SHAKE-256 over a random
    nonce): the stored first answer of a create holds the player token, which must not
    lie in Redis in clear; only a client that knows the Idempotency-Key can get it back."""
    nonce = secrets.token_bytes(16)
    pad = hashlib.shake_256(b"patience-create\n" + nonce + secret.encode()).digest(len(data))
    sealed = (int.from_bytes(data, "big") ^ int.from_bytes(pad, "big")).to_bytes(len(data), "big")
    return base64.b64encode(nonce + sealed).decode()


def _unseal(secret: str, text: str) -> bytes:
    raw = base64.b64decode(text)
    nonce, sealed = raw[:16], raw[16:]
    pad = hashlib.shake_256(b"patience-create\n" + nonce + secret.encode()).digest(len(sealed))
    return (int.from_bytes(sealed, "big") ^ int.from_bytes(pad, "big")).to_bytes(
        len(sealed), "big")


def _state(game_id: str, record: dict) -> State:
    try:
        return State.from_dict(record["state"])
    except (InvalidMoveError, KeyError, TypeError) as error:
        raise RuntimeError(f"the stored game {game_id} is corrupt: {error!r}") from None


def replay(game_id: str, stored: Stored, journal: str, *, after: int | None = None
           ) -> tuple[Replay, list[Change]]:
    """The game replayed from its deal through its journal (every version), and the
    changes that made the versions after ``after`` (none if ``after`` is None)."""
    record = stored.record
    changes = []
    try:
        replayed = Replay(get_variant(record["variant"]), record["seed"])
        for change in replayed.run(journal):
            if after is not None and change.version > after:
                changes.append(change)
    except (InvalidMoveError, KeyError, TypeError) as error:
        raise RuntimeError(f"the journal of game {game_id} is corrupt: {error!r}") from None
    if replayed.version != stored.version:
        raise RuntimeError(f"the journal of game {game_id} holds {replayed.version} "
                           f"versions, the game is at {stored.version}")
    if replayed.state.to_dict() != record["state"]:
        raise RuntimeError(f"the journal of game {game_id} does not replay to its position")
    return replayed, changes


def game_json(game_id: str, version: int, record: dict) -> dict:
    """The Game of API.md and the service spec, without anything secret, from the stored
    record: its snapshot's piles are printed card codes, shown as they are (no engine
    state is built to read a game)."""
    snapshot = record["state"]
    variant = get_variant(snapshot["variant"])
    status = snapshot["status"]
    over = status != PLAYING
    texts = snapshot["piles"]
    game = {
        "id": game_id,
        "variant": variant.id,
        "version": version,
        "status": status,
        "seed": record["seed"] if record["chosen"] or over else None,
        "salt": record["salt"] if over else None,
        "deal_commitment": record["commitment"],
        "undo": record["undo"],
        "undos": record["undos"],
        "moves_made": record["moves"],
        "piles": [
            {"id": spec.id, "kind": spec.kind, "count": len(text) // 2,
             "cards": [] if spec.kind == STOCK else split_codes(text)}
            for spec, text in zip(variant.layout, texts, strict=True)
        ],
    }
    game.update(variant.public_fields(snapshot["turn"], len(texts[variant.stock]) // 2))
    game["created_at"] = record["created"]
    game["updated_at"] = record["updated"]
    return game


def public_game(game_id: str, stored: Stored) -> dict:
    """The Game of a stored game (see :func:`game_json`)."""
    return game_json(game_id, stored.version, stored.record)


def _events(step: Step) -> list[dict]:
    return [event.to_dict() for event in step.events]


def _listed(state: State, move: Move) -> dict:
    """``move`` as ``GET .../moves`` lists it: a card move names its ``card``."""
    listed = move.to_dict()
    card = state.card_of(move)
    if card is not None:
        listed["card"] = str(card)
    return listed


#: Why a hint suggests an action move (when no card move helps).
_ACTION_REASONS = {
    "deal": "no card move helps now: deal the next card",
    "draw": "no card move helps now: draw the next stock card onto the talon",
    "refill": "no card move helps now: refill the short packets from the stock",
}


def _not_found(game_id: str) -> GameError:
    return GameError(404, "game_not_found", f"there is no game {game_id!r}")


@dataclass(frozen=True, slots=True)
class _Change:
    """What a write wants to store, and what to answer once it is stored."""

    version: int | None  # None: delete the game
    record: dict | None
    reply: Reply
    journal: str = ""  # the journal tokens to append, one per version added
    stat: str | None = None  # the statistics counter to increment (a game that ends)
    done: Callable[[], None] = lambda: None  # metrics, once the write is stored


@dataclass(frozen=True, slots=True)
class Write:
    """The parts of a write request that every write shares."""

    token: str
    if_match: frozenset[int] | None  # None: no If-Match (or ``*``)
    idempotency_key: str | None
    request_hash: str


class Games:
    """Create, read and change games stored in a :class:`GameStore`."""

    def __init__(self, store: GameStore, *, retries: int = 16):
        self.store = store
        self.retries = max(1, retries)

    # --- create ---------------------------------------------------------------------
    def create(self, variant_id: str, seed: int | None, undo: str,
               idempotency_key: str | None, body_hash: str) -> Reply:
        if idempotency_key is not None:
            first = self.store.created_response(idempotency_key)
            if first is not None:
                return self._created_again(first, idempotency_key, body_hash)
        variant = get_variant(variant_id)
        chosen = seed is not None
        if seed is None:
            seed = secrets.randbits(64)
        salt = secrets.token_hex(16)
        state = variant.deal(seed)
        token = secrets.token_urlsafe(32)
        stamp = now()
        record = {
            "variant": variant.id, "seed": seed, "chosen": chosen, "salt": salt,
            "commitment": deal_commitment(variant.id, seed, salt), "token": token_hash(token),
            "undo": undo, "undos": 0, "moves": 0, "created": stamp, "updated": stamp,
            "state": state.to_dict(),
        }
        # A second id is needed only if 128 random bits collide, or if the key's first
        # id is taken by a game whose idempotency record expired.
        for attempt in range(3):
            game_id = new_game_id(idempotency_key, attempt)
            body = {"game": game_json(game_id, 0, record), "player_token": token}
            reply = Reply(201, orjson.dumps(body), 0, f"/v1/games/{game_id}")
            first = None
            if idempotency_key is not None:  # stored by the same script as the game
                sealed = _seal(idempotency_key, orjson.dumps(reply.to_json()))
                first = orjson.dumps({"r": body_hash, "x": sealed})
            result = self.store.commit(game_id, expected=None, version=0, record=record,
                                       stat=f"{variant.id}:created", create=True,
                                       idempotency_key=idempotency_key, first_response=first)
            if result.outcome == REPLAY:  # a racing request with the same key came first
                return self._created_again(result.first_response, idempotency_key, body_hash)
            if result.outcome == OK:
                break
        else:  # pragma: no cover - needs three collisions of 128-bit random ids
            raise RuntimeError("could not find a free game id")
        metrics.GAMES_CREATED.labels(variant.id).inc()
        return reply

    @staticmethod
    def _created_again(stored: bytes, idempotency_key: str, body_hash: str) -> Reply:
        data = orjson.loads(stored)
        if not hmac.compare_digest(data["r"], body_hash):
            raise GameError(422, "idempotency_key_reused",
                            "this Idempotency-Key was used with another request body")
        return Reply.from_json(orjson.loads(_unseal(idempotency_key, data["x"])))

    # --- reads ----------------------------------------------------------------------
    def _load(self, game_id: str) -> tuple[Stored, State]:
        stored = self.store.load(game_id)
        if stored is None:
            raise _not_found(game_id)
        return stored, _state(game_id, stored.record)

    def get(self, game_id: str) -> tuple[int, dict]:
        stored = self.store.load(game_id)
        if stored is None:
            raise _not_found(game_id)
        return stored.version, public_game(game_id, stored)

    def legal_moves(self, game_id: str) -> tuple[int, dict]:
        stored, state = self._load(game_id)
        moves = [_listed(state, move) for move in state.legal_moves()]
        return stored.version, {"version": stored.version, "moves": moves}

    def history(self, game_id: str) -> tuple[int, dict]:
        found = self.store.load_with_journal(game_id)
        if found is None:
            raise _not_found(game_id)
        stored, journal = found
        moves = [{"version": version, "move": step.move.to_dict(), "events": _events(step)}
                 for version, step in replay(game_id, stored, journal)[0].history]
        return stored.version, {"moves": moves}

    def hint(self, game_id: str) -> tuple[int, dict]:
        """``{"move": ListedMove | None, "reason": str}``, from what the player sees only:
        the engine's hint (a card move), else the action move (deal, draw, refill) when
        no card move helps, else null."""
        stored, state = self._load(game_id)
        if state.is_over:
            return stored.version, {"move": None, "reason": f"the game is over ({state.status})"}
        found = engine_hint(state)
        if found is not None:
            return stored.version, {"move": _listed(state, found.move), "reason": found.reason}
        action = next((move for move in state.legal_moves() if move.type in _ACTION_REASONS),
                      None)
        if action is not None:
            return stored.version, {"move": action.to_dict(),
                                    "reason": _ACTION_REASONS[action.type]}
        return stored.version, {"move": None,
                                "reason": "no move helps now: only moves that bring nothing "
                                          "home are left (or resign)"}

    def stats(self) -> dict:
        """Per variant: games created, won, lost, resigned, and won / finished."""
        counters = self.store.stats()
        result = []
        for variant in variants():
            row = {"variant": variant.id}
            for name in ("created", "won", "lost", "resigned"):
                row[name] = max(0, counters.get(f"{variant.id}:{name}", 0))
            finished = row["won"] + row["lost"] + row["resigned"]
            row["win_rate"] = row["won"] / finished if finished else None
            result.append(row)
        return {"variants": result}

    # --- writes ---------------------------------------------------------------------
    def move(self, game_id: str, write: Write, move: Move) -> Reply:
        def change(stored: Stored, state: State, _journal: str) -> _Change:
            after, step = state.apply(move)  # IllegalMoveError: 422, nothing written
            version = stored.version + 1
            record = dict(stored.record, state=after.to_dict_after(stored.record["state"], step),
                          moves=stored.record["moves"] + 1, updated=now())
            body = {"game": game_json(game_id, version, record), "events": _events(step)}
            variant_id = state.variant.id

            def done():
                metrics.MOVES_APPLIED.labels(variant_id).inc()
                if after.is_over:
                    metrics.GAMES_FINISHED.labels(variant_id, after.status).inc()

            return _Change(version, record, Reply(200, orjson.dumps(body), version),
                           journal=journal_token(state.variant, move),
                           stat=f"{variant_id}:{after.status}" if after.is_over else None,
                           done=done)

        return self._write(game_id, write, change)

    def undo(self, game_id: str, write: Write) -> Reply:
        def change(stored: Stored, state: State, journal: str) -> _Change:
            record = stored.record
            if state.is_over:
                raise GameError(409, "game_over",
                                f"the game is {state.status}: a finished game is final")
            if record["undo"] == "off":
                raise GameError(409, "undo_disabled", "this game was created with undo off")
            replayed, _changes = replay(game_id, stored, journal)
            if not replayed.history:
                raise GameError(409, "nothing_to_undo", "no move is left to take back")
            step = replayed.history[-1][1]
            if record["undo"] == "safe" and step.reveals:
                raise GameError(409, "undo_blocked",
                                f"{step.move} turned a stock card face up: with undo 'safe' "
                                "it cannot be taken back, nor anything before it")
            undone = replayed.advance(UNDO)
            before = replayed.state
            version = stored.version + 1
            record = dict(record, state=before.to_dict(), moves=record["moves"] - 1,
                          undos=record["undos"] + 1, updated=now())
            body = {"game": game_json(game_id, version, record),
                    "events": undone.entry()["events"]}
            variant_id = state.variant.id
            return _Change(version, record, Reply(200, orjson.dumps(body), version),
                           journal=UNDO,
                           done=lambda: metrics.UNDOS_APPLIED.labels(variant_id).inc())

        return self._write(game_id, write, change, journal=True)

    def autoplay(self, game_id: str, write: Write) -> Reply:
        """Play the safe moves (``Variant.is_safe_home``) one after another until none is
        left, in ONE write that takes ONE version per move: each move is its own journal
        token, history entry and events feed entry (so undo takes them back one at a
        time).  Answers like a move, with every event in order; when no move is safe
        nothing changes (same version, no events)."""

        def change(stored: Stored, state: State, _journal: str) -> _Change:
            if state.is_over:
                raise IllegalMoveError(
                    "game_over", f"the game is {state.status}: autoplay is refused")
            after, steps = autoplay_steps(state)
            variant = state.variant
            if not steps:
                body = {"game": game_json(game_id, stored.version, stored.record),
                        "events": []}
                return _Change(stored.version, stored.record,
                               Reply(200, orjson.dumps(body), stored.version))
            version = stored.version + len(steps)
            record = dict(stored.record, state=after.to_dict(),
                          moves=stored.record["moves"] + len(steps), updated=now())
            events = [event for step in steps for event in _events(step)]
            body = {"game": game_json(game_id, version, record), "events": events}

            def done():
                metrics.MOVES_APPLIED.labels(variant.id).inc(len(steps))
                if after.is_over:
                    metrics.GAMES_FINISHED.labels(variant.id, after.status).inc()

            return _Change(version, record, Reply(200, orjson.dumps(body), version),
                           journal="".join(journal_token(variant, step.move) for step in steps),
                           stat=f"{variant.id}:{after.status}" if after.is_over else None,
                           done=done)

        return self._write(game_id, write, change)

    def delete(self, game_id: str, write: Write) -> Reply:
        def change(_stored: Stored, _state: State, _journal: str) -> _Change:
            return _Change(None, None, Reply(204, b""))

        return self._write(game_id, write, change)

    def _write(self, game_id: str, write: Write,
               change: Callable[[Stored, State, str], _Change], *,
               journal: bool = False) -> Reply:
        """Read, check, decide, compare-and-set; again on a lost race unless If-Match.
        ``change`` gets the game's journal only with ``journal`` (undo), else ''."""
        hashed_token = token_hash(write.token)
        for _attempt in range(self.retries):
            view = self.store.load_for_write(game_id, write.idempotency_key, journal=journal)
            if view.first_response is not None:
                return self._again(view.first_response, hashed_token, write.request_hash)
            stored = view.game
            if stored is None:
                raise _not_found(game_id)
            if not hmac.compare_digest(stored.record["token"], hashed_token):
                raise GameError(403, "wrong_token", "this is not the player token of the game")
            if write.if_match is not None and stored.version not in write.if_match:
                raise GameError(412, "version_mismatch",
                                f"the game is at version {stored.version}")
            planned = change(stored, _state(game_id, stored.record), view.journal)
            first = None
            if write.idempotency_key is not None:
                first = orjson.dumps(dict(planned.reply.to_json(), r=write.request_hash,
                                          a=hashed_token))
            result = self.store.commit(
                game_id, expected=stored.version, version=planned.version,
                record=planned.record, journal=planned.journal,
                idempotency_key=write.idempotency_key, first_response=first,
                stat=planned.stat)
            if result.outcome == OK:
                planned.done()
                return planned.reply
            if result.outcome == REPLAY:
                return self._again(result.first_response, hashed_token, write.request_hash)
            if result.outcome == MISSING:
                raise _not_found(game_id)
            if result.outcome != CONFLICT:
                raise RuntimeError(f"unknown outcome of a write: {result.outcome!r}")
            if write.if_match is not None:
                raise GameError(412, "version_mismatch", "the game changed meanwhile")
        raise GameError(409, "write_conflict",
                        f"the game kept changing: gave up after {self.retries} attempts")

    @staticmethod
    def _again(stored: bytes, hashed_token: str, body_hash: str) -> Reply:
        """The first answer to a write with this Idempotency-Key, for a retry of it."""
        data = orjson.loads(stored)
        if not hmac.compare_digest(data["a"], hashed_token):
            raise GameError(403, "wrong_token", "this is not the player token of the game")
        if not hmac.compare_digest(data["r"], body_hash):
            raise GameError(422, "idempotency_key_reused",
                            "this Idempotency-Key was used with another request body")
        return Reply.from_json(data)
