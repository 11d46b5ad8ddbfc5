"""Players from the operator's identity provider, through the API: a real key set served
over HTTP (tests/test_oidc.py's provider in miniature), the verifier the app builds from
``OIDC_ISSUER`` and ``OIDC_AUDIENCE``, and hostile tokens each refused with a clear 4xx,
nothing stored and nothing logged that holds the token."""

from __future__ import annotations

import time

import jwt
import pytest

from service.app import close_app
from service.players.accounts import oidc_player_id
from tests.api.support import auth, create, make_app, play
from tests.test_oidc import AUDIENCE, SUBJECT, Provider, ec_key, rsa_key


@pytest.fixture
def provider():
    provider = Provider()
    provider.keys["rsa-1"] = rsa_key()
    yield provider
    provider.close()


@pytest.fixture
def app(clean_redis, redis_url, provider):
    app = make_app(redis_url, OIDC_ISSUER=provider.url, OIDC_AUDIENCE=AUDIENCE)
    yield app
    close_app(app)
    assert 500 not in app.statuses


@pytest.fixture
def client(app):
    return app.test_client()


def _player_keys(redis_db) -> list[bytes]:
    return sorted(key for key in redis_db.keys("player:*"))


def test_a_token_of_the_provider_is_a_player_made_on_first_use(client, provider, redis_db):
    token = provider.token()
    me = client.get("/v1/players/me", headers=auth(token))
    assert me.status_code == 200, me.get_data(as_text=True)
    player = me.get_json()
    assert player["id"] == oidc_player_id(provider.url, SUBJECT)
    assert (player["kind"], player["issuer"], player["subject"]) == \
        ("oidc", provider.url, SUBJECT)
    game = client.post("/v1/games", json={"variant": "clock"}, headers=auth(token))
    assert game.status_code == 201
    game_id = game.get_json()["game"]["id"]
    assert play(client, game_id, token, {"type": "resign"}).status_code == 200
    games = client.get("/v1/players/me/games", headers=auth(token)).get_json()["games"]
    assert [item["id"] for item in games] == [game_id]
    # A second token of the same subject (another device) is the same player.
    again = provider.token(iat=int(time.time()) - 5)
    assert client.get("/v1/players/me", headers=auth(again)).get_json() == player


def test_the_provider_rotates_its_keys(clean_redis, redis_url, provider):
    app = make_app(redis_url, OIDC_ISSUER=provider.url, OIDC_AUDIENCE=AUDIENCE,
                   OIDC_JWKS_REFETCH_SECONDS=0.5)
    try:
        client = app.test_client()
        before = provider.token()
        assert client.get("/v1/players/me", headers=auth(before)).status_code == 200
        provider.keys = {"ec-2": ec_key()}  # the old key withdrawn, a new one published
        time.sleep(0.6)  # the verifier asks for the key set again at most this often
        after = provider.token("ec-2")
        assert client.get("/v1/players/me", headers=auth(after)).status_code == 200
        # The withdrawn key signs nothing any more, once the new set was read.
        assert client.get("/v1/players/me", headers=auth(before)).status_code == 401
    finally:
        close_app(app)


def _hostile(provider) -> dict[str, str]:
    now = int(time.time())
    stranger = rsa_key()
    return {
        "forged": provider.token(key=stranger),  # signed by a key the provider never had
        "expired": provider.token(iat=now - 7200, exp=now - 3600),
        "alg_none": ".".join((
            jwt.utils.base64url_encode(b'{"alg":"none","typ":"JWT","kid":"rsa-1"}').decode(),
            jwt.utils.base64url_encode(
                f'{{"iss":"{provider.url}","sub":"{SUBJECT}","aud":"{AUDIENCE}",'
                f'"exp":{now + 300}}}'.encode()).decode(),
            "")),
        "other_audience": provider.token(aud="another-service"),
        "other_issuer": provider.token(iss="https://elsewhere.example"),
        "oversized": provider.token(padding="x" * 20_000),
    }


@pytest.mark.parametrize("kind", ["forged", "expired", "alg_none", "other_audience",
                                  "other_issuer", "oversized"])
def test_a_hostile_token_is_refused_and_changes_nothing(client, provider, redis_db,
                                                        log_lines, kind):
    token = _hostile(provider)[kind]
    game, game_token, _ = create(client)
    stored_before = redis_db.hgetall(f"game:{{{game['id']}}}")
    players_before = _player_keys(redis_db)

    me = client.get("/v1/players/me", headers=auth(token))
    assert me.status_code == 401
    assert me.get_json()["code"] == "invalid_token"
    assert me.headers["WWW-Authenticate"].startswith("Bearer")
    created = client.post("/v1/games", json={"variant": "clock"}, headers=auth(token))
    assert created.status_code == 401
    assert created.get_json()["code"] == "invalid_token"
    moved = play(client, game["id"], token, {"type": "resign"})
    assert moved.status_code == 403
    assert moved.get_json()["code"] == "wrong_token"

    assert redis_db.hgetall(f"game:{{{game['id']}}}") == stored_before
    assert _player_keys(redis_db) == players_before == []
    written = "\n".join(log_lines.lines)
    assert token not in written
    for part in token.split("."):
        if len(part) >= 12:
            assert part not in written


def test_another_players_token_on_my_game_changes_nothing(client, provider, redis_db):
    mine = provider.token()
    theirs = provider.token(sub="mallory")
    game = client.post("/v1/games", json={"variant": "clock"}, headers=auth(mine)).get_json()
    game_id = game["game"]["id"]
    before = redis_db.hgetall(f"game:{{{game_id}}}")
    refused = play(client, game_id, theirs, {"type": "resign"})
    assert refused.status_code == 403
    assert refused.get_json()["code"] == "wrong_token"
    assert redis_db.hgetall(f"game:{{{game_id}}}") == before


def test_an_unreachable_provider_answers_503_and_stores_nothing(client, provider, redis_db):
    token = provider.token()
    provider.status = 500  # the key set cannot be read (never fetched yet)
    me = client.get("/v1/players/me", headers=auth(token))
    assert me.status_code == 503
    assert me.get_json()["code"] == "identity_provider_unavailable"
    assert me.headers["Retry-After"] == "10"  # OIDC_JWKS_REFETCH_SECONDS, its default
    assert _player_keys(redis_db) == []


def test_an_identity_provider_player_plays_the_daily_deal_ranked_from_the_first_day(
        redis_url, clean_redis, provider):
    """``DAILY_ACCOUNT_RULE`` ``before-day`` (the default) trusts the provider: its player
    plays ranked on the day its identity first reaches the server, where an account made
    that day is refused (docs/daily.md, fair play)."""
    app = make_app(redis_url, OIDC_ISSUER=provider.url, OIDC_AUDIENCE=AUDIENCE)
    try:
        client = app.test_client()
        app.services.solver_store.add_seed("clock", 42)
        day = client.get("/v1/daily").get_json()["day"]
        issued = client.post("/v1/players", json={"name": "New"}).get_json()["player_token"]
        refused = client.post(f"/v1/daily/clock/{day}", headers=auth(issued))
        assert (refused.status_code, refused.get_json()["code"]) == (403, "account_too_new")
        made = client.post(f"/v1/daily/clock/{day}", headers=auth(provider.token()))
        assert made.status_code == 201, made.get_data(as_text=True)
        assert made.get_json()["game"]["ranked"]["day"] == day
    finally:
        close_app(app)
    assert 500 not in app.statuses
