"""The one delivery rule of the live feed (service.live.sse.deliver), as a pure function:
what a client that has every version up to ``sent`` is sent of the items the hub handed
its follower, for every kind of item, a client behind, and a lagging follower.  Then the
same rule through a follower attached to a real socket."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.live.follower import Follower, Limits
from service.live.sse import (
    BEAT_ITEM,
    BEHIND,
    DELETED,
    END,
    FINISHED,
    FOLLOWING,
    FRAME,
    HEARTBEAT,
    SYNC,
    Item,
    deliver,
)


def frame(version: int) -> Item:
    return Item(FRAME, version, b"<%d>" % version)


END_AT_5 = Item(END, 5, b"<end>")
GONE = Item(DELETED, 0, b"<deleted>")


# --- frames -------------------------------------------------------------------------------
def test_the_next_versions_are_sent_in_order():
    assert deliver([frame(4), frame(5), frame(6)], 3) == (b"<4><5><6>", 6, FOLLOWING)


def test_versions_already_sent_are_left_out():
    assert deliver([frame(2), frame(3), frame(4)], 3) == (b"<4>", 4, FOLLOWING)
    assert deliver([frame(1)], 3) == (b"", 3, FOLLOWING)


def test_a_missing_version_leaves_the_client_behind_after_what_came_before_it():
    # 6 is missing: 4 and 5 go, 7 and what follows are not looked at.
    assert deliver([frame(4), frame(5), frame(7), GONE], 3) == (b"<4><5>", 5, BEHIND)
    assert deliver([frame(5)], 3) == (b"", 3, BEHIND)


# --- sync ---------------------------------------------------------------------------------
def test_a_sync_at_the_clients_version_changes_nothing():
    assert deliver([Item(SYNC, 3, b"")], 3) == (b"", 3, FOLLOWING)
    # A starting channel's last entries, then its sync: the client read the game earlier
    # than the hub and gets what it misses.
    recent = [frame(version) for version in range(1, 6)] + [Item(SYNC, 5, b"")]
    assert deliver(recent, 3) == (b"<4><5>", 5, FOLLOWING)


@pytest.mark.parametrize("version", [2, 4, 40])
def test_a_sync_at_another_version_leaves_the_client_behind(version):
    assert deliver([Item(SYNC, version, b""), frame(4)], 3) == (b"", 3, BEHIND)


# --- end and deleted ----------------------------------------------------------------------
def test_the_end_at_the_clients_version_finishes_the_stream():
    assert deliver([END_AT_5], 5) == (b"<end>", 5, FINISHED)
    assert deliver([frame(4), frame(5), END_AT_5, frame(6)], 3) == (b"<4><5><end>", 5,
                                                                     FINISHED)


@pytest.mark.parametrize("sent", [3, 4, 6])
def test_the_end_at_another_version_leaves_the_client_behind(sent):
    data, _sent, outcome = deliver([END_AT_5], sent)
    assert (data, outcome) == (b"", BEHIND)


def test_a_deleted_game_finishes_the_stream_whatever_the_version():
    assert deliver([GONE], 3) == (b"<deleted>", 3, FINISHED)
    assert deliver([frame(4), GONE, frame(5)], 3) == (b"<4><deleted>", 4, FINISHED)
    assert deliver([frame(5), GONE], 3) == (b"", 3, BEHIND)  # the gap comes first


# --- heartbeats ---------------------------------------------------------------------------
def test_beats_make_one_heartbeat_when_nothing_else_is_sent():
    assert deliver([BEAT_ITEM], 3) == (HEARTBEAT, 3, FOLLOWING)
    assert deliver([BEAT_ITEM, BEAT_ITEM], 3) == (HEARTBEAT, 3, FOLLOWING)
    assert deliver([BEAT_ITEM, frame(2)], 3) == (HEARTBEAT, 3, FOLLOWING)
    assert deliver([BEAT_ITEM, frame(4)], 3) == (b"<4>", 4, FOLLOWING)
    assert deliver([frame(4), BEAT_ITEM], 3) == (b"<4>", 4, FOLLOWING)


def test_no_heartbeat_for_a_client_behind_or_a_finished_stream():
    assert deliver([BEAT_ITEM, frame(5)], 3) == (b"", 3, BEHIND)
    assert deliver([BEAT_ITEM, GONE], 3) == (b"<deleted>", 3, FINISHED)


# --- lagging and empty --------------------------------------------------------------------
def test_a_lagging_follower_is_behind_whatever_it_holds():
    assert deliver([frame(4)], 3, lagging=True) == (b"", 3, BEHIND)
    assert deliver([], 3, lagging=True) == (b"", 3, BEHIND)
    assert deliver([BEAT_ITEM], 3, lagging=True) == (b"", 3, BEHIND)


def test_nothing_to_deliver():
    assert deliver([], 3) == (b"", 3, FOLLOWING)


# --- one item at a time, as an attached follower delivers them -----------------------------
def _one_at_a_time(items: list[Item], sent: int) -> tuple[bytes, int, str]:
    parts = []
    for item in items:
        data, sent, outcome = deliver([item], sent)
        parts.append(data)
        if outcome != FOLLOWING:
            return b"".join(parts), sent, outcome
    return b"".join(parts), sent, FOLLOWING


_items = st.lists(st.one_of(
    st.integers(0, 12).map(frame),
    st.integers(0, 12).map(lambda version: Item(SYNC, version, b"")),
    st.integers(0, 12).map(lambda version: Item(END, version, b"<end>")),
    st.just(GONE)), max_size=12)


@given(_items, st.integers(0, 10))
def test_items_delivered_one_at_a_time_or_at_once_send_the_same(items, sent):
    """A stream served by a thread takes its items in batches, an attached follower gets
    them one by one: without heartbeats, both send the same bytes to the same end."""
    assert _one_at_a_time(items, sent) == deliver(items, sent)


# --- through an attached follower ---------------------------------------------------------
class _Attached:
    """A follower attached to one end of a socket pair, at version ``sent``."""

    def __init__(self, sent: int, *, chunked: bool = False):
        self.lock = threading.RLock()
        self.left: list[Follower] = []
        self.ended = 0
        self.follower = Follower("g", deadline=float("inf"), lock=self.lock,
                                 limits=Limits(backlog=8, backlog_bytes=1 << 16, patience=5),
                                 leave=self.left.append)
        server, self.client = socket.socketpair()
        server.setblocking(False)
        self.client.settimeout(5)
        self.follower.attach(server, chunked=chunked, sent=sent, on_end=self._on_end)

    def _on_end(self):
        self.ended += 1

    def push(self, *items: Item) -> None:
        with self.lock:
            for item in items:
                self.follower.push(item)

    def received(self) -> bytes:
        """Everything the client gets until the connection closes."""
        got = b""
        while chunk := self.client.recv(65536):
            got += chunk
        self.client.close()
        return got


def test_an_attached_follower_writes_the_next_versions_and_the_end():
    attached = _Attached(3, chunked=True)
    attached.push(frame(2), frame(4), BEAT_ITEM, frame(5), END_AT_5, frame(6))
    assert attached.received() == (b"3\r\n<4>\r\n" + b"%x\r\n" % len(HEARTBEAT) + HEARTBEAT
                                   + b"\r\n3\r\n<5>\r\n5\r\n<end>\r\n0\r\n\r\n")
    assert attached.follower.closed
    assert attached.ended == 1


def test_an_attached_follower_behind_is_cut_off_without_the_last_chunk():
    attached = _Attached(3, chunked=True)
    attached.push(frame(4), frame(6), frame(5))
    # No terminating chunk: the client sees a cut response and resumes from version 4.
    assert attached.received() == b"3\r\n<4>\r\n"
    assert attached.follower.closed
    assert attached.ended == 1


def test_items_handed_before_the_attachment_follow_the_same_rule():
    lock = threading.RLock()
    follower = Follower("g", deadline=float("inf"), lock=lock,
                        limits=Limits(backlog=8, backlog_bytes=1 << 16, patience=5),
                        leave=lambda _follower: None)
    with lock:
        for item in (frame(3), frame(4), GONE):
            follower.push(item)
    server, client = socket.socketpair()
    server.setblocking(False)
    client.settimeout(5)
    ended = []
    follower.attach(server, chunked=False, sent=3, on_end=lambda: ended.append(True))
    got = b""
    while chunk := client.recv(65536):
        got += chunk
    client.close()
    assert got == b"<4><deleted>"
    assert ended == [True]
