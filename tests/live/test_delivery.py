"""The one delivery rule of the live feed (service.live.items.deliver), as a pure function:
what a client that has every version up to ``sent`` is sent of the items the hub handed
its follower, for every kind of item, a client behind, and a lagging follower.  Then the
same rule through a follower attached to a real socket, on a wire of the test's own."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.live.follower import Follower, Limits
from service.live.items import (
    BEAT,
    BEAT_ITEM,
    BEHIND,
    DELETED,
    END,
    ENTRY,
    FINISHED,
    FOLLOWING,
    SYNC,
    Item,
    deliver,
)
from service.live.wires import frames


def entry(version: int) -> Item:
    return Item(ENTRY, version, "move", b"{}", version)


def sync(version: int) -> Item:
    return Item(SYNC, version)


def end(version: int) -> Item:
    return Item(END, version, "end", b"{}")


END_AT_5 = end(5)
GONE = Item(DELETED, 0, "deleted", b"{}")


class Marks:
    """A wire whose frames are easy to read: ``<version>``, ``<end>``, ``<deleted>`` and
    ``<beat>``."""

    content_type = "text/x-marks"

    def preamble(self, retry_ms: int) -> bytes:
        return b""

    def encode(self, item: Item) -> bytes:
        if item.kind == ENTRY:
            return b"<%d>" % item.version
        return {END: b"<end>", DELETED: b"<deleted>", BEAT: b"<beat>", SYNC: b""}[item.kind]


MARKS = Marks()


def sent_as(items: list[Item], sent: int, *, lagging: bool = False) -> tuple[bytes, int, str]:
    """What :func:`deliver` sends of ``items``, on the :class:`Marks` wire."""
    sending, sent, outcome = deliver(items, sent, lagging=lagging)
    return frames(MARKS, sending), sent, outcome


# --- frames -------------------------------------------------------------------------------
def test_the_next_versions_are_sent_in_order():
    assert sent_as([entry(4), entry(5), entry(6)], 3) == (b"<4><5><6>", 6, FOLLOWING)


def test_versions_already_sent_are_left_out():
    assert sent_as([entry(2), entry(3), entry(4)], 3) == (b"<4>", 4, FOLLOWING)
    assert sent_as([entry(1)], 3) == (b"", 3, FOLLOWING)


def test_a_missing_version_leaves_the_client_behind_after_what_came_before_it():
    # 6 is missing: 4 and 5 go, 7 and what follows are not looked at.
    assert sent_as([entry(4), entry(5), entry(7), GONE], 3) == (b"<4><5>", 5, BEHIND)
    assert sent_as([entry(5)], 3) == (b"", 3, BEHIND)


# --- sync ---------------------------------------------------------------------------------
def test_a_sync_at_the_clients_version_changes_nothing():
    assert sent_as([sync(3)], 3) == (b"", 3, FOLLOWING)
    # A starting channel's last entries, then its sync: the client read the game earlier
    # than the hub and gets what it misses.
    recent = [entry(version) for version in range(1, 6)] + [Item(SYNC, 5, b"")]
    assert sent_as(recent, 3) == (b"<4><5>", 5, FOLLOWING)


@pytest.mark.parametrize("version", [2, 4, 40])
def test_a_sync_at_another_version_leaves_the_client_behind(version):
    assert sent_as([sync(version), entry(4)], 3) == (b"", 3, BEHIND)


# --- end and deleted ----------------------------------------------------------------------
def test_the_end_at_the_clients_version_finishes_the_stream():
    assert sent_as([END_AT_5], 5) == (b"<end>", 5, FINISHED)
    assert sent_as([entry(4), entry(5), END_AT_5, entry(6)], 3) == (b"<4><5><end>", 5,
                                                                     FINISHED)


@pytest.mark.parametrize("sent", [3, 4, 6])
def test_the_end_at_another_version_leaves_the_client_behind(sent):
    data, _sent, outcome = sent_as([END_AT_5], sent)
    assert (data, outcome) == (b"", BEHIND)


def test_a_deleted_game_finishes_the_stream_whatever_the_version():
    assert sent_as([GONE], 3) == (b"<deleted>", 3, FINISHED)
    assert sent_as([entry(4), GONE, entry(5)], 3) == (b"<4><deleted>", 4, FINISHED)
    assert sent_as([entry(5), GONE], 3) == (b"", 3, BEHIND)  # the gap comes first


# --- heartbeats ---------------------------------------------------------------------------
def test_beats_make_one_heartbeat_when_nothing_else_is_sent():
    assert sent_as([BEAT_ITEM], 3) == (b"<beat>", 3, FOLLOWING)
    assert sent_as([BEAT_ITEM, BEAT_ITEM], 3) == (b"<beat>", 3, FOLLOWING)
    assert sent_as([BEAT_ITEM, entry(2)], 3) == (b"<beat>", 3, FOLLOWING)
    assert sent_as([BEAT_ITEM, entry(4)], 3) == (b"<4>", 4, FOLLOWING)
    assert sent_as([entry(4), BEAT_ITEM], 3) == (b"<4>", 4, FOLLOWING)


def test_no_heartbeat_for_a_client_behind_or_a_finished_stream():
    assert sent_as([BEAT_ITEM, entry(5)], 3) == (b"", 3, BEHIND)
    assert sent_as([BEAT_ITEM, GONE], 3) == (b"<deleted>", 3, FINISHED)


# --- lagging and empty --------------------------------------------------------------------
def test_a_lagging_follower_is_behind_whatever_it_holds():
    assert sent_as([entry(4)], 3, lagging=True) == (b"", 3, BEHIND)
    assert sent_as([], 3, lagging=True) == (b"", 3, BEHIND)
    assert sent_as([BEAT_ITEM], 3, lagging=True) == (b"", 3, BEHIND)


def test_nothing_to_deliver():
    assert sent_as([], 3) == (b"", 3, FOLLOWING)


def test_the_items_sent_are_those_handed():
    """What is sent is the hub's own items, not copies: a wire frames an item shared by
    many followers once."""
    items = [entry(4), entry(5)]
    sending, _sent, _outcome = deliver(items, 3)
    assert all(sent is handed for sent, handed in zip(sending, items, strict=True))
    assert deliver([BEAT_ITEM], 3)[0][0] is BEAT_ITEM


# --- one item at a time, as an attached follower delivers them -----------------------------
def _one_at_a_time(items: list[Item], sent: int) -> tuple[bytes, int, str]:
    parts = []
    for item in items:
        data, sent, outcome = sent_as([item], sent)
        parts.append(data)
        if outcome != FOLLOWING:
            return b"".join(parts), sent, outcome
    return b"".join(parts), sent, FOLLOWING


_items = st.lists(st.one_of(
    st.integers(0, 12).map(entry),
    st.integers(0, 12).map(sync),
    st.integers(0, 12).map(end),
    st.just(GONE)), max_size=12)


@given(_items, st.integers(0, 10))
def test_items_delivered_one_at_a_time_or_at_once_send_the_same(items, sent):
    """A stream served by a thread takes its items in batches, an attached follower gets
    them one by one: without heartbeats, both send the same bytes to the same end."""
    assert _one_at_a_time(items, sent) == sent_as(items, sent)


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
        self.follower.attach(server, chunked=chunked, sent=sent, wire=MARKS,
                             on_end=self._on_end)

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
    attached.push(entry(2), entry(4), BEAT_ITEM, entry(5), END_AT_5, entry(6))
    assert attached.received() == (b"3\r\n<4>\r\n6\r\n<beat>\r\n3\r\n<5>\r\n"
                                   b"5\r\n<end>\r\n0\r\n\r\n")
    assert attached.follower.closed
    assert attached.ended == 1


def test_an_attached_follower_behind_is_cut_off_without_the_last_chunk():
    attached = _Attached(3, chunked=True)
    attached.push(entry(4), entry(6), entry(5))
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
        for item in (entry(3), entry(4), GONE):
            follower.push(item)
    server, client = socket.socketpair()
    server.setblocking(False)
    client.settimeout(5)
    ended = []
    follower.attach(server, chunked=False, sent=3, wire=MARKS,
                    on_end=lambda: ended.append(True))
    got = b""
    while chunk := client.recv(65536):
        got += chunk
    client.close()
    assert got == b"<4><deleted>"
    assert ended == [True]
