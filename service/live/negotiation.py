"""Which requests are a stream of a game's feed or a day's board's, and on which wire: the
one rule, for the views (:mod:`service.api.events`, :mod:`service.api.daily`) and the
request group's hand-off to the events group
(:mod:`service.runtime.handoff`).  The load balancer's own copy of it, in
``deploy/haproxy.cfg``, is checked against it by the tests.

``GET /v1/games/<id>/events`` and ``GET /v1/daily/<variant>/<day>/events`` (or
``HEAD``) are a stream when the ``Accept`` header
prefers the media type of one of the feed's wires (:data:`WIRES`) to JSON; else the
feed is read as JSON.  Adding a wire is adding it to :data:`WIRES`.
"""

from __future__ import annotations

import re

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from service.live.wires import Wire
from service.live.wires.sse import SSE

#: The events path of a game (the view's route, ``/v1/games/<game_id>/events``) and of a
#: day's board (``/v1/daily/<variant>/<day>/events``).
EVENTS_PATH = re.compile(r"/v1/(games/[^/]+|daily/[^/]+/[^/]+)/events")
#: The methods of a stream (a GET route answers HEAD too).
STREAM_METHODS = frozenset({"GET", "HEAD"})
#: The feed's wires, by the media type that asks for each.
WIRES: dict[str, Wire] = {SSE.content_type: SSE}
_JSON = "application/json"
_OFFERED = [_JSON, *WIRES]  # JSON first: it wins a tie (``Accept: */*``)


def negotiate(accept: str | None) -> Wire | None:
    """The wire an ``Accept`` header prefers to JSON; None for JSON."""
    best = parse_accept_header(accept, MIMEAccept).best_match(_OFFERED)
    return WIRES.get(best)


def stream_wire(method: str, path: str, accept: str | None) -> Wire | None:
    """The wire of a request that is a stream of a feed; None for any other
    request (a JSON read of the feed included)."""
    if method not in STREAM_METHODS or not EVENTS_PATH.fullmatch(path):
        return None
    return negotiate(accept)
