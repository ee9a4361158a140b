"""The Python row of `make bench-bindings`: the four phases of `sett-bench ops`
(cli/src/opsbench.rs) through the wheel, on the same data, so that the
difference between rows is the binding layer:

- batch: N keys b"key%012d" with 100-byte values, in 1000-entry batches
- put: the same N keys overwritten with one put each
- get: N lookups of existing keys in a fixed xorshift64 order
- iterate: one forward scan with values

Keys and the 256 possible values are made before the clock starts. Prints
"RESULT python PHASE NS" (ns per key); exits 1 if data reads back wrong.

    python ops.py DIR N
"""

from __future__ import annotations

import sys
import time

import sett

VALUE_LEN = 100
MASK = (1 << 64) - 1


def report(phase: str, t0: int, n: int) -> None:
    print(f"RESULT python {phase} {(time.perf_counter_ns() - t0) / n:.0f}", flush=True)


def main(path: str, n: int) -> int:
    key = [b"key%012d" % i for i in range(n)]
    value = [bytes([v]) * VALUE_LEN for v in range(256)]
    with sett.open(path) as db:
        t0 = time.perf_counter_ns()
        for start in range(0, n, 1000):
            with db.batch() as b:
                for i in range(start, min(start + 1000, n)):
                    b.put(key[i], value[i & 0xFF])
        report("batch", t0, n)

        t0 = time.perf_counter_ns()
        for i in range(n):
            db.put(key[i], value[(i + 1) & 0xFF])
        report("put", t0, n)

        # The xorshift order is computed before the clock: Python's big-int
        # arithmetic would cost more than the call being measured.
        x = 88172645463325252
        order = []
        for _ in range(n):
            x ^= (x << 13) & MASK
            x ^= x >> 7
            x ^= (x << 17) & MASK
            order.append(x % n)
        t0 = time.perf_counter_ns()
        for k in order:
            v = db.get(key[k])
            if v is None or len(v) != VALUE_LEN or v[0] != (k + 1) & 0xFF:
                print(f"get {k}: read back {v!r}", file=sys.stderr)
                return 1
        report("get", t0, n)

        t0 = time.perf_counter_ns()
        seen = 0
        for k, v in db.iter():
            if len(k) != 15 or len(v) != VALUE_LEN:
                print(f"scan returned {len(k)} / {len(v)} bytes", file=sys.stderr)
                return 1
            seen += 1
        report("iterate", t0, n)
        if seen != n:
            print(f"scan saw {seen} of {n} keys", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: ops.py DIR N", file=sys.stderr)
        sys.exit(2)
    if not sys.argv[2].isdigit() or int(sys.argv[2]) == 0:
        print("N must be a positive number", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
