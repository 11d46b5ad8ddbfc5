"""Secrets: games with server-chosen seeds played to the end through every endpoint
(moves, undo, autoplay, hint, events feed, history, refused writes, idempotent replays),
and no response body, no header (ETag included) and no log line before the end holds
the seed, the salt or any eight undealt stock cards in a row (the stock as stored at
that moment, in either direction, in any spelling a body could use).  Log lines never
hold them, nor the player token, even after the end."""

from __future__ import annotations

import json
import logging
import random

import pytest

from service.app import close_app
from service.engine import get_variant
from tests.api.support import LogLines, as_move, auth, make_app, stored

VARIANTS = ["clock", "salic-law", "four-corners"]


def _cards(text: str) -> list[str]:
    return [text[i:i + 2] for i in range(0, len(text), 2)]


def windows(cards: list[str], size: int = 8) -> set[str]:
    """Every run of ``size`` consecutive cards, both ways, as a body or a log could
    spell it: ``KS9D..``, ``"KS","9D",..``, ``"KS", "9D", ..``, ``KS 9D ..``."""
    found = set()
    for i in range(len(cards) - size + 1):
        run = cards[i:i + size]
        for order in (run, run[::-1]):
            found.update(("".join(order), ",".join(f'"{c}"' for c in order),
                          ", ".join(f'"{c}"' for c in order), " ".join(order),
                          ",".join(order), json.dumps(order)))
    return found


@pytest.fixture
def logged():
    """Every log line of the process during the test, as the service formats it: the
    service's loggers (at DEBUG), flask-limiter's, werkzeug's and the root logger's."""
    handler = LogLines()
    names = ("patience", "flask-limiter", "werkzeug", "")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


class Watcher:
    """Sends requests for one game and checks every answer for secrets at once."""

    def __init__(self, client, redis_db, variant: str):
        self.client = client
        self.redis = redis_db
        response = client.post("/v1/games", json={"variant": variant, "undo": "full"},
                               headers={"X-Request-ID": "create-1"})
        assert response.status_code == 201
        body = response.get_json()
        self.game, self.token = body["game"], body["player_token"]
        self.url = f"/v1/games/{self.game['id']}"
        _version, record = stored(redis_db, self.game["id"])
        self.seed, self.salt = str(record["seed"]), record["salt"]
        self.stock_index = get_variant(variant).index["stock"]
        self.opening = _cards(record["state"]["piles"][self.stock_index])
        self.checked = 0
        self.over = False
        self.check(response)

    def undealt(self) -> list[str]:
        _version, record = stored(self.redis, self.game["id"])
        return _cards(record["state"]["piles"][self.stock_index])

    def check(self, response) -> None:
        body = response.get_data(as_text=True)
        headers = "\n".join(f"{name}: {value}" for name, value in response.headers.items())
        parsed = response.get_json(silent=True) if response.is_json else None
        game = parsed.get("game", parsed) if isinstance(parsed, dict) else None
        if isinstance(game, dict) and game.get("status") in ("won", "lost", "resigned"):
            self.over = True
        for secret in (self.seed, self.salt):
            assert secret not in headers, (response.request.path, "header", secret)
            if not self.over:
                assert secret not in body, (response.request.path, secret)
        if not self.over:
            undealt = windows(self.undealt())
            leaked = [w for w in undealt if w in body or w in headers]
            assert leaked == [], (response.request.path, leaked[:3])
        self.checked += 1

    def send(self, method: str, suffix: str = "", body=None, **headers):
        response = self.client.open(self.url + suffix, method=method, json=body,
                                    headers=auth(self.token, **headers))
        assert response.status_code < 500
        self.check(response)
        return response


@pytest.mark.parametrize("variant", VARIANTS)
def test_nothing_secret_leaves_the_server_before_the_end(redis_url, redis_db, logged, variant):
    app = make_app(redis_url, LOG_LEVEL="DEBUG", RATELIMIT_ENABLED=True,
                   RATELIMIT_APPLICATION="100000 per minute")
    client = app.test_client()
    watcher = Watcher(client, redis_db, variant)
    rng = random.Random(f"secrets-{variant}")
    keys = []
    for turn in range(200):
        if watcher.over:
            break
        roll = rng.random()
        if roll < 0.1:
            watcher.send("POST", "/undo")
        elif roll < 0.15:
            watcher.send("POST", "/autoplay")
        elif roll < 0.25:
            for suffix in ("", "/moves", "/history", "/hint", "/events?after=0",
                           f"/events?after={max(0, turn - 3)}"):
                watcher.send("GET", suffix)
            watcher.send("GET", "", If_None_Match='"0"')
        elif roll < 0.3:  # refused writes
            watcher.send("POST", "/moves", {"type": "move", "from": "stock", "to": "talon"})
            watcher.send("POST", "/moves", {"type": "deal"}, If_Match='"99999"')
            watcher.send("POST", "/moves", {"type": "refill"})
            watcher.send("POST", "/moves", {"type": "draw"}, Authorization="Bearer " + "A" * 43)
        elif roll < 0.35 and keys:
            key, move = rng.choice(keys)
            watcher.send("POST", "/moves", move, Idempotency_Key=key)  # a replay
            watcher.send("POST", "/moves", {"type": "resign"} if move != {"type": "resign"}
                         else {"type": "deal"}, Idempotency_Key=key)  # 422
        else:
            moves = watcher.send("GET", "/moves").get_json()["moves"]
            if not moves or turn > 120:
                watcher.send("POST", "/moves", {"type": "resign"})
                continue
            move = as_move(rng.choice(moves))
            key = f"key-{turn}"
            assert watcher.send("POST", "/moves", move, Idempotency_Key=key).status_code == 200
            keys.append((key, move))
    assert watcher.over
    final = watcher.send("GET").get_json()
    assert (str(final["seed"]), final["salt"]) == (watcher.seed, watcher.salt)
    assert watcher.checked > 100
    # The log: one JSON line per request (and nothing else secret), never a secret.
    lines = logged.lines
    assert len(lines) >= watcher.checked
    opening = windows(watcher.opening)
    for line in lines:
        for secret in (watcher.seed, watcher.salt, watcher.token):
            assert secret not in line, line
        assert not [w for w in opening if w in line], line
    requests = [json.loads(line) for line in lines if '"request"' in line]
    assert {r["game_id"] for r in requests if "game_id" in r} == {watcher.game["id"]}
    close_app(app)
    assert 500 not in app.statuses
