"""The live feed: a game's changes as they are stored, and a day's board's entries as they
land in its top, to every reader that follows them.

:mod:`~service.live.feed` is the app's feed (JSON reads and streams, a stream being one
open response that delivers a game's feed); :mod:`~service.live.streams` serves a stream;
:mod:`~service.live.items` holds the feed's items, whatever the wire, and the one rule of
what a follower sends; :mod:`~service.live.wires` frames the items into bytes at the edge,
one module per wire (:mod:`~service.live.wires.sse`, Server-Sent Events), and
:mod:`~service.live.negotiation` decides which requests are a stream and on which wire;
:mod:`~service.live.hub` fans the process's one subscription
(:mod:`~service.live.subscription`) out to the channels of the followed games
(:mod:`~service.live.channel`) and boards (:mod:`~service.live.board`) and their
followers (:mod:`~service.live.follower`, written to an attached client by
:mod:`~service.live.stream_socket`).  The composition root
(:mod:`service.services`) builds the feed; the views and the gunicorn hooks reach it
there.  This module imports nothing.
"""
