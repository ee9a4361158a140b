"""redis-py's RedisCluster against three sett-server nodes (argv[1]: a node's port)."""

import sys

from redis.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError

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
