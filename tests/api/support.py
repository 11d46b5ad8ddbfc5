"""Helpers for the API tests: create and play games through the HTTP API, and read what
Redis holds (the layout of the service spec) to check the stored state."""

from __future__ import annotations

import json
import logging

from service.app import create_app
from service.engine import Move, State, get_variant
from service.engine.journal import Replay
from service.observability.telemetry import json_formatter
from service.storage import keys
from tests.contract import ValidatingClient


class LogLines(logging.Handler):
    """Collects log records formatted exactly as the service writes them in production."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.setFormatter(json_formatter())
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines]


GAME_ID_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def make_app(redis_url: str, **config):
    """An app for tests: rate limits off unless asked; its test client validates every
    response against openapi.yaml; ``app.statuses`` lists the status of every answer, so
    a test can check that none was a 500."""
    # No wall clock on hints: under a loaded test machine a hint stays a function of the
    # position (its budget of positions ends it).
    settings = {"TESTING": True, "REDIS_URL": redis_url, "RATELIMIT_ENABLED": False,
                "HINT_SECONDS": 60.0}
    settings.update(config)
    app = create_app(settings)
    app.test_client_class = ValidatingClient  # every answer is checked against openapi.yaml
    app.statuses = []

    @app.after_request
    def _remember_status(response):
        app.statuses.append(response.status_code)
        return response

    return app


def auth(token: str, **headers: str) -> dict:
    headers = {key.replace("_", "-"): value for key, value in headers.items()}
    return {"Authorization": f"Bearer {token}", **headers}


def create(client, variant: str = "clock", **fields):
    """POST /v1/games; returns (game, token, response)."""
    response = client.post("/v1/games", json={"variant": variant, **fields})
    assert response.status_code == 201, response.get_data(as_text=True)
    body = response.get_json()
    return body["game"], body["player_token"], response


def as_move(listed: dict) -> dict:
    """A move of GET .../moves as a body for POST .../moves (without its ``card``)."""
    return {key: value for key, value in listed.items() if key != "card"}


def play(client, game_id: str, token: str, move: dict, **headers):
    return client.post(f"/v1/games/{game_id}/moves", json=move, headers=auth(token, **headers))


def legal(client, game_id: str) -> list[dict]:
    response = client.get(f"/v1/games/{game_id}/moves")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["moves"]


def first_of(moves: list[dict], kind: str) -> dict | None:
    return next((as_move(m) for m in moves if m["type"] == kind), None)


# --- what Redis holds ---------------------------------------------------------------
def stored(redis_db, game_id: str) -> tuple[int, dict] | None:
    version, record = redis_db.hmget(keys.game(game_id), keys.VERSION, keys.RECORD)
    if version is None:
        return None
    return int(version), json.loads(record)


def stored_state(redis_db, game_id: str) -> State:
    return State.from_dict(stored(redis_db, game_id)[1]["state"])


def stored_journal(redis_db, game_id: str) -> str:
    """The game's journal as Redis holds it ('' for a new game, or none)."""
    return (redis_db.hget(keys.game(game_id), keys.JOURNAL) or b"").decode()


def stored_history(redis_db, game_id: str) -> list[str]:
    """The moves not undone, ``(version, step)``, replayed from the stored
    journal; checks on the way that the journal holds one token per version and replays
    to exactly the stored position."""
    found = stored(redis_db, game_id)
    if found is None:
        return []
    version, record = found
    variant = get_variant(record["variant"])
    replayed = Replay(variant, record["seed"])
    for _change in replayed.run(stored_journal(redis_db, game_id)):
        pass
    assert replayed.version == version
    assert replayed.state == State.from_dict(record["state"])
    return list(replayed.history)


def stock_text(redis_db, game_id: str) -> str:
    """The undealt stock, bottom first, as one string of card codes (``"KS9D..."``)."""
    state = stored(redis_db, game_id)[1]["state"]
    variant = get_variant(state["variant"])
    return state["piles"][variant.index["stock"]]


def snapshot(redis_db) -> dict:
    """Every key of the database with its value, to check that nothing changed."""
    result = {}
    for key in sorted(redis_db.keys("*")):
        kind = redis_db.type(key)
        if kind == b"hash":
            result[key] = redis_db.hgetall(key)
        elif kind == b"list":
            result[key] = redis_db.lrange(key, 0, -1)
        else:
            result[key] = redis_db.get(key)
    return result


def piles_of(game: dict) -> dict[str, list[str]]:
    return {pile["id"]: pile["cards"] for pile in game["piles"]}


def replay(variant_id: str, seed: int, history: list[dict]) -> State:
    """The state reached by dealing ``seed`` and applying the history's moves."""
    state = get_variant(variant_id).deal(seed)
    for entry in history:
        state, _step = state.apply(Move.from_dict(entry["move"]))
    return state


def public_piles(state: State) -> dict[str, list[str]]:
    """The piles as the API shows them (the stock's cards hidden)."""
    return {spec.id: [] if spec.kind == "stock" else [str(card) for card in cards]
            for spec, cards in zip(state.variant.layout, state.piles, strict=True)}
