"""Many commands of many hash slots in few round trips: one per master (one in all on
one Redis), each followed by a ``WAIT`` when writes wait for replicas.  What the close
of a day of the daily deal sends (:mod:`service.daily`): thousands of game writes, their
players' and their board's, each one slot's script, without a round trip each.

On a cluster every master's round trip is sent before any reply is read: the masters
run theirs at once.  The commands are packed by hiredis directly (redis-py's packing,
which checks each argument in Python, costs more than the command in Redis), and sent
as they are (``run_packed`` of one Redis's connections,
:meth:`~.cluster.ClusterConnections.send_each` on a cluster).

Each round trip loads the scripts it calls first (``SCRIPT LOAD``).  A command whose
reply is a redirection (its slot moved meanwhile), a ``TRYAGAIN`` or an unknown script
(a node failed over between the load and the call) is sent again alone, as the request
path sends it (the script's source instead of its SHA): nothing ran for it the first
time.
"""

from __future__ import annotations

from collections.abc import Sequence

import hiredis
from redis.crc import key_slot
from redis.exceptions import AskError, ClusterDownError, NoScriptError, TryAgainError

from service.storage.backend import Script
from service.storage.cluster import ClusterConnections
from service.storage.game_store import StorageUnavailable

#: One command: the key whose slot it concerns, and the command.
Item = tuple[str, tuple]


def script_call(script: Script, keys: Sequence, args: Sequence) -> Item:
    return keys[0], ("EVALSHA", script.sha, len(keys), *keys, *args)


def run_many(connections, items: list[Item], *, wait: tuple[int, int] | None = None,
             scripts: Sequence[Script] = (), load: bool = True) -> list:
    """The replies of ``items``, in order (errors raise).  ``wait``: (replicas, timeout
    ms) that must confirm the writes of each round trip (StorageUnavailable unless they
    do); ``scripts``: the scripts whose SHAs the items call, for a Redis that does not
    know them yet: loaded first in each round trip (``load``), else an item its node
    does not know the script of is sent again alone with the script's source (the
    request path's few items: no script's source sent every time)."""
    if not items:
        return []
    then = [("WAIT", *wait)] if wait else []
    wait_ms = wait[1] if wait else 0  # the WAIT's reply is read with its own time
    # Each round trip loads its scripts first (a Redis that knows them already keeps
    # them): no item is refused for a script its node does not know.
    loads = [("SCRIPT", "LOAD", script.source) for script in scripts] if load else []
    replies: list = [None] * len(items)
    groups = list(_groups(connections, items))
    sent = [[*loads, *(items[i][1] for i in indexes), *then] for _node, indexes in groups]
    if isinstance(connections, ClusterConnections):
        masters = [number for number, (node, _indexes) in enumerate(groups)
                   if node is not None]
        found_each: list = [None] * len(groups)
        for number, found in zip(masters, connections.send_each(
                [(groups[number][0], _pack(sent[number]), len(sent[number]))
                 for number in masters], wait_ms), strict=True):
            found_each[number] = found
        for number, (node, indexes) in enumerate(groups):
            if node is None:  # a slot without a master: the request path's way
                found_each[number] = connections.run(items[indexes[0]][0], sent[number])
    else:
        found_each = [connections.run_packed(items[indexes[0]][0], _pack(commands),
                                             len(commands), wait_ms)
                      for (_node, indexes), commands in zip(groups, sent, strict=True)]
    failure = next((found for found in found_each if isinstance(found, BaseException)),
                   None)
    if failure is not None:
        raise failure
    for (_node, indexes), found in zip(groups, found_each, strict=True):
        found = found[len(loads):]
        _confirmed(found[len(indexes):], wait)
        for index, reply in zip(indexes, found, strict=False):
            replies[index] = reply
    sources = {script.sha: script.source for script in scripts}
    for index, reply in enumerate(replies):
        if isinstance(reply, Exception):
            replies[index] = _again(connections, items[index], reply, sources, then, wait)
    return replies


def _pack(commands: list[tuple]) -> bytes:
    """``commands`` in the protocol, as redis-py packs them (each argument bytes, text or
    a number)."""
    return b"".join([hiredis.pack_command(command) for command in commands])


def _groups(connections, items: list[Item]):
    """(node, indexes) per master (node None: one Redis, or a slot without a master)."""
    if not isinstance(connections, ClusterConnections):
        yield None, list(range(len(items)))
        return
    by_node: dict[str, tuple] = {}
    lost = []
    for index, (key, _command) in enumerate(items):
        node = connections._master_of(key_slot(key.encode()))
        if node is None:
            lost.append(index)
        else:
            by_node.setdefault(node.name, (node, []))[1].append(index)
    yield from by_node.values()
    for index in lost:
        yield None, [index]


def _confirmed(counts: list, wait: tuple[int, int] | None) -> None:
    if not wait:
        return
    count = counts[0] if counts else 0
    if isinstance(count, Exception):
        raise StorageUnavailable(f"WAIT failed: {count}")
    if count < wait[0]:
        raise StorageUnavailable(f"the writes reached {count} of {wait[0]} replicas within "
                                 f"{wait[1]} ms")


def _again(connections, item: Item, error: Exception, sources: dict, then: list, wait):
    key, command = item
    if isinstance(error, NoScriptError) and command[0] == "EVALSHA":
        command = ("EVAL", sources[command[1]], *command[2:])
    elif not isinstance(error, AskError | TryAgainError | ClusterDownError):
        raise error  # MovedError is an AskError
    found = connections.run(key, [command, *then])
    _confirmed(found[1:], wait)
    if isinstance(found[0], Exception):
        raise found[0]
    return found[0]
