"""Keys sharded by hash slot on a Redis Cluster: one key per slot, in the slot of the
game it is about, so that a game's write script touches one slot only.

The statistics counters are one hash per slot (:func:`stats_key`), summed on read
(:func:`read_stats`); the players' pending projections are one set per slot
(:func:`read_members`).  A read sends, to each master, the commands of every slot it
serves, in one round trip.
"""

from __future__ import annotations

import threading

from redis.cluster import ClusterNode
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.exceptions import SlotNotCoveredError

from service.storage.cluster import ClusterConnections

_TAGS: list[str] | None = None
_TAGS_LOCK = threading.Lock()


def _slot_tags() -> list[str]:
    """For every slot, a short string whose hash slot it is (computed once: about
    300 000 CRC16s, a tenth of a second)."""
    global _TAGS
    with _TAGS_LOCK:
        if _TAGS is None:
            tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
            missing, number = REDIS_CLUSTER_HASH_SLOTS, 0
            while missing:
                tag = format(number, "x")
                slot = key_slot(tag.encode())
                if tags[slot] is None:
                    tags[slot] = tag
                    missing -= 1
                number += 1
            _TAGS = tags
        return _TAGS


def stats_key(prefix: str, key_in_slot: str) -> str:
    """The statistics hash of the slot of ``key_in_slot`` (a key of the game)."""
    return f"{prefix}:{{{_slot_tags()[key_slot(key_in_slot.encode())]}}}"


_READS: dict[tuple[str, bytes], list[bytes]] = {}


def _stats_reads(prefix: str, command: bytes = b"HGETALL") -> list[bytes]:
    """For every slot, ``command`` (HGETALL of its statistics hash, SMEMBERS of a set
    sharded the same way) of its key, packed (made once)."""
    reads = _READS.get((prefix, command))
    if reads is None:
        reads = []
        for tag in _slot_tags():
            key = f"{prefix}:{{{tag}}}".encode()
            reads.append(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                         % (len(command), command, len(key), key))
        _READS[(prefix, command)] = reads
    return reads


def read_stats(connections: ClusterConnections, prefix: str) -> dict[bytes, int]:
    """The sum of every slot's statistics hash: one round trip per master, each sending
    the HGETALLs of the slots it serves."""
    totals: dict[bytes, int] = {}
    for reply in _read_every_slot(connections, prefix, b"HGETALL"):
        pairs = (reply.items() if isinstance(reply, dict)  # RESP3 or RESP2
                 else zip(reply[::2], reply[1::2], strict=True))
        for field, value in pairs:
            totals[field] = totals.get(field, 0) + int(value)
    return totals


def read_members(connections: ClusterConnections, prefix: str) -> list[bytes]:
    """The members of every slot's set ``<prefix>:{<tag>}`` (sharded like the
    statistics): one round trip per master."""
    found: list[bytes] = []
    for reply in _read_every_slot(connections, prefix, b"SMEMBERS"):
        found.extend(reply)
    return found


def _read_every_slot(connections: ClusterConnections, prefix: str, command: bytes):
    """The non-empty replies of ``command`` on every slot's key of ``prefix``."""
    reads = _stats_reads(prefix, command)
    manager = connections.client.nodes_manager
    by_node: dict[str, tuple[ClusterNode, list[int]]] = {}
    # The slot map, read once for the 16384 slots: a copy of the map (redis-py replaces
    # it whole when it reads it again, and changes one slot's entry on a MOVED).
    owners = dict(manager.slots_cache)
    for slot in range(REDIS_CLUSTER_HASH_SLOTS):
        nodes = owners.get(slot)
        if not nodes:
            connections.refresh()
            raise SlotNotCoveredError(f"slot {slot} is not covered by the cluster")
        by_node.setdefault(nodes[0].name, (nodes[0], []))[1].append(slot)
    for node, slots in by_node.values():
        replies = connections.send_packed(node, [b"".join(reads[slot] for slot in slots)],
                                          len(slots))
        for slot, reply in zip(slots, replies, strict=True):
            if isinstance(reply, Exception):  # its slot moved meanwhile
                key = f"{prefix}:{{{_slot_tags()[slot]}}}"
                reply = connections.run(key, [(command.decode(), key)])[0]
                if isinstance(reply, Exception):
                    raise reply
            if reply:
                yield reply
