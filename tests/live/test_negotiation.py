"""Which requests are a stream of a game's feed (service.live.negotiation.stream_wire, the
one rule of the view and of the request group's hand-off), the load balancer's copy of it
in deploy/haproxy.cfg, and the Server-Sent Events wire's bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.live.items import (
    BEAT_ITEM,
    DELETED,
    END,
    ENTRY,
    GAME,
    Item,
    deleted_item,
    sync_item,
)
from service.live.negotiation import EVENTS_PATH, STREAM_METHODS, WIRES, stream_wire
from service.live.wires import frame, frames
from service.live.wires.sse import SSE
from service.runtime.handoff import is_stream_request

HAPROXY = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
EVENTS = "/v1/games/Vx3kQ9rT2mLpW8nB4yZc1A/events"


# --- the rule -----------------------------------------------------------------------------
@pytest.mark.parametrize("accept", [
    "text/event-stream",
    "text/event-stream, application/json;q=0.5",
    "application/json;q=0.1, text/*",
    "text/event-stream;q=0.9, */*;q=0.1",
])
def test_the_events_path_asking_for_an_event_stream_is_a_stream(accept):
    assert stream_wire("GET", EVENTS, accept) is SSE
    assert stream_wire("HEAD", EVENTS, accept) is SSE


@pytest.mark.parametrize("accept", [
    None, "", "*/*", "application/json", "application/json, text/event-stream",
    "text/event-stream;q=0.5, application/json", "text/html", "text/event-stream;q=0",
])
def test_a_request_that_prefers_json_or_names_no_wire_reads_the_feed(accept):
    assert stream_wire("GET", EVENTS, accept) is None


@pytest.mark.parametrize(("method", "path"), [
    ("POST", EVENTS), ("DELETE", EVENTS), ("OPTIONS", EVENTS),
    ("GET", "/v1/games/x/events/more"), ("GET", "/v1/games/x"), ("GET", "/v1/games//events"),
    ("GET", "/v1/games/x/history"), ("GET", "/x/v1/games/x/events"),
])
def test_other_methods_and_paths_are_no_stream(method, path):
    assert stream_wire(method, path, "text/event-stream") is None


def test_the_hand_off_follows_the_rule_for_gets_without_a_body():
    stream = [("Host", "x"), ("Accept", "text/event-stream")]
    assert is_stream_request("GET", EVENTS, stream)
    assert is_stream_request("GET", EVENTS, [*stream, ("Content-Length", "0")])
    assert not is_stream_request("GET", EVENTS, [*stream, ("Content-Length", "3")])
    assert not is_stream_request("GET", EVENTS, [*stream, ("Transfer-Encoding", "chunked")])
    assert not is_stream_request("GET", EVENTS, [("Accept", "application/json")])
    assert not is_stream_request("POST", EVENTS, stream)
    assert not is_stream_request("HEAD", EVENTS, stream)  # no stream held open: not handed
    # Accept headers sent twice count as one list.
    assert is_stream_request("GET", EVENTS, [("Accept", "application/json;q=0.1"),
                                             ("Accept", "text/event-stream")])


def test_every_wire_is_named_by_its_media_type():
    assert WIRES == {"text/event-stream": SSE}
    assert all(media == wire.content_type for media, wire in WIRES.items())


# --- the load balancer's copy -------------------------------------------------------------
def test_haproxy_sends_what_may_be_a_stream_to_the_events_group_as_the_rule_says():
    """HAProxy cannot import the rule: its ACL names the same path and the same methods
    (``METH_GET`` is GET and HEAD), and sends every such request to the events group,
    which also answers the JSON reads of that path."""
    config = HAPROXY.read_text()
    acl = re.findall(r"^\s*acl events_path path_reg \^(\S+)\$$", config, re.MULTILINE)
    assert acl == [EVENTS_PATH.pattern]
    assert re.findall(r"^\s*use_backend events if (.+)$", config, re.MULTILINE) == \
        ["METH_GET events_path"]
    assert {"GET", "HEAD"} == STREAM_METHODS  # HAProxy's METH_GET
    assert "service.live.negotiation.stream_wire" in config


# --- the Server-Sent Events wire ----------------------------------------------------------
def test_the_sse_wire_frames_each_item_as_an_event():
    assert SSE.preamble(3000) == b"retry: 3000\n\n"
    assert frame(SSE, Item(ENTRY, 2, "move", b'{"version":2}', 2)) == \
        b'id: 2\nevent: move\ndata: {"version":2}\n\n'
    assert frame(SSE, Item(ENTRY, 3, "undo", b"{}", 3)) == b"id: 3\nevent: undo\ndata: {}\n\n"
    assert frame(SSE, Item(GAME, 4, "game", b"{}", 4)) == b"id: 4\nevent: game\ndata: {}\n\n"
    assert frame(SSE, Item(END, 4, "end", b"{}")) == b"event: end\ndata: {}\n\n"
    assert frame(SSE, deleted_item("g1")) == b'event: deleted\ndata: {"id":"g1"}\n\n'
    assert deleted_item("g1").kind == DELETED
    assert frame(SSE, BEAT_ITEM) == b": heartbeat\n\n"
    assert frame(SSE, sync_item(4)) == b""


class _Counting:
    """A wire that counts what it encodes."""

    content_type = "text/x-counting"

    def __init__(self):
        self.encoded = 0

    def preamble(self, retry_ms: int) -> bytes:
        return b""

    def encode(self, item: Item) -> bytes:
        self.encoded += 1
        return b"<%d>" % item.version


def test_an_item_is_framed_once_per_wire_however_many_followers_write_it():
    item = Item(ENTRY, 7, "move", b"{}", 7)
    counting, other = _Counting(), _Counting()
    for _follower in range(1000):
        assert frame(counting, item) == b"<7>"
    assert frames(other, [item, item]) == b"<7><7>"
    assert (counting.encoded, other.encoded) == (1, 1)
    assert frame(SSE, item) == b"id: 7\nevent: move\ndata: {}\n\n"  # each wire its own
