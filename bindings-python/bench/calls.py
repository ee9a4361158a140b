"""Per-call cost of the binding: ns per call of `db.put`, `db.get`,
`db.get_many` and a batch's `b.put`, in tight Python loops over keys and
values made before the clock, so that what differs between builds is the
call (argument parsing, bytes handling, GIL, result objects) and the
engine's in-memory work.

The database is small enough to stay in the memtable (N keys of VALSZ bytes,
sync off), so `get` and `get_many` measure the binding rather than disk
reads. Each phase runs ROUNDS times; the best round is printed, as
"RESULT PHASE NS" (ns per call; for get_many also per key):

- loop: the bare loop with its indexing, no call (what every phase includes)
- noargs: `db.last_version()`, a call with no arguments and no engine work
- put: `db.put(k, v)` overwriting existing keys
- get: `db.get(k)` of existing keys, in a shuffled order
- get_many1: `db.get_many([k])`, one key per call
- get_many100: `db.get_many(ks)`, 100 keys per call (ns per key)
- batch_put: `b.put(k, v)` into a native batch (filling only)
- batch: `with db.batch() as b:` 1000 puts and the commit (ns per put)

    python calls.py [--n 100000] [--valsz 128] [--rounds 5] [--dir /var/tmp]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from typing import Callable, Dict, List

import sett


def best(rounds: int, f: Callable[[], int]) -> float:
    """The lowest ns per unit over rounds; f runs one round and returns its units."""
    out = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        units = f()
        out = min(out, (time.perf_counter_ns() - t0) / units)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--valsz", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()

    n = a.n
    keys = [b"key%012d" % i for i in range(n)]
    values = [bytes([v]) * a.valsz for v in range(256)]
    shuffled = keys[:]
    random.Random(1).shuffle(shuffled)
    groups = [shuffled[i : i + 100] for i in range(0, n - n % 100, 100)]
    singles = [[k] for k in shuffled]
    d = tempfile.mkdtemp(prefix="sett-calls-", dir=a.dir)
    res: Dict[str, float] = {}
    try:
        with sett.open(d, sync_writes=False) as db:
            with db.batch() as b:
                for i in range(n):
                    b.put(keys[i], values[i & 0xFF])

            def loop() -> int:
                for i in range(n):
                    keys[i], values[i & 0xFF]
                return n

            def noargs() -> int:
                f = db.last_version
                for _ in range(n):
                    f()
                return n

            def put() -> int:
                f = db.put
                for i in range(n):
                    f(keys[i], values[i & 0xFF])
                return n

            def get() -> int:
                f = db.get
                for k in shuffled:
                    f(k)
                return n

            def get_many1() -> int:
                f = db.get_many
                for ks in singles:
                    f(ks)
                return n

            def get_many100() -> int:
                f = db.get_many
                for ks in groups:
                    f(ks)
                return len(groups) * 100

            def batch_put() -> int:
                b = db.batch()
                f = b.put
                for i in range(n):
                    f(keys[i], values[i & 0xFF])
                b.clear()
                return n

            def batch() -> int:
                for start in range(0, n, 1000):
                    with db.batch() as b:
                        f = b.put
                        for i in range(start, min(start + 1000, n)):
                            f(keys[i], values[i & 0xFF])
                return n

            phases: List[Callable[[], int]] = [
                loop,
                noargs,
                put,
                get,
                get_many1,
                get_many100,
                batch_put,
                batch,
            ]
            for p in phases:
                res[p.__name__] = best(a.rounds, p)
                print(f"RESULT {p.__name__} {res[p.__name__]:.1f}", flush=True)
            if db.get(keys[n - 1]) != values[(n - 1) & 0xFF]:
                raise SystemExit("last key reads back wrong")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
