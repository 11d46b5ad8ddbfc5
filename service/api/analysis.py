"""``GET /v1/games/<id>/analysis``: could the deal of a finished game have been won?"""

from flask import Blueprint, Response, current_app, g

from service.api.http import checked_id, games, json_response
from service.games import GameError
from service.solving import ANALYSIS_RETRY_AFTER, READY, Analyses, finished_of

bp = Blueprint("analysis", __name__)


def analyses() -> Analyses:
    return current_app.extensions["analyses"]


@bp.get("/v1/games/<game_id>/analysis")
def analysis(game_id):
    game_id = checked_id(game_id)
    stored = games().store.load(game_id)
    if stored is None:
        raise GameError(404, "game_not_found", f"there is no game {game_id!r}")
    finished = finished_of(stored.record)
    if not finished.over:
        raise GameError(409, "game_not_over",
                        "the analysis would tell the stock: it is shown once the game is over")
    state, answer = analyses().get(finished, game_id)
    if state == READY:
        return Response(answer, 200, mimetype="application/json")
    response = json_response({"status": "pending"}, 202)
    g.retry_after = response.headers["Retry-After"] = str(ANALYSIS_RETRY_AFTER)
    return response
