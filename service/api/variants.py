"""``/v1/variants``: the games this server plays, for drawing an empty table."""

import orjson
from flask import Blueprint, Response

from service.api.http import JSON
from service.engine import variants

bp = Blueprint("variants", __name__, url_prefix="/v1/variants")

# The same for every request: serialised once (variants() lists them in their declared order).
_VARIANTS = orjson.dumps({"variants": [variant.describe() for variant in variants()]})


@bp.get("")
def list_variants():
    return Response(_VARIANTS, mimetype=JSON)
