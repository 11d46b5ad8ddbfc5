"""``GET /v1/games/<id>/analysis``: could the deal of a finished game have been won?"""

from flask import Blueprint, Response

from service.api.context import services
from service.api.http import checked_id, json_response, leave_turn
from service.observability import telemetry
from service.solver.features import ANALYSIS_RETRY_AFTER, READY, Analyses

bp = Blueprint("analysis", __name__)


def analyses() -> Analyses:
    return services().analyses


@bp.get("/v1/games/<game_id>/analysis")
def analysis(game_id):
    # A search of up to ANALYSIS_INLINE_SECONDS gives the request's turn back first.
    state, answer = analyses().get(checked_id(game_id), before_search=leave_turn)
    if state == READY:
        return Response(answer, 200, mimetype="application/json")
    # Under way: 202, and ask again after Retry-After (set by the telemetry layer).
    telemetry.keep_retry_after(str(ANALYSIS_RETRY_AFTER))
    return json_response({"status": "pending"}, 202)
