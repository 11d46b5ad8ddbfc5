"""A day's board's feed as the live feed's items (service.live.board), pure: the positions
of its stream ids, the chain of each entry to the one before, what a starting channel
hands out, and the one delivery rule (service.live.items.deliver) over them: an entry
already sent is left out, a missing one leaves the client behind."""

from __future__ import annotations

import orjson

from service.live.board import BoardChannel, event_id, items_of, position
from service.live.items import BEHIND, ENTRY, FOLLOWING, SYNC, deliver
from service.live.wires.sse import SSE


def feed(*ids: str) -> list[tuple[str, dict]]:
    """Feed entries of the given ids, as the store reads them."""
    return [(entry_id, {"player": f"p{n}", "rank": "1",
                        "entry": orjson.dumps({"game_id": f"g{n}", "outcome": "won"}).decode()})
            for n, entry_id in enumerate(ids)]


def test_positions_of_stream_ids_order_as_the_stream_does():
    assert position("0") == (0, 0)
    assert position("1700000000000-3") == (1700000000000, 3)
    assert position("9-10") > position("9-9") > position("8-99")
    assert event_id((0, 0)) == "0"
    assert event_id((12, 3)) == "12-3"


def test_each_item_follows_the_entry_before_it_and_frames_with_its_stream_id():
    items = items_of(feed("5-0", "5-1", "7-0"), (4, 2))
    assert [(i.kind, i.version, i.previous, i.event_id) for i in items] == [
        (ENTRY, (5, 0), (4, 2), "5-0"), (ENTRY, (5, 1), (5, 0), "5-1"),
        (ENTRY, (7, 0), (5, 1), "7-0")]
    data = orjson.loads(items[0].data)
    assert (data["id"], data["player_id"], data["rank"]) == ("5-0", "p0", 1)
    assert data["entry"]["game_url"] == "/v1/games/g0"
    assert SSE.encode(items[0]).startswith(b"id: 5-0\nevent: entry\ndata: {")


def test_the_rule_sends_the_next_entries_leaves_out_those_sent_and_sees_a_gap():
    items = items_of(feed("5-0", "5-1", "7-0"), (0, 0))
    assert deliver(items, (0, 0)) == (items, (7, 0), FOLLOWING)
    assert deliver(items, (5, 1)) == (items[2:], (7, 0), FOLLOWING)
    assert deliver(items, (7, 0)) == ([], (7, 0), FOLLOWING)
    # The client has 5-0 only, and is handed 7-0 after 5-1: behind (5-1 would be missed).
    assert deliver(items[2:], (5, 0)) == ([], (5, 0), BEHIND)


def test_a_starting_channel_hands_its_last_entries_then_a_sync_and_then_what_is_new():
    channel = BoardChannel(None, "clock", "2026-12-05")
    assert channel.name == "daily:{daily:clock}:2026-12-05:feed"
    first = channel.advance((False, feed(*(f"{n}-0" for n in range(1, 34)))))
    # 33 read (RECENT and the one before them): 32 handed out, after 1-0.
    assert [i.kind for i in first] == [ENTRY] * 32 + [SYNC]
    assert first[0].previous == (1, 0)
    assert first[-1].version == (33, 0)
    assert deliver(first, (33, 0)) == ([], (33, 0), FOLLOWING)
    assert deliver(first, (20, 0))[1:] == ((33, 0), FOLLOWING)
    assert channel.advance((True, [])) == []
    more = channel.advance((True, feed("40-0")))
    assert [(i.version, i.previous) for i in more] == [((40, 0), (33, 0))]

    empty = BoardChannel(None, "clock", "2026-12-05")
    assert [(i.kind, i.version) for i in empty.advance((False, []))] == [(SYNC, (0, 0))]
    assert deliver([*empty.advance((True, feed("1-0")))], (0, 0))[2] == FOLLOWING
