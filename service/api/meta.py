"""Operations: liveness, readiness, metrics, and the OpenAPI document."""

from flask import Blueprint, Response, current_app

from service import metrics
from service.api.http import json_response
from service.game.errors import GameError

bp = Blueprint("meta", __name__)

#: Endpoints the rate limiter leaves alone: probes and scrapers must always get through.
UNLIMITED = frozenset({"meta.healthz", "meta.readyz", "meta.prometheus_metrics"})


@bp.get("/healthz")
def healthz():
    return json_response({"status": "ok"})


@bp.get("/readyz")
def readyz():
    current_app.extensions["game_store"].ping()  # StorageUnavailable: 503
    return json_response({"status": "ready"})


@bp.get("/metrics")
def prometheus_metrics():
    text, content_type = metrics.exposition(current_app.config["PROMETHEUS_MULTIPROC_DIR"])
    return Response(text, content_type=content_type)


@bp.get("/v1/openapi.yaml")
def openapi_document():
    document = current_app.extensions["openapi_yaml"]
    if document is None:
        raise GameError(404, "not_found", "this server has no openapi.yaml")
    return Response(document, content_type="application/yaml")
