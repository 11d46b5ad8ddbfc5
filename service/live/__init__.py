"""The live feed: a game's changes as they are stored, to every reader that follows it.

:mod:`~service.live.feed` is the app's events feed (JSON reads and streams);
:mod:`~service.live.streams` serves a stream, :mod:`~service.live.sse` holds its frames and
the one rule of what a follower sends; :mod:`~service.live.hub` fans the process's one
subscription (:mod:`~service.live.subscription`) out to the channels of the followed games
(:mod:`~service.live.channel`) and their followers (:mod:`~service.live.follower`, written
to an attached client by :mod:`~service.live.connection`).  The composition root
(:mod:`service.services`) builds the feed; the views and the gunicorn hooks reach it
there.  This module imports nothing.
"""
