"""redis-py's RedisCluster against three sett-server nodes.

argv: a node's port, or `replicas` and a node's port (three masters with one
replica each: every read goes to a replica).
"""

import sys

from redis.cluster import LoadBalancingStrategy, RedisCluster
from redis.exceptions import ClusterCrossSlotError


def keyspace_hits(node):
    return int(node.redis_connection.info("stats")["keyspace_hits"])


def read_from_replicas(port):
    # ROUND_ROBIN_REPLICAS sends READONLY to each replica and every read to one.
    rc = RedisCluster(host="127.0.0.1", port=port, load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS)
    primaries, replicas = rc.get_primaries(), rc.get_replicas()
    assert len(primaries) == 3 and len(replicas) == 3, (primaries, replicas)
    for i in range(300):
        rc.set(f"ro:{i}", str(i))
    for p in primaries:
        acked = p.redis_connection.execute_command("WAIT", 1, 10000)
        assert acked == 1, (p.name, acked)
    for i in range(300):
        assert rc.get(f"ro:{i}") == str(i).encode(), i
    on_primaries = [keyspace_hits(p) for p in primaries]
    on_replicas = [keyspace_hits(r) for r in replicas]
    assert on_primaries == [0, 0, 0], (on_primaries, on_replicas)
    assert sum(on_replicas) == 300 and all(h > 50 for h in on_replicas), on_replicas
    # mget_nonatomic pipelines one MGET per slot (redis-py sends those to the
    # masters); every key counts once, wherever it was read.
    assert rc.mget_nonatomic([f"ro:{i}" for i in range(10)]) == [str(i).encode() for i in range(10)]
    total = sum(keyspace_hits(n) for n in primaries + replicas)
    assert total == 310, total
    # A write still goes to the slot's master, and its replica gets it.
    rc.set("ro:after", "w")
    master = rc.get_node_from_key("ro:after")
    assert master in primaries and master.redis_connection.execute_command("WAIT", 1, 10000) == 1
    assert rc.get("ro:after") == b"w"
    print("redis-py RedisCluster replicas: ok", on_replicas)


if sys.argv[1] == "replicas":
    read_from_replicas(int(sys.argv[2]))
    sys.exit(0)

rc = RedisCluster(host="127.0.0.1", port=int(sys.argv[1]))
assert len(rc.get_primaries()) == 3, rc.get_primaries()
for i in range(300):
    rc.set(f"py:{i}", str(i))
for i in range(300):
    assert rc.get(f"py:{i}") == str(i).encode(), i
# Multi-key commands: split by the client over slots, or one slot through a hash tag.
rc.mset_nonatomic({"a": "1", "b": "2", "c": "3"})
assert rc.mget_nonatomic(["a", "b", "c", "nope"]) == [b"1", b"2", b"3", None]
rc.mset({"{t}x": "1", "{t}y": "2"})
assert rc.mget(["{t}x", "{t}y"]) == [b"1", b"2"]
assert rc.incr("counter") == 1 and rc.incrby("counter", 41) == 42
assert rc.keyslot("foo") == 12182 == rc.cluster_keyslot("foo")
assert sorted(rc.scan_iter(match="py:1?", count=20)) == sorted(f"py:{i}".encode() for i in range(10, 20))
total = rc.dbsize(target_nodes=RedisCluster.PRIMARIES)
assert total == 300 + 3 + 2 + 1, total
sizes = [rc.dbsize(target_nodes=n) for n in rc.get_primaries()]
assert all(s > 50 for s in sizes), sizes
try:
    # Sent to one node as is (the client would refuse it itself): the server says CROSSSLOT.
    rc.execute_command("MSET", "{t}x", "1", "other", "2", target_nodes=rc.get_primaries()[0])
    raise AssertionError("MSET over two slots was accepted")
except ClusterCrossSlotError:
    pass  # the client read the -CROSSSLOT code
print("redis-py RedisCluster: ok", sizes)
