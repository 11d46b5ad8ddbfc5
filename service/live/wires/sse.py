"""The Server-Sent Events wire (``text/event-stream``): what an ``EventSource`` reads.

Each item is one event: ``id: <version>`` (the entries and the whole game; a board's
entries carry their feed's id, ``<ms>-<n>``; from which a
reconnecting client resumes with ``Last-Event-ID``), ``event: <name>`` and one line of
JSON after ``data:``; a heartbeat is a comment, and a stream starts with ``retry:``.
"""

from __future__ import annotations

from service.live.items import BEAT, SYNC, Item

#: What an idle stream sends every heartbeat period.
HEARTBEAT = b": heartbeat\n\n"


class ServerSentEvents:
    """The Server-Sent Events wire (:class:`service.live.wires.Wire`)."""

    content_type = "text/event-stream"

    def __repr__(self) -> str:
        return "<wire text/event-stream>"

    def preamble(self, retry_ms: int) -> bytes:
        return b"retry: %d\n\n" % retry_ms

    def encode(self, item: Item) -> bytes:
        if item.kind == BEAT:
            return HEARTBEAT
        if item.kind == SYNC:
            return b""
        head = b"id: %s\n" % str(item.event_id).encode() if item.event_id is not None else b""
        return b"%sevent: %s\ndata: %s\n\n" % (head, item.event.encode(), item.data)


#: The one Server-Sent Events wire.
SSE = ServerSentEvents()
