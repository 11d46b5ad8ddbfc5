"""Operations: liveness, readiness, metrics, and the OpenAPI document."""

from flask import Blueprint, Response, current_app, request

from service.api.context import services
from service.api.http import json_response
from service.game.errors import GameError
from service.observability import metrics

bp = Blueprint("meta", __name__)

#: Endpoints the rate limiter leaves alone: probes and scrapers must always get through.
UNLIMITED = frozenset({"meta.healthz", "meta.readyz", "meta.prometheus_metrics"})

#: The media types of the OpenAPI document, the default first.
YAML_TYPES = ("application/yaml", "text/yaml")


@bp.get("/healthz")
def healthz():
    return json_response({"status": "ok"})


@bp.get("/readyz")
def readyz():
    services().store.ping()  # StorageUnavailable: 503
    return json_response({"status": "ready"})


@bp.get("/metrics")
def prometheus_metrics():
    backend = services().store.backend
    text, content_type = metrics.exposition(current_app.config["PROMETHEUS_MULTIPROC_DIR"],
                                            metrics.RedisMemory(lambda: backend.client))
    return Response(text, content_type=content_type)


@bp.get("/v1/openapi.yaml")
def openapi_document():
    document = services().openapi_yaml
    if document is None:
        raise GameError(404, "not_found", "this server has no openapi.yaml")
    # The same bytes under the label the client asks for: application/yaml (RFC 9512) unless
    # it prefers text/yaml, the name older tools (and client generators) know.
    media = request.accept_mimetypes.best_match(YAML_TYPES, default=YAML_TYPES[0])
    response = Response(document, content_type=media)
    response.vary.add("Accept")
    return response
