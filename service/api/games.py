"""``/v1/games``: create, read, play, undo, history, delete."""

from flask import Blueprint

from service.api.http import (
    checked_id,
    games,
    json_response,
    send,
    write_request,
)
from service.api.schemas import create_game_schema, move_schema, undo_schema

bp = Blueprint("games", __name__, url_prefix="/v1/games")


@bp.post("")
def create_game():
    write, new = write_request("create", create_game_schema, token=False)
    return send(games().create(write, new["variant"], new["seed"], new["undo"]))


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
