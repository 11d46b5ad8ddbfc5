"""Request parsing and response building shared by the views.

Bodies: ``application/json`` (charset, if given, UTF-8), at most ``MAX_CONTENT_LENGTH``
bytes (Werkzeug enforces it on chunked bodies too), valid UTF-8 JSON (orjson refuses
invalid UTF-8, lone surrogates, NaN and nesting deeper than 1024), and an object.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from flask import Response, current_app, request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from service.api.context import services
from service.api.errors import BadRequest
from service.api.identity import current_player, request_identity
from service.game.application import Games
from service.game.errors import game_not_found
from service.game.idempotency import Reply, request_hash
from service.game.pipeline import Write
from service.game.record import Viewer
from service.observability import telemetry

JSON = "application/json"
#: The Content-Type headers clients send, accepted as they are (any other is parsed).
_PLAIN_JSON = frozenset({JSON, f"{JSON}; charset=utf-8", f"{JSON}; charset=UTF-8",
                         f"{JSON};charset=utf-8", f"{JSON};charset=UTF-8"})
_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# RFC 6750 b64token
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_IDEMPOTENCY_KEY = re.compile(r"[\x20-\x7e]{1,64}")
_ONE_VERSION = re.compile(r'[ \t]*"([0-9]{1,18})"[ \t]*')


def games() -> Games:
    return services().games


def checked_id(game_id: str) -> str:
    """``game_id`` if it can be one (ids are 22 url-safe characters), else 404."""
    if not _GAME_ID.fullmatch(game_id):
        raise game_not_found()
    return game_id


# --- bodies -------------------------------------------------------------------------
def read_json(*, optional: bool = False) -> dict:
    """The request body as a JSON object; ``{}`` for an absent optional body."""
    content_type = request.environ.get("CONTENT_TYPE", "")
    has_type = bool(content_type.strip())
    if has_type and content_type not in _PLAIN_JSON and (
            request.mimetype != JSON
            or request.mimetype_params.get("charset", "utf-8").lower() != "utf-8"):
        raise BadRequest(415, "unsupported_media_type",
                         f"the body must be {JSON} (UTF-8), not {request.mimetype or '?'!r}")
    data = _body()
    if optional and not data.strip():
        return {}
    if not has_type:
        raise BadRequest(415, "unsupported_media_type", f"send the body as {JSON}")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise BadRequest(400, "invalid_json", f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest(400, "invalid_json", "the body must be a JSON object")
    return body


def _body() -> bytes:
    """The raw body; 413 past ``MAX_CONTENT_LENGTH``.

    With a ``Content-Length`` and no ``Transfer-Encoding`` (what clients send), the
    body is read straight from the server's stream, as Werkzeug would read it: 413 for
    a length past the limit, 400 ``invalid_request`` when the client sends less and
    goes away (Werkzeug's ``ClientDisconnected``), without Werkzeug's stream wrappers.
    A chunked body goes through Werkzeug, which stops it quietly at the limit: one more
    byte read from the server's stream tells a body of exactly the limit from a longer
    one."""
    environ = request.environ
    length = environ.get("CONTENT_LENGTH", "")
    if length.isdigit() and length.isascii() and "HTTP_TRANSFER_ENCODING" not in environ:
        size = int(length)
        if (limit := current_app.config["MAX_CONTENT_LENGTH"]) is not None and size > limit:
            raise RequestEntityTooLarge()
        data = environ["wsgi.input"].read(size) if size else b""
        if len(data) < size:
            raise ClientDisconnected()
        return data
    data = request.get_data(cache=True)
    limit = request.max_content_length
    if (request.content_length is None and limit is not None and len(data) >= limit
            and request.environ["wsgi.input"].read(1)):
        raise RequestEntityTooLarge()
    return data


# --- headers ------------------------------------------------------------------------
# The request path reads its few headers from the WSGI environ (what Werkzeug's headers
# read too), without building Werkzeug's header views on every request.
def bearer_token() -> str:
    scheme, _, token = request.environ.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not _TOKEN.fullmatch(token):
        raise BadRequest(401, "missing_token",
                         "send the player token as 'Authorization: Bearer <token>'",
                         headers={"WWW-Authenticate": 'Bearer realm="patience"'})
    return token


def if_match() -> frozenset[int] | None:
    """The versions an ``If-Match`` accepts (strong comparison), or None when there is no
    precondition (no header, or ``*``: the game exists, which a write checks anyway)."""
    header = request.environ.get("HTTP_IF_MATCH")
    if header is None:
        return None
    single = _ONE_VERSION.fullmatch(header)
    if single is not None:  # the usual '"<version>"': no need to parse a list of tags
        return frozenset((int(single[1]),))
    if request.if_match.star_tag:
        return None
    return frozenset(int(tag) for tag in request.if_match.as_set()
                     if tag and tag.isascii() and tag.isdigit() and len(tag) <= 18)


def idempotency_key() -> str | None:
    key = request.environ.get("HTTP_IDEMPOTENCY_KEY")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise BadRequest(400, "invalid_header",
                         "Idempotency-Key must be 1 to 64 printable ASCII characters")
    return key


def write_request(kind: str, load: Callable[[dict], Any] | None = None, *,
                  optional: bool = False, token: bool = True) -> tuple[Write, Any]:
    """Check a write: token (401, unless ``token`` is false: a create), headers (400),
    body (415, 413, 400, through ``load``); return the :class:`Write` and what ``load``
    made of the body (None without ``load``: no body).  A player token names the
    player (``Write.player``): a game's token, or none, names nobody; a create with a
    player token that is not valid is 401 ``invalid_token``."""
    bearer = bearer_token() if token else None
    player = name = None
    if token:
        player, name = request_identity().player, request_identity().name
    elif "HTTP_AUTHORIZATION" in request.environ and request_identity().invalid:
        current_player()  # raises: 401 invalid_token
    elif "HTTP_AUTHORIZATION" in request.environ:
        player, name = request_identity().player, request_identity().name
        bearer = bearer_token() if player is not None else None
    versions, key = (if_match() if token else None), idempotency_key()
    body = read_json(optional=optional) if load is not None else {}
    loaded = load(body) if load is not None else None
    # The body's hash tells a retry from another request with its Idempotency-Key: only
    # a write with one needs it.
    hashed = request_hash(kind, body) if key is not None else None
    return Write(bearer, versions, key, hashed, player, name), loaded


# --- responses ----------------------------------------------------------------------
def etag(version: int) -> str:
    return f'"{version}"'


def json_response(payload, status: int = 200, *, version: int | None = None) -> Response:
    """``payload`` as JSON; with a ``version``, an ETag, and 304 when ``If-None-Match``
    names it (weak comparison, as RFC 9110 wants for GET)."""
    if version is not None and request.environ.get("HTTP_IF_NONE_MATCH") \
            and request.if_none_match.contains_weak(str(version)):
        return Response(status=304, headers={"ETag": etag(version)})
    response = Response(orjson.dumps(payload), status, mimetype=JSON)
    if version is not None:
        response.headers["ETag"] = etag(version)
    return response


def viewer() -> Viewer | None:
    """Who a read comes from (None: no bearer token): the player a player token names,
    and the token as sent (a game's own token proves its game).  A ranked game is its
    player's only while its day is open."""
    if "HTTP_AUTHORIZATION" not in request.environ:
        return None
    scheme, _, token = request.environ["HTTP_AUTHORIZATION"].strip().partition(" ")
    token = token.strip() if scheme.lower() == "bearer" and _TOKEN.fullmatch(token.strip()) \
        else None
    return Viewer(request_identity().player, token)


def leave_turn() -> None:
    """Give the request's turn through the app back (service/runtime/slots.py): what
    follows computes for long, and the requests waiting behind it need not wait for it.
    Nothing where requests take no turns."""
    leave = request.environ.get(telemetry.LEAVE_TURN)
    if leave is not None:
        leave()


def read_game(read: Callable[..., tuple[int, dict]], game_id: str) -> Response:
    """The answer to a read of one game (``read`` is a method of :class:`Games`): its
    body, with the game's version as the ETag."""
    version, body = read(checked_id(game_id), viewer())
    return json_response(body, version=version)


def send(reply: Reply) -> Response:
    """A write's :class:`Reply` (the stored bytes, for an idempotent retry)."""
    response = Response(reply.body, reply.status, mimetype=JSON)
    if not reply.body:  # 204: no content, no content type
        del response.headers["Content-Type"]
    if reply.version is not None:
        response.headers["ETag"] = etag(reply.version)
    if reply.location is not None:
        response.headers["Location"] = reply.location
    return response
