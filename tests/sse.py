"""A small Server-Sent Events reader for the tests (in-process and over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One block of an event stream: an event (``event``, ``id``, ``data``), a ``retry:``
    hint, or a comment (a heartbeat)."""

    event: str | None = None
    id: str | None = None
    data: str | None = None
    retry: int | None = None
    comment: str | None = None

    def json(self):
        return json.loads(self.data)


def parse_block(block: bytes) -> Message:
    fields: dict[str, list[str]] = {}
    comment = None
    for line in block.decode("utf-8").split("\n"):
        if line.startswith(":"):
            comment = line[1:].strip()
            continue
        name, _, value = line.partition(":")
        fields.setdefault(name, []).append(value.removeprefix(" "))
    retry = fields.get("retry")
    return Message(event=(fields.get("event") or [None])[-1], id=(fields.get("id") or [None])[-1],
                   data="\n".join(fields["data"]) if "data" in fields else None,
                   retry=int(retry[-1]) if retry else None, comment=comment)


def messages(chunks: Iterable[bytes]) -> Iterator[Message]:
    """The messages of a stream, whatever its chunks' boundaries (``\\n\\n`` ends one)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            if block:
                yield parse_block(block)


def events_only(stream: Iterator[Message]) -> Iterator[Message]:
    """The events of a stream, without ``retry:`` hints and heartbeats."""
    return (message for message in stream if message.event is not None)
