"""redis-py's Sentinel through a failover of sett-server.

argv[1]: the sentinels' ports (comma-separated); argv[2]: the master's pid,
which this script kills with SIGKILL once 100 writes are acknowledged.
"""

import os
import signal
import sys
import time

from redis.exceptions import ConnectionError, ReadOnlyError, TimeoutError
from redis.sentinel import Sentinel

ports = [int(p) for p in sys.argv[1].split(",")]
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=2)
first = sentinel.discover_master("m")
master = sentinel.master_for("m", socket_timeout=3)
replica = sentinel.slave_for("m", socket_timeout=3)


def write(i, seconds):
    """SET py:i then WAIT 1: the number of replicas that acknowledged it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            master.set(f"py:{i}", f"v{i}")
            return master.execute_command("WAIT", 1, 1000)
        except (ConnectionError, TimeoutError, ReadOnlyError):
            # The pool asks the sentinels for the master again on its next connection.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


acked = [i for i in range(100) if write(i, 10) >= 1]
assert len(acked) == 100, f"only {len(acked)} of 100 acknowledged before the kill"
os.kill(int(sys.argv[2]), signal.SIGKILL)
killed = time.monotonic()
i, after = 100, 0
while after < 100:
    if write(i, 60) >= 1:
        acked.append(i)
        after += 1
    i += 1
    assert time.monotonic() - killed < 90, f"{after} acknowledged writes in 90 s after the kill"
new = sentinel.discover_master("m")
assert new != first, f"the sentinels still name {first}"
missing = [i for i in acked if master.get(f"py:{i}") != f"v{i}".encode()]
assert not missing, f"acknowledged writes missing on the new master: {missing[:20]}"
# slave_for reads from the replica that follows the new master now.
deadline = time.monotonic() + 30
while True:
    try:
        if replica.get(f"py:{acked[-1]}") == f"v{acked[-1]}".encode():
            break
    except (ConnectionError, TimeoutError):
        pass
    assert time.monotonic() < deadline, "the remaining replica never served the last write"
    time.sleep(0.1)
print(f"redis-py Sentinel: ok, master {first} -> {new}, {len(acked)} acknowledged writes all there")
