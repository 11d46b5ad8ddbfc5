"""Server-Sent Events: the frames of the feed, the items the hub hands a follower, and the
one rule that turns a follower's items into what its client is sent.

The rule (:func:`deliver`) is the same for a stream served by a thread
(:meth:`service.live.streams.EventStreams.frames`) and for a stream whose connection is
attached to its follower (:class:`service.live.follower.Follower`); they differ only in
what they do when the client is behind: the thread catches up from the journal, the
attached connection is closed and its client resumes with ``Last-Event-ID``.

This module imports nothing of the app: the events group's handler imports what it needs
of the feed in gunicorn's arbiter, before gevent patches the process.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

import orjson

if TYPE_CHECKING:
    from service.engine.journal import Change
    from service.game.record import StoredGame

#: Set in the WSGI environment by a server that can attach a stream's connection to its
#: follower (:mod:`service.runtime.events_process`).
ATTACH_ENVIRON = "patience.attach"
#: What an idle stream sends every heartbeat period.
HEARTBEAT = b": heartbeat\n\n"


def frame(event: str, data: bytes, event_id: int | None = None) -> bytes:
    """One Server-Sent Event (``data`` is one line of JSON)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\n".encode() + b"data: " + data + b"\n\n"


def entry_frame(change: Change) -> bytes:
    """The entry of one version (event ``move`` or ``undo``)."""
    return frame(change.kind, orjson.dumps(change.entry()), change.version)


def game_frame(game_id: str, stored: StoredGame) -> bytes:
    """The whole game, to start from (a client ahead of the stored game)."""
    return frame("game", orjson.dumps({"version": stored.version,
                                       "game": stored.public(game_id)}), stored.version)


def end_frame(game_id: str, stored: StoredGame) -> bytes:
    return frame("end", orjson.dumps({"version": stored.version,
                                      "game": stored.public(game_id)}))


def deleted_frame(game_id: str) -> bytes:
    return frame("deleted", orjson.dumps({"id": game_id}))


# --- what the hub hands a follower ------------------------------------------------------
FRAME, SYNC, END, DELETED, BEAT = "frame", "sync", "end", "deleted", "beat"


class Item(NamedTuple):
    """One thing the hub hands a follower:

    - ``FRAME``: the entry of version ``version`` (``data``), in version order;
    - ``SYNC``: the game's channel (re)started from the stored game at ``version``,
      without frames for what came before;
    - ``END``: the game is over at ``version`` (``data`` is the ``end`` event);
    - ``DELETED``: the game was deleted or expired (``data`` is the ``deleted`` event);
    - ``BEAT``: nothing reached the follower for a heartbeat period (``data`` is the
      heartbeat comment).
    """

    kind: str
    version: int
    data: bytes


BEAT_ITEM = Item(BEAT, 0, HEARTBEAT)

# --- the delivery rule ------------------------------------------------------------------
#: What follows a delivery: the stream goes on; it ended (its ``end`` or ``deleted``
#: event is the last thing sent); or a version is missing (the client is behind).
FOLLOWING, FINISHED, BEHIND = "following", "finished", "behind"


def deliver(items: Iterable[Item], sent: int, *, lagging: bool = False
            ) -> tuple[bytes, int, str]:
    """What a client that has every version up to ``sent`` is sent of ``items``:
    ``(data, sent, outcome)``, ``sent`` being the version the client has once it got
    ``data``.

    - a ``FRAME`` of the next version is sent; one already sent is left out; one past
      the next would leave a version missing: ``BEHIND``;
    - a ``SYNC`` at ``sent`` changes nothing; at another version the client does not
      have the game the channel starts from: ``BEHIND``;
    - an ``END`` at ``sent`` is sent and ``FINISHED`` the stream; at another version the
      client misses the versions before it: ``BEHIND``;
    - a ``DELETED`` is sent and ``FINISHED`` the stream;
    - ``BEAT`` items make one heartbeat, when nothing else is sent.

    A ``lagging`` follower (the hub dropped its items) is ``BEHIND`` at once.  Nothing
    after a ``BEHIND`` or a ``FINISHED`` item is looked at; on ``BEHIND``, ``data`` is
    what came before the gap."""
    if lagging:
        return b"", sent, BEHIND
    out = heartbeat = b""  # a batch is short: its frames are joined as they come
    for kind, version, data in items:
        if kind == FRAME:
            if version == sent + 1:
                out += data
                sent = version
            elif version > sent:
                return out, sent, BEHIND
        elif kind == BEAT:
            heartbeat = data
        elif kind == SYNC:
            if version != sent:
                return out, sent, BEHIND
        elif kind == END:
            if version != sent:
                return out, sent, BEHIND
            return out + data, sent, FINISHED
        elif kind == DELETED:
            return out + data, sent, FINISHED
    return out or heartbeat, sent, FOLLOWING
