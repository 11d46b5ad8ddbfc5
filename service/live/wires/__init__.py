"""The wires of a game's feed: how a stream writes the feed's items on its connection.

A :class:`Wire` frames the transport-neutral items of :mod:`service.live.items` into
bytes at the edge, where a stream writes them (:mod:`service.live.streams` for a stream
served by a thread, :mod:`service.live.follower` for an attached one); nothing before
that edge knows the wire.  Each wire is a module of this package (:mod:`.sse`, Server-Sent
Events); :mod:`service.live.negotiation` lists them and picks the one a request asks for.

This package imports nothing of the app (see :mod:`service.live.items`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from service.live.items import Item


class Wire(Protocol):
    """One way of writing a game's feed on a stream's connection."""

    #: The response's media type, which a client names in its ``Accept`` header.
    content_type: str

    def preamble(self, retry_ms: int) -> bytes:
        """What a stream starts with: ``retry_ms``, how long a client whose stream ended
        waits before it resumes."""

    def encode(self, item: Item) -> bytes:
        """The bytes of ``item`` (b"" for an item its clients are not sent, a ``SYNC``);
        called once per item and wire, through :func:`frame`."""


def frame(wire: Wire, item: Item) -> bytes:
    """``item`` on ``wire``: encoded once per wire, however many followers write it."""
    framed = item.framed
    data = framed.get(wire)
    if data is None:
        data = framed[wire] = wire.encode(item)
    return data


def frames(wire: Wire, items: Iterable[Item]) -> bytes:
    """``items`` on ``wire``, one after the other."""
    return b"".join([frame(wire, item) for item in items])
