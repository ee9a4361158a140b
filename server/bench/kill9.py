"""Kill -9 loop against sett-server in appendfsync always mode.

Each cycle starts the server on the same directory, runs writer threads (SET of
sequential keys and INCR of a per-thread counter, each acknowledged reply
recorded), kills the server with SIGKILL at a random moment, restarts it and
checks that every acknowledged write is there: every SET key up to the last
acknowledged one with its value, and each counter at its last acknowledged
value or one more (an increment whose reply the kill cut off).

Usage: python kill9.py SETT_SERVER_BINARY CYCLES
"""

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import redis

THREADS = 4


def start(binary: str, db: str) -> tuple[subprocess.Popen, int]:
    """Starts the server on a port it binds itself (--port 0); returns it and that port."""
    p = subprocess.Popen(
        [binary, "--dir", db, "--port", "0", "--appendfsync", "always", "--parent-pid", str(os.getpid())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    line = p.stdout.readline().decode() if p.stdout else ""
    if "listening on " not in line:
        raise SystemExit(f"sett-server did not start: {line!r}")
    return p, int(line.strip().rsplit(":", 1)[1])


def writer(port: int, t: int, start_at: int, acked: dict, stop: threading.Event) -> None:
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    i = start_at
    try:
        while not stop.is_set():
            c.set(f"w{t}:{i}", f"v{i}")
            acked[("set", t)] = i
            acked[("incr", t)] = c.incr(f"counter{t}")
            i += 1
    except (redis.ConnectionError, redis.TimeoutError):
        pass  # the kill


def main() -> None:
    binary, cycles = sys.argv[1], int(sys.argv[2])
    db = tempfile.mkdtemp(prefix="sett-kill9-")
    acked: dict = {}
    total_acked = 0
    for cycle in range(cycles):
        p, port = start(binary, db)
        stop = threading.Event()
        starts = {t: acked.get(("set", t), -1) + 1 for t in range(THREADS)}
        before = sum(starts.values())
        threads = [threading.Thread(target=writer, args=(port, t, starts[t], acked, stop)) for t in range(THREADS)]
        for th in threads:
            th.start()
        time.sleep(random.uniform(0.3, 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        stop.set()
        for th in threads:
            th.join()
        after = sum(acked.get(("set", t), -1) + 1 for t in range(THREADS))
        total_acked += after - before
        # Restart and check every acknowledged write.
        p, port = start(binary, db)
        c = redis.Redis(host="127.0.0.1", port=port)
        for t in range(THREADS):
            last = acked.get(("set", t), -1)
            keys = [f"w{t}:{i}" for i in range(last + 1)]
            for lo in range(0, len(keys), 1000):
                got = c.mget(keys[lo : lo + 1000])
                for k, v in zip(keys[lo : lo + 1000], got):
                    want = "v" + k.split(":")[1]
                    if v is None or v.decode() != want:
                        raise SystemExit(f"cycle {cycle}: acknowledged {k} reads {v!r} after kill -9")
            want = acked.get(("incr", t), 0)
            have = int(c.get(f"counter{t}") or 0)
            if have not in (want, want + 1):
                raise SystemExit(f"cycle {cycle}: counter{t} is {have}, acknowledged {want}")
            acked[("incr", t)] = have
        c.close()
        p.send_signal(signal.SIGTERM)
        p.wait()
    print(f"kill -9 loop: {cycles} cycles, {total_acked} acknowledged SETs (and as many INCRs) all found after restart")


if __name__ == "__main__":
    main()
