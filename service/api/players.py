"""``/v1/players``: accounts, tokens, "my games", statistics, export and erasure
(docs/players.md)."""

from __future__ import annotations

import orjson
from flask import Blueprint, Response, request
from marshmallow import ValidationError

from service.api.context import services
from service.api.http import JSON, idempotency_key, json_response, read_json, send
from service.api.identity import checked, current_player, unchecked_player_token
from service.api.schemas import claim_schema, load_games_query, new_player_schema
from service.game.idempotency import request_hash
from service.game.pipeline import Write
from service.players.accounts import Players

bp = Blueprint("players", __name__, url_prefix="/v1/players")
NDJSON = "application/x-ndjson"


def players() -> Players:
    return services().players


@bp.post("")
def create_player():
    body = read_json()
    name = new_player_schema.load(body)["name"]
    profile, token = players().register(name)
    response = json_response({"player": profile, "player_token": token}, 201)
    response.headers["Location"] = "/v1/players/me"
    return response


@bp.get("/me")
def me():
    return json_response(players().profile(current_player()))


@bp.delete("/me")
def erase():
    players().erase(current_player())
    return Response(status=204)


@bp.post("/me/token")
def rotate_token():
    profile, token = players().rotate(current_player())
    return json_response({"player": profile, "player_token": token})


@bp.delete("/me/token")
def revoke_token():
    players().revoke(current_player())
    return Response(status=204)


@bp.get("/me/games")
def my_games():
    # A page checks a player token in its own round trip (docs/players.md); anything
    # else (no token, a JWT, an identity resolved already) is checked first, as usual.
    presented = unchecked_player_token()
    player = current_player() if presented is None else presented[0]
    try:
        query = load_games_query(request.args.to_dict())
    except ValidationError:
        current_player()  # a bad token is answered 401 before a bad query 400
        raise
    cursor = None if query["cursor"] is None else int(query["cursor"])
    accepted = request.accept_mimetypes
    if accepted and accepted.best_match([JSON, NDJSON]) == NDJSON:
        player = current_player()
        lines = players().every(player, variant=query["variant"], status=query["status"])
        return Response(lines, 200, mimetype=NDJSON)
    body = players().page(player, variant=query["variant"], status=query["status"],
                          limit=query["limit"], cursor=cursor,
                          token=None if presented is None else presented[1])
    if presented is not None:
        checked(player if body is not None else None)  # None: raises, 401 invalid_token
    return Response(body, 200, mimetype=JSON)


@bp.post("/me/games")
def claim_game():
    player = current_player()
    key = idempotency_key()
    body = read_json()
    claim = claim_schema.load(body)
    write = Write(claim["game_token"], None, key,
                  request_hash("claim", body) if key is not None else None)
    return send(players().claim(player, write, claim["game_id"]))


@bp.get("/me/stats")
def my_stats():
    return json_response(players().stats(current_player()))


@bp.get("/me/export")
def export():
    player = current_player()
    response = Response(orjson.dumps(players().export(player)), 200, mimetype=JSON)
    response.headers["Content-Disposition"] = \
        f'attachment; filename="patience-player-{player}.json"'
    return response
