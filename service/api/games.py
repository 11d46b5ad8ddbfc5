"""``/v1/games``: create, read, play, undo, history, delete."""

from flask import Blueprint

from service.api.http import (
    checked_id,
    games,
    idempotency_key,
    json_response,
    read_json,
    send,
    write_request,
)
from service.api.schemas import create_game_schema, move_schema, undo_schema
from service.games import request_hash

bp = Blueprint("games", __name__, url_prefix="/v1/games")


@bp.post("")
def create_game():
    key = idempotency_key()
    body = read_json()
    new = create_game_schema.load(body)
    return send(games().create(new["variant"], new["seed"], new["undo"], key,
                               request_hash("create", body), winnable=new["winnable"]))


@bp.get("/<game_id>")
def get_game(game_id):
    version, game = games().get(checked_id(game_id))
    return json_response(game, version=version)


@bp.get("/<game_id>/moves")
def legal_moves(game_id):
    version, moves = games().legal_moves(checked_id(game_id))
    return json_response(moves, version=version)


@bp.post("/<game_id>/moves")
def play(game_id):
    write, move = write_request("move", move_schema)
    return send(games().move(checked_id(game_id), write, move))


@bp.post("/<game_id>/undo")
def undo(game_id):
    write, _ = write_request("undo", undo_schema, optional=True)
    return send(games().undo(checked_id(game_id), write))


@bp.get("/<game_id>/history")
def history(game_id):
    version, moves = games().history(checked_id(game_id))
    return json_response(moves, version=version)


@bp.delete("/<game_id>")
def delete_game(game_id):
    write, _ = write_request("delete")
    return send(games().delete(checked_id(game_id), write))
