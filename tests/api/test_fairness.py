"""Fairness, checked the way a suspicious client can check it, with the public API only.

Deal commitment: the commitment shown at creation is the SHA-256 of the seed and salt
revealed at the end, and the revealed seed deals (engine) exactly the game that was
played: the opening table, every card the client saw leave the stock, and the events
of every move, replayed from the history.

Undo policy: under ``safe`` no sequence of calls shows a stock card before it is dealt
for good: every reveal stands (undo after a deal, draw, refill or replacement is 409
``undo_blocked``, also after a later undo, twice, through an idempotent replay...), no
card ever goes back onto the stock, and every card any answer (moves, undo, replays,
history, events feed, hint) shows leaving the stock is the card the revealed seed put
there.  ``full`` takes anything back, and a re-deal shows the same card again; ``off``
takes nothing back.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

import pytest

from service.engine import Move, State, get_variant
from tests.api.support import as_move, auth, piles_of, public_piles, snapshot, stored
from tests.notation import cards_on

VARIANTS = ["clock", "salic-law", "four-corners"]
REVEALS = {"clock": "draw", "salic-law": "deal", "four-corners": "deal"}


@dataclass
class Player:
    """A client of one game that keeps every answer it got."""

    client: object
    variant: str
    policy: str
    game: dict
    token: str
    answers: list = field(default_factory=list)
    keyed: list = field(default_factory=list)  # (key, method, path, body, first answer)
    counter: int = 0

    @classmethod
    def create(cls, client, variant: str, policy: str, **fields) -> Player:
        response = client.post("/v1/games", json={"variant": variant, "undo": policy, **fields})
        assert response.status_code == 201, response.get_data(as_text=True)
        body = response.get_json()
        player = cls(client, variant, policy, body["game"], body["player_token"])
        player.answers.append(response)
        return player

    @property
    def url(self) -> str:
        return f"/v1/games/{self.game['id']}"

    def send(self, method: str, suffix: str = "", body=None, *, key: str | None = None,
             **headers):
        if key == "new":
            self.counter += 1
            key = f"k{self.counter}"
        if key is not None:
            headers["Idempotency_Key"] = key
        response = self.client.open(self.url + suffix, method=method, json=body,
                                    headers=auth(self.token, **headers))
        assert response.status_code < 500
        self.answers.append(response)
        if key is not None and response.status_code < 300:
            self.keyed.append((key, method, suffix, body, response))
        return response

    def play(self, move: dict, **kwargs):
        return self.send("POST", "/moves", move, **kwargs)

    def undo(self, **kwargs):
        return self.send("POST", "/undo", **kwargs)

    def moves(self) -> list[dict]:
        return self.send("GET", "/moves").get_json()["moves"]

    def read_everything(self) -> None:
        for suffix in ("", "/moves", "/history", "/hint", "/events?after=0"):
            assert self.send("GET", suffix).status_code == 200, suffix

    def replay_keyed(self) -> None:
        """Send every keyed write again: the first answer comes back, byte for byte."""
        for key, method, suffix, body, first in list(self.keyed):
            again = self.send(method, suffix, body, key=key)
            assert again.status_code == first.status_code
            assert again.get_data() == first.get_data()

    def stock_count(self) -> int:
        game = self.send("GET").get_json()
        return next(p["count"] for p in game["piles"] if p["kind"] == "stock")

    def finish(self) -> dict:
        """Resign (if still on) and return the final Game, with seed and salt."""
        game = self.send("GET").get_json()
        if game["status"] == "playing":
            assert self.play({"type": "resign"}).status_code == 200
        final = self.send("GET").get_json()
        assert final["status"] != "playing"
        return final


def _stock_count(game: dict) -> int:
    return next(p["count"] for p in game["piles"] if p["kind"] == "stock")


def shown_stock_cards(player: Player) -> list[tuple[int, str]]:
    """Every (place in the opening stock, card) that any answer showed leaving the stock
    (or, under full undo, going back), with the place counted from the bottom."""
    seen = []
    opening = _stock_count(player.game)
    for response in player.answers:
        body = response.get_json(silent=True) if response.is_json else None
        if not isinstance(body, dict):
            continue
        path = response.request.path
        if path.endswith(("/moves", "/undo", "/autoplay")) and response.request.method == "POST" \
                and "game" in body:
            count = _stock_count(body["game"])
            out = [e["card"] for e in body["events"] if e["from"] == "stock"]
            back = [e["card"] for e in body["events"] if e["to"] == "stock"]
            seen += [(count + len(out) - 1 - i, card) for i, card in enumerate(out)]
            seen += [(count - len(back) + i, card) for i, card in enumerate(back)]
        elif path.endswith("/history"):
            count = opening
            for entry in body["moves"]:
                for event in entry["events"]:
                    if event["from"] == "stock":
                        count -= 1
                        seen.append((count, event["card"]))
        elif path.endswith("/events"):
            count = opening
            for entry in body["events"]:
                for event in entry["events"]:
                    if event["from"] == "stock":
                        count -= 1
                        seen.append((count, event["card"]))
                    elif event["to"] == "stock":
                        seen.append((count, event["card"]))
                        count += 1
    return seen


def check_against_the_revealed_deal(player: Player) -> State:
    """The commitment and every card shown, against the deal of the revealed seed."""
    final = player.finish()
    seed, salt = final["seed"], final["salt"]
    commitment = hashlib.sha256(f"{player.variant}:{seed}:{salt}".encode()).hexdigest()
    assert commitment == player.game["deal_commitment"] == final["deal_commitment"]
    for response in player.answers:  # the commitment never changed
        body = response.get_json(silent=True) if response.is_json else None
        game = body.get("game", body) if isinstance(body, dict) else None
        if isinstance(game, dict) and "deal_commitment" in game:
            assert game["deal_commitment"] == commitment
    dealt = get_variant(player.variant).deal(seed)
    assert piles_of(player.game) == public_piles(dealt)
    stock = [str(card) for card in cards_on(dealt, "stock")]
    shown = shown_stock_cards(player)
    assert shown, "no answer showed a stock card"
    assert [card for _place, card in shown] == [stock[place] for place, _card in shown]
    return dealt


def play_randomly(player: Player, rng: random.Random, steps: int, undo_rate: float = 0.0):
    """Listed moves (never resign), with undos now and then; returns the acknowledged
    (move, events) of the moves that still stand."""
    standing = []
    for _ in range(steps):
        if standing and rng.random() < undo_rate:
            response = player.undo()
            if response.status_code == 200:
                move, events = standing.pop()
                assert response.get_json()["events"] == [
                    {"card": e["card"], "from": e["to"], "to": e["from"]}
                    for e in reversed(events)]
            continue
        moves = player.moves()
        if not moves:
            break
        move = as_move(rng.choice(moves))
        response = player.play(move, key="new" if rng.random() < 0.3 else None)
        assert response.status_code == 200, response.get_data(as_text=True)
        standing.append((move, response.get_json()["events"]))
        if response.get_json()["game"]["status"] != "playing":
            break
    return standing


# --- deal commitment ---------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_revealed_seed_deals_the_whole_game_that_was_played(client, redis_db, variant):
    """A server-chosen seed, full undo (so the history differs from the moves sent),
    played for up to 100 moves, then resigned."""
    player = Player.create(client, variant, "full")
    created = player.game
    assert created["seed"] is None
    assert created["salt"] is None
    assert len(created["deal_commitment"]) == 64
    assert set(created["deal_commitment"]) <= set("0123456789abcdef")
    # Server side: what was stored at creation is the deal of the committed seed.
    _version, record = stored(redis_db, created["id"])
    assert record["state"] == get_variant(variant).deal(record["seed"]).to_dict()
    standing = play_randomly(player, random.Random(variant), 100, undo_rate=0.15)
    assert any(r.request.path.endswith("/undo") and r.status_code == 200
               for r in player.answers)
    dealt = check_against_the_revealed_deal(player)
    # The history is exactly the moves that stand, and replays from the deal to the end.
    history = player.send("GET", "/history").get_json()["moves"]
    assert [(h["move"], h["events"]) for h in history[:len(standing)]] == standing
    assert history[len(standing):] == [] or history[-1]["move"] == {"type": "resign"}
    state = dealt
    for entry in history:
        state, step = state.apply(Move.from_dict(entry["move"]))
        assert [e.to_dict() for e in step.events] == entry["events"]
    final = player.send("GET").get_json()
    assert piles_of(final) == public_piles(state)
    assert state.status == final["status"]
    assert state == State.from_dict(stored(redis_db, created["id"])[1]["state"])


def test_a_chosen_seed_is_shown_at_once_and_commits_all_the_same(client):
    player = Player.create(client, "salic-law", "safe", seed=2**64 - 1)
    assert player.game["seed"] == 2**64 - 1
    assert player.game["salt"] is None
    for _ in range(5):
        player.play({"type": "deal"})
    check_against_the_revealed_deal(player)


def test_two_games_of_one_seed_have_different_salts_and_commitments(client):
    first = Player.create(client, "clock", "safe", seed=9)
    second = Player.create(client, "clock", "safe", seed=9)
    assert first.game["deal_commitment"] != second.game["deal_commitment"]
    assert piles_of(first.game) == piles_of(second.game)
    a, b = first.finish(), second.finish()
    assert a["seed"] == b["seed"] == 9
    assert a["salt"] != b["salt"]


# --- undo policy ---------------------------------------------------------------------------
def _blocked(response, before, redis_db) -> None:
    assert response.status_code == 409, response.get_data(as_text=True)
    assert response.get_json()["code"] == "undo_blocked"
    assert snapshot(redis_db) == before


def _reveals(response) -> list[str]:
    return [e["card"] for e in response.get_json()["events"] if e["from"] == "stock"]


def _try_every_way_back(player: Player, redis_db) -> None:
    """After a reveal: undo, undo twice, undo with If-Match, with a key, replays of
    every keyed write, and reads of everything: nothing changes, nothing new shows."""
    before = snapshot(redis_db)
    count = player.stock_count()
    version = player.send("GET").get_json()["version"]
    _blocked(player.undo(), before, redis_db)
    _blocked(player.undo(), before, redis_db)
    _blocked(player.undo(If_Match=f'"{version}"'), before, redis_db)
    _blocked(player.undo(key="new"), before, redis_db)
    player.replay_keyed()
    player.read_everything()
    assert player.stock_count() == count
    hint = player.send("GET", "/hint").get_json()
    if hint["move"] is not None and "card" in hint["move"]:
        state_piles = piles_of(player.send("GET").get_json())
        assert state_piles[hint["move"]["from"]][-1] == hint["move"]["card"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_safe_undo_never_takes_back_a_reveal(client, redis_db, variant):
    player = Player.create(client, variant, "safe", seed=1)
    reveal = {"type": REVEALS[variant]}
    first = player.play(reveal, key="new")
    assert first.status_code == 200
    shown = _reveals(first)
    assert shown
    _try_every_way_back(player, redis_db)
    # A move that reveals nothing can be taken back, then the reveal blocks again.
    plain = next((as_move(m) for m in player.moves() if m["type"] == "move"
                  and not (variant == "four-corners" and m["to"].startswith(("ace", "king")))),
                 None)
    if plain is not None:
        played = player.play(plain, key="new")
        assert played.status_code == 200
        if not _reveals(played):
            taken_back = player.undo()
            assert taken_back.status_code == 200
            assert [e["to"] for e in taken_back.get_json()["events"]] != ["stock"]
            _try_every_way_back(player, redis_db)
            # The replay of the undone move answers as the first time, applies nothing.
            before = snapshot(redis_db)
            player.replay_keyed()
            assert snapshot(redis_db) == before
    # The next reveal shows the next card of the deal, not the first one again.
    second = player.play(reveal)
    assert second.status_code == 200
    assert _reveals(second)  # check_against_the_revealed_deal: the next places
    check_against_the_revealed_deal(player)


def test_safe_blocks_a_refill_and_a_replacement(client, redis_db):
    clock = Player.create(client, "clock", "safe", seed=0)
    assert clock.play({"type": "move", "from": "packet-2", "to": "foundation-10"}) \
        .status_code == 200
    assert {"type": "refill"} in clock.moves()
    refill = clock.play({"type": "refill"})
    assert refill.status_code == 200
    assert _reveals(refill)
    _try_every_way_back(clock, redis_db)
    check_against_the_revealed_deal(clock)

    corners = Player.create(client, "four-corners", "safe", seed=1)
    replaced = corners.play({"type": "move", "from": "corner-bl", "to": "king-1"})
    assert replaced.status_code == 200
    events = replaced.get_json()["events"]
    assert events[0] == {"card": events[0]["card"], "from": "corner-bl", "to": "king-1"}
    assert [e["from"] for e in events[1:]] == ["stock"] * (len(events) - 1)
    assert len(events) >= 2
    _try_every_way_back(corners, redis_db)
    check_against_the_revealed_deal(corners)


@pytest.mark.parametrize("variant", VARIANTS)
def test_safe_random_play_with_every_kind_of_undo_attempt(client, redis_db, variant):
    """Random listed moves interleaved with undos, double undos, replays and reads:
    the stock only ever shrinks, no answer puts a card back, and every card shown is
    the deal's."""
    rng = random.Random(f"safe-{variant}")
    player = Player.create(client, variant, "safe")
    assert player.play({"type": REVEALS[variant]}).status_code == 200
    counts = [player.stock_count()]
    for _ in range(60):
        roll = rng.random()
        if roll < 0.2:
            for _twice in range(rng.choice((1, 2))):
                response = player.undo(key="new" if rng.random() < 0.5 else None)
                assert response.status_code in (200, 409)
                if response.status_code == 409:
                    assert response.get_json()["code"] in ("undo_blocked", "nothing_to_undo",
                                                           "game_over")
        elif roll < 0.3:
            player.replay_keyed()
        elif roll < 0.4:
            player.read_everything()
        else:
            moves = player.moves()
            if not moves:
                break
            response = player.play(as_move(rng.choice(moves)),
                                   key="new" if rng.random() < 0.5 else None)
            assert response.status_code == 200
        counts.append(player.stock_count())
    assert counts == sorted(counts, reverse=True)  # never a card back onto the stock
    for response in player.answers:
        body = response.get_json(silent=True) if response.is_json else None
        if isinstance(body, dict) and isinstance(body.get("events"), list):
            assert all(e.get("to") != "stock" for e in body["events"] if "card" in e)
    check_against_the_revealed_deal(player)


