"""``GET /v1/games/<id>/events``: a game's feed, read as JSON or followed as a stream on
the wire its ``Accept`` header asks for (Server-Sent Events, ``text/event-stream``;
:mod:`service.live.negotiation`); see :mod:`service.live.feed`."""

from __future__ import annotations

import re

from flask import Blueprint, Response, request
from marshmallow import ValidationError

from service.api.context import services
from service.api.errors import BadRequest, problem
from service.api.http import checked_id, etag, json_response, viewer
from service.game.application import check_visible
from service.live.feed import EventsFeed
from service.live.follower import ATTACH_ENVIRON
from service.live.negotiation import stream_wire
from service.live.streams import MAX_VERSION, Stream, TooManyStreams
from service.live.wires import Wire

_VERSION = re.compile(r"[0-9]{1,19}")

bp = Blueprint("events", __name__, url_prefix="/v1/games")


def feed() -> EventsFeed:
    return services().events_feed


def _after() -> int:
    """The version the client has: ``Last-Event-ID`` (a reconnecting EventSource) if
    sent, else ``?after=`` (default 0, everything)."""
    after = request.args.get("after")
    if after is not None and (not _VERSION.fullmatch(after) or int(after) > MAX_VERSION):
        # checked even when Last-Event-ID overrides it: a wrong query is always refused
        raise ValidationError({"after": ["Must be an integer 0 .. 9223372036854775807."]})
    last = request.headers.get("Last-Event-ID")
    if last is not None:
        if not _VERSION.fullmatch(last) or int(last) > MAX_VERSION:
            raise BadRequest(400, "invalid_header",
                             "Last-Event-ID must be a version (an integer 0 .. 2**63-1)")
        return int(last)
    return 0 if after is None else int(after)


@bp.get("/<game_id>/events")
def follow_game(game_id):
    game_id = checked_id(game_id)
    after = _after()
    wire = stream_wire(request.method, request.path, request.headers.get("Accept"))
    if wire is None:
        version, body = feed().read(game_id, after, viewer())
        response = json_response(body, version=version)
        response.vary.update(("Accept", "Last-Event-ID"))
        return response
    try:
        stream = feed().streams.open(game_id, after, wire)
    except TooManyStreams as error:
        return too_many_streams(error)
    if stream is None:  # the game is over and the client saw its end: stop reconnecting
        response = Response(status=204)
        del response.headers["Content-Type"]
        return response
    try:
        check_visible(stream.game, viewer())
        tag = etag(stream.game.version)
    except BaseException:
        stream.release()
        raise
    return serve(stream, wire, tag)


def too_many_streams(error: TooManyStreams) -> Response:
    return problem(503, "too_many_streams", f"{error}; retry soon",
                   headers={"Retry-After": "5"})


def serve(stream: Stream, wire: Wire, tag: str | None = None) -> Response:
    """The response of an admitted stream (a game's or a day's board's) on ``wire``."""
    stream.attachable = bool(request.environ.get(ATTACH_ENVIRON))
    try:
        response = Response(feed().streams.frames(stream), mimetype=wire.content_type)
        response.call_on_close(stream.release)
    except BaseException:
        stream.release()
        raise
    if tag is not None:
        response.headers["ETag"] = tag
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass every event on at once
    response.vary.update(("Accept", "Last-Event-ID"))
    return response
