"""A day's board's feed, followed like a game's: the entries of its stream
(``daily:{daily:<variant>}:<day>:feed``, :mod:`service.storage.daily_store`), each an entry
that landed in the board's top ``DAILY_LIVE_TOP``, written by the same script that writes
the entry, which publishes the new entry's id on the board's channel
(:func:`service.storage.keys.board_channel`, the stream's own name).

A position in a board's feed is its stream entry's id, ``<ms>-<n>``, as ``(ms, n)``;
``0`` is before the first.  Each item of an entry carries the id of the entry before it
(:attr:`~service.live.items.Item.previous`), so that the delivery rule
(:func:`~service.live.items.deliver`) sees a missing entry as it sees a missing version
of a game.  A board has no end: its stream ends after ``SSE_MAX_SECONDS`` like any other,
and its client resumes with ``Last-Event-ID``.
"""

from __future__ import annotations

import re

import orjson

from service.daily.boards import feed_event
from service.live.channel import RECENT, Channel
from service.live.items import ENTRY, Item, Position, sync_item
from service.storage import keys
from service.storage.daily_store import DailyStore

#: The id of a board's feed entry, or ``0`` (before the first).
EVENT_ID = re.compile(r"0|[0-9]{1,19}-[0-9]{1,19}")
#: The name of a board's feed entry's event.
ENTRY_EVENT = "entry"
#: Entries read per round trip.
PAGE = 1000


def position(event_id: str) -> tuple[int, int]:
    """The position of a feed entry id (``0``: ``(0, 0)``)."""
    ms, _, n = event_id.partition("-")
    return int(ms), int(n or 0)


def event_id(at: tuple[int, int]) -> str:
    return "0" if at == (0, 0) else f"{at[0]}-{at[1]}"


def items_of(entries: list[tuple[str, dict]], previous: Position) -> list[Item]:
    """The items of feed ``entries`` (in order), the first one following ``previous``."""
    items = []
    for entry_id, fields in entries:
        at = position(entry_id)
        items.append(Item(ENTRY, at, ENTRY_EVENT, orjson.dumps(feed_event(entry_id, fields)),
                          entry_id, previous))
        previous = at
    return items


class BoardChannel(Channel):
    """A day's board's channel: its feed read as far as its followers were handed it."""

    __slots__ = ("day", "last", "store", "variant")

    def __init__(self, store: DailyStore, variant: str, day: str):
        super().__init__(keys.board_channel(variant, day))
        self.store = store
        self.variant = variant
        self.day = day
        self.last: tuple[int, int] | None = None  # None until the hub read the feed

    def read(self) -> tuple[bool, list[tuple[str, dict]]]:
        """``(started, entries)``: those after what was handed out; for a channel that
        starts, its last few (and the one before them)."""
        if self.last is None:
            return False, self.store.feed_tail(self.variant, self.day, RECENT + 1)
        return True, self.store.feed(self.variant, self.day, event_id(self.last), PAGE)

    def advance(self, found: tuple[bool, list[tuple[str, dict]]]) -> list[Item]:
        """A channel that starts hands out its last few entries, then a ``SYNC`` at the
        last; then each new entry."""
        started, entries = found
        if started:
            if not entries:
                return []
            items = items_of(entries, self.last)
        else:
            previous = (0, 0)
            if len(entries) > RECENT:
                previous = position(entries[0][0])
                entries = entries[1:]
            items = items_of(entries, previous)
            items.append(sync_item(items[-1].version if items else previous))
        self.last = items[-1].version
        return items


def catch_up(store: DailyStore, variant: str, day: str, after: tuple[int, int]
             ) -> tuple[list[Item], tuple[int, int], bool]:
    """The items of every entry of the board's feed after ``after``, the position they
    reach (a client ahead of the feed, with an id of no entry, is brought back to its
    last entry), and False: a board's feed does not end."""
    items: list[Item] = []
    sent = after
    while True:
        entries = store.feed(variant, day, event_id(sent), PAGE)
        items.extend(items_of(entries, sent))
        if items:
            sent = items[-1].version
        if len(entries) < PAGE:
            break
    if not items and after != (0, 0):
        last = store.feed_tail(variant, day, 1)
        if last and position(last[0][0]) < after:
            sent = position(last[0][0])
        elif not last:
            sent = (0, 0)
    return items, sent, False
