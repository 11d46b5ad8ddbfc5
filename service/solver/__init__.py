"""The solver's process and what the app asks of it: winnable deals and the analyses of
finished deals, around the searches of :mod:`service.engine.search`.

:mod:`.features` is what both sides share (the requests' part: a winnable deal dealt from
its pool or searched for, an analysis searched briefly or queued; the settings);
:mod:`.worker` is the worker process, ``python -m service.solver.worker``, which fills the
pools and computes the queued analyses.  Their Redis side is
:mod:`service.storage.solver`.
"""
