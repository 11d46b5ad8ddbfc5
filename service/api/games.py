"""``/v1/games``: create, read, play, undo, history, delete."""

from flask import Blueprint

from service.api.http import checked_id, games, read_game, send, write_request
from service.api.schemas import create_game_schema, load_move, undo_schema

bp = Blueprint("games", __name__, url_prefix="/v1/games")


@bp.post("")
def create_game():
    write, new = write_request("create", create_game_schema.load, token=False)
    return send(games().create(write, new["variant"], new["seed"], new["undo"],
                               winnable=new["winnable"]))


@bp.get("/<game_id>")
def get_game(game_id):
    return read_game(games().get, game_id)


@bp.get("/<game_id>/moves")
def legal_moves(game_id):
    return read_game(games().legal_moves, game_id)


@bp.post("/<game_id>/moves")
def play(game_id):
    write, (move, card) = write_request("move", load_move)
    return send(games().move(checked_id(game_id), write, move, card=card))


@bp.post("/<game_id>/undo")
def undo(game_id):
    write, _ = write_request("undo", undo_schema.load, optional=True)
    return send(games().undo(checked_id(game_id), write))


@bp.get("/<game_id>/history")
def history(game_id):
    return read_game(games().history, game_id)


@bp.delete("/<game_id>")
def delete_game(game_id):
    write, _ = write_request("delete")
    return send(games().delete(checked_id(game_id), write))
