"""The server's statistics: ``GET /v1/stats``, the games created and finished per variant."""

from flask import Blueprint

from service.api.http import games, json_response

bp = Blueprint("stats", __name__)


@bp.get("/v1/stats")
def stats():
    return json_response(games().stats())
