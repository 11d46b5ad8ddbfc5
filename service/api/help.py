"""Help for players: ``GET /v1/games/<id>/hint`` and ``POST /v1/games/<id>/autoplay``."""

from flask import Blueprint

from service.api.http import checked_id, games, leave_turn, read_game, send, write_request
from service.api.schemas import undo_schema

bp = Blueprint("help", __name__)


@bp.get("/v1/games/<game_id>/hint")
def hint(game_id):
    leave_turn()  # a search of up to HINT_SECONDS: the requests behind it go first
    return read_game(games().hint, game_id)


@bp.post("/v1/games/<game_id>/autoplay")
def autoplay(game_id):
    # The body is empty or {}, like undo's.
    write, _ = write_request("autoplay", undo_schema.load, optional=True)
    return send(games().autoplay(checked_id(game_id), write))
