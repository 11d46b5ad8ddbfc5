"""``/v1/daily``: the daily deal, its ranked attempts and its boards (docs/daily.md).
No route writes a board: an entry is written by the server when a ranked game ends."""

from __future__ import annotations

import re

import orjson
from flask import Blueprint, Response, request
from marshmallow import ValidationError

from service.api.context import services
from service.api.errors import BadRequest
from service.api.events import feed, serve, too_many_streams
from service.api.http import JSON, bearer_token, json_response, leave_turn, send, viewer
from service.api.identity import current_player
from service.api.schemas import load_around_query, load_board_query, quick_around
from service.daily.boards import BoardPage, Daily
from service.game.errors import GameError
from service.live.negotiation import stream_wire
from service.live.streams import TooManyStreams

bp = Blueprint("daily", __name__, url_prefix="/v1/daily")
_WEEK = re.compile(r"[0-9]{4}-W[0-9]{2}")
_PLAYER = re.compile(r"(?:oidc-)?[a-z2-7]{26}")
_EVENT_ID = re.compile(r"[0-9]{1,19}-[0-9]{1,19}")


def daily() -> Daily:
    return services().daily


def board_response(page: BoardPage) -> Response:
    """A board's answer: its entries' JSON wrapped as they are, never decoded."""
    tail = b"]," + orjson.dumps(page.tail)[1:] if page.tail else b"]}"
    body = b"".join((orjson.dumps(page.head)[:-1], b',"entries":[', page.entries, tail))
    return Response(body, 200, mimetype=JSON)


@bp.get("")
def overview():
    return json_response(daily().overview())


@bp.get("/<variant>/<day>")
def get_day(variant, day):
    reader = viewer()
    return json_response(daily().day(variant, day, reader and reader.player))


@bp.post("/<variant>/<day>")
def attempt(variant, day):
    player = current_player()
    # A day's first attempt on an empty pool searches: the request's turn goes back first.
    return send(daily().attempt(variant, day, player, bearer_token(),
                                before_search=leave_turn))


@bp.get("/<variant>/<day>/board")
def board(variant, day):
    query = load_board_query(request.args.to_dict())
    return board_response(daily().board(variant, day, limit=query["limit"],
                                       cursor=query["cursor"]))


@bp.get("/<variant>/<day>/board/players/<player_id>")
def around(variant, day, player_id):
    k = around_query(player_id)
    return board_response(daily().around(variant, day, player_id, k))


def around_query(player_id: str) -> int:
    """The ``around`` of a board's read of a player and the k players either side
    (a query of ``around`` alone read without parsing the query); 404 ``not_on_board``
    for a player id that is none."""
    k = quick_around(request.environ.get("QUERY_STRING", ""))
    if k is None:
        k = load_around_query(request.args.to_dict())["around"]
    if not _PLAYER.fullmatch(player_id):
        raise GameError(404, "not_on_board", "there is no player with this id")
    return k


@bp.get("/<variant>/<day>/events")
def board_events(variant, day):
    """The board's feed after ``Last-Event-ID`` or ``?after=``: read as JSON, or followed
    as a stream on the wire the ``Accept`` header asks for, like a game's
    (:mod:`service.api.events`, :mod:`service.live.board`)."""
    header = request.headers.get("Last-Event-ID")
    query = request.args.get("after")
    if query is not None and query != "0" and not _EVENT_ID.fullmatch(query):
        raise ValidationError({"after": ["An event id of this feed ('<ms>-<n>'), or 0."]})
    if header is not None and not _EVENT_ID.fullmatch(header):
        raise BadRequest(400, "invalid_header",
                         "Last-Event-ID must be an event id of this feed ('<ms>-<n>')")
    after = header or query or "0"
    wire = stream_wire(request.method, request.path, request.headers.get("Accept"))
    if wire is None:
        response = json_response(daily().events(variant, day, after))
        response.vary.update(("Accept", "Last-Event-ID"))
        return response
    variant, day = daily().board_feed(variant, day)
    try:
        stream = feed().streams.open_board(variant, day, after, wire)
    except TooManyStreams as error:
        return too_many_streams(error)
    return serve(stream, wire)


@bp.get("/<variant>/weeks/<week>/board")
def week_board(variant, week):
    query = load_board_query(request.args.to_dict())
    check_week(week)
    return board_response(daily().week(variant, week, limit=query["limit"],
                                      cursor=query["cursor"]))


@bp.get("/<variant>/weeks/<week>/board/players/<player_id>")
def week_around(variant, week, player_id):
    k = around_query(player_id)
    check_week(week)
    return board_response(daily().week_around(variant, week, player_id, k))


def check_week(week: str) -> None:
    if not _WEEK.fullmatch(week):
        raise GameError(404, "not_found", f"{week!r} is not an ISO week (YYYY-Www)")


@bp.get("/<variant>/streaks")
def streaks(variant):
    query = load_board_query(request.args.to_dict())
    return json_response(daily().streaks(variant, limit=query["limit"],
                                         cursor=query["cursor"]))


@bp.get("/<variant>/streaks/players/<player_id>")
def streaks_around(variant, player_id):
    k = around_query(player_id)
    return json_response(daily().streaks_around(variant, player_id, k))
