"""A hypothesis state machine over the whole API (the Flask test client on the session's
Redis; every answer validated against openapi.yaml).

Rules: create a game (any variant, chosen or server seed, any undo policy, with or
without an Idempotency-Key), play a legal move (from GET .../moves, with or without
If-Match and Idempotency-Key), send a random move (legal or not: the engine, run on the
stored state, says what the answer must be), undo, autoplay, read everything, replay
an earlier write with its key (same body: the first answer byte for byte; another body:
422), write with a wrong token or a stale If-Match, delete.

After every step, for the game the step touched: card conservation (the visible cards
plus the stock count make 104, each twin at most twice among the visible cards), version
arithmetic (+1 per accepted change, unchanged on a refusal, in the answers and in
Redis), the history replays with the engine from the deal to the stored state, and no
answer of the step (body or header) holds the server's seed, the salt or eight
consecutive undealt stock cards while the game is on.  Every card an answer shows
leaving the stock is the card that lies at that place of the stock dealt at creation
(the deal is fixed), and under ``safe`` no answer ever puts a card back on the stock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from service.engine import (
    MOVE_TYPES,
    IllegalMoveError,
    InvalidMoveError,
    Move,
    State,
    get_variant,
    variants,
)
from service.storage import keys
from tests.api.support import as_move, auth, stored, stored_history

VARIANTS = [variant.id for variant in variants()]
PILE_IDS = sorted({spec.id for variant in variants() for spec in variant.layout})
ODD_PILES = ["", "stock ", "x" * 32, "x" * 33, "king-0", "king-9", "foundation-13", "talon"]
PROBLEM = "application/problem+json"


@dataclass
class Game:
    id: str
    token: str
    variant: str
    undo: str
    seed: int  # the deal (read from Redis for a server-chosen seed: never sent to a client)
    chosen: bool
    salt: str
    opening_stock: list[str]  # the stock dealt at creation, bottom first
    version: int = 0
    deleted: bool = False
    keys: dict = field(default_factory=dict)  # Idempotency-Key -> (method, url, body, answer)
    counter: int = 0

    @property
    def url(self) -> str:
        return f"/v1/games/{self.id}"

    def new_key(self) -> str:
        self.counter += 1
        return f"{self.id[:8]}-k{self.counter}"


def _cards(text: str) -> list[str]:
    return [text[i:i + 2] for i in range(0, len(text), 2)]


class ApiMachine(RuleBasedStateMachine):
    games = Bundle("games")

    def __init__(self, app, redis_db):
        super().__init__()
        redis_db.flushall()
        self.client = app.test_client()
        self.redis = redis_db
        self.answers: list = []  # every answer of the current step
        self.touched: Game | None = None
        self.creates = 0

    # --- helpers -------------------------------------------------------------------------
    def send(self, method: str, url: str, **kwargs):
        response = self.client.open(url, method=method, **kwargs)
        assert response.status_code < 500, response.get_data(as_text=True)
        self.answers.append(response)
        return response

    def problem(self, response, status: int, code: str) -> None:
        assert response.status_code == status, (status, code, response.get_data(as_text=True))
        assert response.mimetype == PROBLEM
        assert response.get_json()["code"] == code, response.get_data(as_text=True)

    def stored_state(self, game: Game) -> State:
        return State.from_dict(stored(self.redis, game.id)[1]["state"])

    def unchanged(self, game: Game, before) -> None:
        assert (self.redis.hgetall(keys.game(game.id)), stored_history(self.redis, game.id)) \
            == before

    def before(self, game: Game):
        return self.redis.hgetall(keys.game(game.id)), stored_history(self.redis, game.id)

    def remember(self, game: Game, key: str | None, method: str, url: str, body, response):
        if key is not None and response.status_code < 300:
            game.keys[key] = (method, url, body, response)

    def write(self, game: Game, method: str, url: str, body, *, if_match: bool, keyed: bool):
        key = game.new_key() if keyed else None
        headers = auth(game.token)
        if if_match:
            headers["If-Match"] = f'"{game.version}"'
        if key is not None:
            headers["Idempotency-Key"] = key
        response = self.send(method, url, json=body, headers=headers)
        self.remember(game, key, method, url, body, response)
        return response

    # --- rules ---------------------------------------------------------------------------
    @rule(target=games, variant=st.sampled_from(VARIANTS),
          seed=st.one_of(st.none(), st.integers(0, 2**64 - 1)),
          undo=st.sampled_from(["full", "safe", "off", None]), keyed=st.booleans())
    def create(self, variant, seed, undo, keyed):
        body = {"variant": variant}
        if seed is not None:
            body["seed"] = seed
        if undo is not None:
            body["undo"] = undo
        self.creates += 1
        headers = {"Idempotency-Key": f"create-{self.creates}"} if keyed else {}
        response = self.send("POST", "/v1/games", json=body, headers=headers)
        assert response.status_code == 201, response.get_data(as_text=True)
        created = response.get_json()
        shown = created["game"]
        assert shown["version"] == 0
        assert shown["undo"] == (undo or "safe")
        assert shown["seed"] == seed  # None for a server-chosen seed
        assert shown["salt"] is None
        _version, record = stored(self.redis, shown["id"])
        stock = record["state"]["piles"][get_variant(variant).index["stock"]]
        game = Game(shown["id"], created["player_token"], variant, shown["undo"],
                    record["seed"], seed is not None, record["salt"], _cards(stock))
        assert get_variant(variant).deal(game.seed).to_dict() == record["state"]
        if keyed:
            again = self.send("POST", "/v1/games", json=body, headers=headers)
            assert again.get_data() == response.get_data()
        self.touched = game
        return game

    # Choices among what the server shows are drawn as an index (modulo the number of
    # choices): a server-chosen deal differs from run to run, and hypothesis wants the
    # same draws whatever the deal.
    @rule(game=games, pick=st.integers(0, 2**16), if_match=st.booleans(), keyed=st.booleans())
    def legal_move(self, game, pick, if_match, keyed):
        if game.deleted:
            return
        self.touched = game
        listed = self.send("GET", f"{game.url}/moves")
        assert listed.status_code == 200
        moves = listed.get_json()["moves"]
        assert listed.get_json()["version"] == game.version
        if not moves:
            assert self.stored_state(game).is_over
            return
        chosen = moves[pick % len(moves)]
        before = self.stored_state(game)
        if "card" in chosen:
            assert str(before.card_of(Move.from_dict(as_move(chosen)))) == chosen["card"]
        response = self.write(game, "POST", f"{game.url}/moves", as_move(chosen),
                              if_match=if_match, keyed=keyed)
        assert response.status_code == 200, response.get_data(as_text=True)
        self.accepted(game, response, 1)
        _after, step = before.apply(Move.from_dict(as_move(chosen)))
        assert response.get_json()["events"] == [e.to_dict() for e in step.events]

    @rule(game=games, kind=st.sampled_from([*MOVE_TYPES, "undo", "", "MOVE"]),
          source=st.sampled_from(PILE_IDS + ODD_PILES + [None]),
          dest=st.sampled_from(PILE_IDS + ODD_PILES + [None]))
    def random_move(self, game, kind, source, dest):
        if game.deleted:
            return
        self.touched = game
        body = {"type": kind}
        if source is not None:
            body["from"] = source
        if dest is not None:
            body["to"] = dest
        before_raw = self.before(game)
        state = self.stored_state(game)
        try:
            move = Move.from_dict(body)
            if kind == "move" and (len(source) > 32 or len(dest) > 32):
                raise InvalidMoveError("invalid_move", "too long")
        except InvalidMoveError:
            response = self.write(game, "POST", f"{game.url}/moves", body, if_match=False,
                                  keyed=False)
            self.problem(response, 400, "invalid_request")
            self.unchanged(game, before_raw)
            return
        try:
            _after, step = state.apply(move)
        except IllegalMoveError as error:
            response = self.write(game, "POST", f"{game.url}/moves", body, if_match=False,
                                  keyed=True)
            self.problem(response, 422, error.code)
            self.unchanged(game, before_raw)
            return
        response = self.write(game, "POST", f"{game.url}/moves", body, if_match=True,
                              keyed=True)
        assert response.status_code == 200, response.get_data(as_text=True)
        self.accepted(game, response, 1)
        assert response.get_json()["events"] == [e.to_dict() for e in step.events]

    @rule(game=games, if_match=st.booleans(), keyed=st.booleans())
    def undo(self, game, if_match, keyed):
        if game.deleted:
            return
        self.touched = game
        before_raw = self.before(game)
        state = self.stored_state(game)
        history = stored_history(self.redis, game.id)
        if state.is_over:
            expected = "game_over"
        elif game.undo == "off":
            expected = "undo_disabled"
        elif not history:
            expected = "nothing_to_undo"
        else:
            step = history[-1][1]
            expected = "undo_blocked" if game.undo == "safe" and step.reveals else None
        response = self.write(game, "POST", f"{game.url}/undo", None, if_match=if_match,
                              keyed=keyed)
        if expected is not None:
            self.problem(response, 422 if expected == "game_over" else 409, expected)
            self.unchanged(game, before_raw)
            return
        assert response.status_code == 200, response.get_data(as_text=True)
        assert state.undo(step) == self.stored_state(game)
        self.accepted(game, response, 1)
        assert response.get_json()["game"]["undos"] == stored(self.redis, game.id)[1]["undos"]

    @rule(game=games)
    def autoplay(self, game):
        if game.deleted:
            return
        self.touched = game
        before_raw = self.before(game)
        over = self.stored_state(game).is_over
        before_moves = len(stored_history(self.redis, game.id))
        response = self.write(game, "POST", f"{game.url}/autoplay", None, if_match=False,
                              keyed=False)
        if over:
            self.problem(response, 422, "game_over")
            self.unchanged(game, before_raw)
            return
        assert response.status_code == 200, response.get_data(as_text=True)
        played = len(stored_history(self.redis, game.id)) - before_moves
        if played == 0:
            assert response.get_json()["events"] == []
            self.unchanged(game, before_raw)
        self.accepted(game, response, played)

    @rule(game=games)
    def read_everything(self, game):
        self.touched = game
        for suffix in ("", "/moves", "/history", "/hint", "/events?after=0"):
            response = self.send("GET", f"{game.url}{suffix}")
            if game.deleted:
                self.problem(response, 404, "game_not_found")
                continue
            assert response.status_code == 200, (suffix, response.get_data(as_text=True))
            assert response.headers["ETag"] == f'"{game.version}"', suffix
        if not game.deleted:
            cached = self.send("GET", game.url, headers={"If-None-Match": f'"{game.version}"'})
            assert cached.status_code == 304

    @rule(game=games, pick=st.integers(0, 2**16), same_body=st.booleans())
    def replay_a_write(self, game, pick, same_body):
        if not game.keys:
            return
        self.touched = game
        key = list(game.keys)[pick % len(game.keys)]
        method, url, body, first = game.keys[key]
        before_raw = self.before(game)
        headers = auth(game.token, Idempotency_Key=key)
        if same_body:
            again = self.send(method, url, json=body, headers=headers)
            again.replayed = True  # byte for byte an answer checked when it was first sent
            assert again.status_code == first.status_code
            assert again.get_data() == first.get_data()
            assert again.headers.get("ETag") == first.headers.get("ETag")
        else:
            other = {"type": "resign"} if body != {"type": "resign"} else {"type": "deal"}
            again = self.send("POST", f"{game.url}/moves", json=other, headers=headers)
            self.problem(again, 422, "idempotency_key_reused")
        if not game.deleted:
            self.unchanged(game, before_raw)

    @rule(game=games, token=st.sampled_from(["A" * 43, "x", "Bearer", "a" * 500, ""]),
          what=st.sampled_from(["moves", "undo", "delete"]))
    def bad_token(self, game, token, what):
        self.touched = game
        before_raw = self.before(game)
        headers = {"Authorization": f"Bearer {token}"}
        if what == "delete":
            response = self.send("DELETE", game.url, headers=headers)
        else:
            response = self.send("POST", f"{game.url}/{what}", json={"type": "resign"}
                                 if what == "moves" else None, headers=headers)
        if token == "":
            self.problem(response, 401, "missing_token")
        elif game.deleted:
            self.problem(response, 404, "game_not_found")
        else:
            self.problem(response, 403, "wrong_token")
        self.unchanged(game, before_raw)

    @rule(game=games, delta=st.sampled_from([-1, 1, 7]))
    def stale_if_match(self, game, delta):
        if game.deleted or game.version + delta < 0:
            return
        self.touched = game
        before_raw = self.before(game)
        response = self.send("POST", f"{game.url}/moves", json={"type": "resign"},
                             headers=auth(game.token, If_Match=f'"{game.version + delta}"'))
        self.problem(response, 412, "version_mismatch")
        self.unchanged(game, before_raw)

    @rule(game=games, keyed=st.booleans())
    def delete(self, game, keyed):
        self.touched = game
        response = self.write(game, "DELETE", game.url, None, if_match=True, keyed=keyed)
        if game.deleted:
            self.problem(response, 404, "game_not_found")
            return
        assert response.status_code == 204
        assert response.get_data() == b""
        game.deleted = True
        assert stored(self.redis, game.id) is None
        assert stored_history(self.redis, game.id) == []

    # --- invariants --------------------------------------------------------------------
    def accepted(self, game: Game, response, changes: int) -> None:
        """Version arithmetic of an accepted write."""
        shown = response.get_json()["game"]
        game.version += changes
        assert shown["version"] == game.version
        assert response.headers["ETag"] == f'"{game.version}"'
        assert stored(self.redis, game.id)[0] == game.version

    @invariant()
    def the_touched_game_is_consistent(self):
        game, self.touched = self.touched, None
        answers, self.answers = self.answers, []
        if game is None:
            return
        self.check_secrets(game, answers)
        self.check_stock_cards(game, answers)
        if game.deleted:
            return
        version, record = stored(self.redis, game.id)
        assert version == game.version
        # The invariant's own reads: the answers' shapes are checked in the rules (here
        # only status and content type, which saves most of the time).
        shown = self.client.get(game.url, contract="status").get_json()
        assert shown["version"] == game.version
        # card conservation
        visible = [card for pile in shown["piles"] for card in pile["cards"]]
        stock = next(pile for pile in shown["piles"] if pile["kind"] == "stock")
        assert stock["cards"] == []
        assert len(visible) + stock["count"] == 104
        assert all(pile["count"] == len(pile["cards"]) for pile in shown["piles"]
                   if pile["kind"] != "stock")
        assert max(Counter(visible).values()) <= 2
        # the history replays to the stored state
        history = self.client.get(f"{game.url}/history", contract="status").get_json()["moves"]
        assert len(history) == record["moves"] == shown["moves_made"]
        assert [entry["version"] for entry in history] == sorted(
            {entry["version"] for entry in history})
        assert all(entry["version"] <= version for entry in history)
        state = get_variant(game.variant).deal(game.seed)
        for entry in history:
            state, step = state.apply(Move.from_dict(entry["move"]))
            assert [e.to_dict() for e in step.events] == entry["events"]
        assert state == State.from_dict(record["state"])
        assert shown["status"] == state.status
        if state.is_over:
            assert (shown["seed"], shown["salt"]) == (game.seed, game.salt)

    def check_secrets(self, game: Game, answers) -> None:
        secrets = [game.salt] + ([] if game.chosen else [str(game.seed)])
        record = stored(self.redis, game.id)
        if record is not None and not State.from_dict(record[1]["state"]).is_over:
            undealt = _cards(record[1]["state"]["piles"][get_variant(game.variant).index[
                "stock"]])
        else:
            undealt = []
        windows = set()
        for i in range(len(undealt) - 7):
            run = undealt[i:i + 8]
            for order in (run, run[::-1]):
                windows.update(("".join(order), ",".join(f'"{card}"' for card in order),
                                ", ".join(f'"{card}"' for card in order)))
        for response in answers:
            if getattr(response, "replayed", False):
                continue
            text = response.get_data(as_text=True)
            body = response.get_json(silent=True) if response.is_json else None
            over = isinstance(body, dict) and (body.get("game") or body).get("status") in (
                "won", "lost", "resigned")
            headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
            for secret in secrets:
                if not over:
                    assert secret not in text, (response.request.path, secret)
                assert secret not in headers
            for window in windows:
                assert window not in text, (response.request.path, window)
                assert window not in headers

    def check_stock_cards(self, game: Game, answers) -> None:
        """A card leaving the stock is the one dealt there; under safe none goes back."""
        for response in answers:
            body = response.get_json(silent=True) if response.is_json else None
            if not isinstance(body, dict) or "events" not in body or "game" not in body \
                    or any("card" not in event for event in body["events"]):
                continue  # not the answer to a write (the events feed, say)
            if body["game"].get("id") != game.id:
                continue
            count = next(p["count"] for p in body["game"]["piles"] if p["kind"] == "stock")
            out = [e["card"] for e in body["events"] if e["from"] == "stock"]
            back = [e["card"] for e in body["events"] if e["to"] == "stock"]
            assert not (out and back)
            before = count + len(out)
            assert out == [game.opening_stock[before - 1 - i] for i in range(len(out))]
            start = count - len(back)
            assert back == [game.opening_stock[start + i] for i in range(len(back))]
            if back:
                assert game.undo == "full", "a card went back to the stock"


@pytest.mark.timeout(240)
def test_the_api_keeps_its_invariants_under_random_calls(app, redis_db):
    run_state_machine_as_test(
        lambda: ApiMachine(app, redis_db),
        settings=settings(max_examples=30, stateful_step_count=25, deadline=None,
                          derandomize=True, database=None,
                          suppress_health_check=list(HealthCheck)))
