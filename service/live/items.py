"""The items of a game's feed, whatever the wire, and the one rule that turns a follower's
items into what its client is sent.

An :class:`Item` is a plain value: what it is (its kind), the version it brings the
client to, the name of its event and its payload (JSON, serialized once).  The hub hands
the same items to every follower of a game; a stream's wire
(:mod:`service.live.wires`) frames them into bytes as it writes them.

The rule (:func:`deliver`) is the same for a stream served by a thread
(:meth:`service.live.streams.EventStreams.frames`) and for a stream whose connection is
attached to its follower (:class:`service.live.follower.Follower`); they differ only in
what they do when the client is behind: the thread catches up from the journal, the
attached connection is closed and its client resumes from its last version (an event
stream's ``Last-Event-ID``).

This module imports nothing of the app: the events group's handler imports what it needs
of the feed in gunicorn's arbiter, before gevent patches the process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from service.engine.journal import FeedEntry
    from service.game.record import StoredGame

# --- what the hub hands a follower ------------------------------------------------------
#: A position in a feed: a game's version, or a board's feed entry ``(ms, n)``.
Position = int | tuple[int, int]
ENTRY, GAME, SYNC, END, DELETED, BEAT = "entry", "game", "sync", "end", "deleted", "beat"


@dataclass(frozen=True, slots=True)
class Item:
    """One item of a game's feed:

    - ``ENTRY``: the entry of version ``version`` (event ``move`` or ``undo``), in
      version order;
    - ``GAME``: the whole game at ``version``, to start from (only a stream's catch-up
      sends it, to a client ahead of the stored game);
    - ``SYNC``: the game's channel (re)started from the stored game at ``version``,
      without entries for what came before (nothing is sent for it);
    - ``END``: the game is over at ``version`` (event ``end``);
    - ``DELETED``: the game was deleted or expired (event ``deleted``);
    - ``BEAT``: nothing reached the follower for a heartbeat period.

    ``version`` is the item's position in its feed: a game's version (an int), or a
    board's feed entry (``(ms, n)`` of its stream id, :mod:`service.live.board`); an
    ``ENTRY`` follows the position ``previous`` (None: ``version - 1``, a game's).

    ``data`` is the event's payload, one line of JSON; ``event_id`` the version a client
    that got the item resumes from (the entries and the whole game carry one; the end
    and a deletion do not).  ``framed`` holds the item's bytes on each wire that framed
    it (:func:`service.live.wires.frame`): an item shared by many followers is framed once
    per wire."""

    kind: str
    version: Position
    event: str = ""
    data: bytes = b""
    event_id: int | str | None = None
    previous: Position | None = None
    framed: dict = field(default_factory=dict, init=False, repr=False, compare=False)


#: The heartbeat, the same item for every follower.
BEAT_ITEM = Item(BEAT, 0)


def entry_item(change: FeedEntry) -> Item:
    """The entry of one version (event ``move`` or ``undo``)."""
    return Item(ENTRY, change.version, change.kind, orjson.dumps(change.entry()),
                change.version)


def sync_item(version: int) -> Item:
    return Item(SYNC, version)


def game_item(game_id: str, stored: StoredGame) -> Item:
    """The whole game, to start from (a client ahead of the stored game)."""
    return Item(GAME, stored.version, GAME, orjson.dumps({"version": stored.version,
                                                          "game": stored.public(game_id)}),
                stored.version)


def end_item(game_id: str, stored: StoredGame) -> Item:
    return Item(END, stored.version, END, orjson.dumps({"version": stored.version,
                                                        "game": stored.public(game_id)}))


def deleted_item(game_id: str) -> Item:
    return Item(DELETED, 0, DELETED, orjson.dumps({"id": game_id}))


# --- the delivery rule ------------------------------------------------------------------
#: What follows a delivery: the stream goes on; it ended (its ``end`` or ``deleted``
#: event is the last thing sent); or a version is missing (the client is behind).
FOLLOWING, FINISHED, BEHIND = "following", "finished", "behind"


def deliver(items: Iterable[Item], sent: Position, *, lagging: bool = False
            ) -> tuple[list[Item], Position, str]:
    """What a client that has every version up to ``sent`` is sent of ``items``:
    ``(sending, sent, outcome)``, ``sent`` being the version the client has once it got
    the items of ``sending``.

    - an ``ENTRY`` that follows ``sent`` (the next version of a game, the next entry of a
      board's feed) is sent; one already sent is left out; one further on would leave
      something missing: ``BEHIND``;
    - a ``SYNC`` at ``sent`` changes nothing; at another version the client does not
      have the game the channel starts from: ``BEHIND``;
    - an ``END`` at ``sent`` is sent and ``FINISHED`` the stream; at another version the
      client misses the versions before it: ``BEHIND``;
    - a ``DELETED`` is sent and ``FINISHED`` the stream;
    - ``BEAT`` items make one heartbeat, when nothing else is sent.

    A ``lagging`` follower (the hub dropped its items) is ``BEHIND`` at once.  Nothing
    after a ``BEHIND`` or a ``FINISHED`` item is looked at; on ``BEHIND``, ``sending`` is
    what came before the gap."""
    sending: list[Item] = []
    if lagging:
        return sending, sent, BEHIND
    beat = None
    for item in items:
        kind = item.kind
        if kind == ENTRY:
            version = item.version
            previous = version - 1 if item.previous is None else item.previous
            if previous == sent:
                sending.append(item)
                sent = version
            elif version > sent:
                return sending, sent, BEHIND
        elif kind == BEAT:
            beat = item
        elif kind == SYNC:
            if item.version != sent:
                return sending, sent, BEHIND
        elif kind == END:
            if item.version != sent:
                return sending, sent, BEHIND
            sending.append(item)
            return sending, sent, FINISHED
        elif kind == DELETED:
            sending.append(item)
            return sending, sent, FINISHED
    if not sending and beat is not None:
        sending.append(beat)
    return sending, sent, FOLLOWING