@pytest.mark.parametrize("variant", VARIANTS)
def test_full_undo_takes_back_a_reveal_and_the_redeal_shows_the_same_card(client, redis_db,
                                                                         variant):
    player = Player.create(client, variant, "full")
    reveal = {"type": REVEALS[variant]}
    first = player.play(reveal)
    back = player.undo()
    assert back.status_code == 200
    assert [e["to"] for e in back.get_json()["events"] if e["card"] in _reveals(first)] \
        == ["stock"] * len(_reveals(first))
    again = player.play(reveal)
    assert again.get_data() != first.get_data()  # a new version, a new answer...
    assert again.get_json()["events"] == first.get_json()["events"]  # ...the same cards
    assert again.get_json()["game"]["version"] == 3
    assert again.get_json()["game"]["undos"] == 1
    check_against_the_revealed_deal(player)


@pytest.mark.parametrize("variant", VARIANTS)
def test_off_takes_nothing_back(client, redis_db, variant):
    player = Player.create(client, variant, "off")
    assert player.play({"type": REVEALS[variant]}).status_code == 200
    play_randomly(player, random.Random(variant), 5)
    before = snapshot(redis_db)
    for _ in range(2):
        response = player.undo(key="new")
        assert response.status_code == 409
        assert response.get_json()["code"] == "undo_disabled"
    assert snapshot(redis_db) == before
    assert player.send("GET").get_json()["undos"] == 0
    check_against_the_revealed_deal(player)
