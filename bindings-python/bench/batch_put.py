"""Batch-write speed from Python: N keys with VALSZ-byte values written in
BATCH-entry batches, sync off, through `with db.batch() as b: b.put(k, v)` and,
when rocksdict is installed, through rocksdict's native WriteBatch (raw mode,
no compression, WAL on, sync off) in the same run. Engines alternate within
each round; each run writes to a fresh directory that is removed afterwards.

Keys (b"key%012d") and the 256 distinct values are made before the clock
starts. Prints one line per run (with the time spent filling batches in
Python and the rest, the commits) and the median per engine.

    python batch_put.py [--n 1000000] [--valsz 128] [--batch 1000] [--runs 3] [--dir /var/tmp]
                        [--engines sett,rocksdict] [--report results/python-batch.md]

With --report it also writes a Markdown report: each engine's runs, median and
range, and sett's ratio, called ahead or behind only where the ranges do not
overlap.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import sett

# What run_rocksdict found: rocksdict's version and the RocksDB it bundles.
ROCKSDICT_RELEASE = ""


def run_sett(path: str, keys: List[bytes], values: List[bytes], batch: int) -> Tuple[float, float]:
    n = len(keys)
    fill = 0.0
    with sett.open(path, sync_writes=False) as db:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            b = db.batch()
            t = time.perf_counter()
            for i in range(start, min(start + batch, n)):
                b.put(keys[i], values[i & 0xFF])
            fill += time.perf_counter() - t
            b.commit()
        elapsed = time.perf_counter() - t0
        if db[keys[n - 1]] != values[(n - 1) & 0xFF]:
            raise SystemExit("sett: last key reads back wrong")
    return elapsed, fill


def rocksdb_release(path: str) -> str:
    """rocksdict's version and the RocksDB release that wrote path (kvcompare's reader)."""
    import importlib.metadata
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notebooks"))
    from kvcompare import rocksdb_version

    bundled = importlib.metadata.version("rocksdict")
    return f"rocksdict {bundled}, RocksDB {rocksdb_version(path)} (its bundled release build)"


def run_rocksdict(
    path: str, keys: List[bytes], values: List[bytes], batch: int
) -> Tuple[float, float]:
    from rocksdict import DBCompressionType, Options, Rdict, WriteBatch, WriteOptions

    o = Options(raw_mode=True)
    o.create_if_missing(True)
    o.set_compression_type(DBCompressionType.none())
    db = Rdict(path, o)
    wo = WriteOptions()
    wo.sync = False
    n = len(keys)
    fill = 0.0
    try:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            t = time.perf_counter()
            wb = WriteBatch(raw_mode=True)
            for i in range(start, min(start + batch, n)):
                wb.put(keys[i], values[i & 0xFF])
            fill += time.perf_counter() - t
            db.write(wb, wo)
        elapsed = time.perf_counter() - t0
        if db[keys[n - 1]] != values[(n - 1) & 0xFF]:
            raise SystemExit("rocksdict: last key reads back wrong")
    finally:
        db.close()
    global ROCKSDICT_RELEASE
    ROCKSDICT_RELEASE = rocksdb_release(path)
    print(f"    {ROCKSDICT_RELEASE}")
    return elapsed, fill


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--valsz", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--engines", default="sett,rocksdict", help="comma-separated: sett, rocksdict")
    ap.add_argument("--report", help="write a Markdown report to this path")
    a = ap.parse_args()

    ap_engines = [e for e in a.engines.split(",") if e]
    runners: Dict[str, Callable[[str, List[bytes], List[bytes], int], Tuple[float, float]]] = {
        "sett": run_sett,
        "rocksdict": run_rocksdict,
    }
    engines = {e: runners[e] for e in ap_engines}
    if "rocksdict" in engines:
        try:
            import rocksdict  # noqa: F401
        except ImportError:
            print("rocksdict is not installed: left out")
            del engines["rocksdict"]

    keys = [b"key%012d" % i for i in range(a.n)]
    values = [bytes([v]) * a.valsz for v in range(256)]
    times: Dict[str, List[float]] = {e: [] for e in engines}
    # Of each run, the seconds spent filling batches (the rest is commits).
    fills: Dict[str, List[float]] = {e: [] for e in engines}
    versions: Dict[str, str] = {"sett": f"sett {getattr(sett, '__version__', '')}".strip()}
    for r in range(a.runs):
        order = list(engines)
        if r % 2:
            order.reverse()
        for e in order:
            d = tempfile.mkdtemp(prefix=f"batchput-{e}-", dir=a.dir)
            try:
                s, fill = engines[e](d, keys, values, a.batch)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            times[e].append(s)
            fills[e].append(fill)
            if e == "rocksdict" and ROCKSDICT_RELEASE:
                versions[e] = ROCKSDICT_RELEASE
            print(
                f"run {r + 1} {e}: {s:.3f} s ({a.n / s / 1e6:.3f} M puts/s; filling batches "
                f"{fill / a.n * 1e9:.0f} ns/put, the rest (commits) {(s - fill) / a.n * 1e9:.0f})",
                flush=True,
            )
    print(f"{a.n} x {a.valsz} B in {a.batch}-entry batches, sync off, median of {a.runs}:")
    med = {e: statistics.median(t) for e, t in times.items()}
    for e, m in med.items():
        print(f"  {e}: {m:.3f} s ({a.n / m / 1e6:.3f} M puts/s, {m / a.n * 1e9:.0f} ns/put)")
    if "rocksdict" in med:
        print(f"  sett / rocksdict time: {med['sett'] / med['rocksdict']:.2f}")
    if a.report:
        write_report(a, times, fills, versions)
    return 0


def verdict(sett_times: List[float], other: List[float]) -> str:
    """Ahead or behind only where the ranges of the runs do not overlap."""
    if len(sett_times) == 1:
        q = other[0] / sett_times[0]
        return "ahead" if q > 1.25 else "behind" if q < 0.8 else "tie"
    if max(sett_times) < min(other):
        return "ahead"
    if min(sett_times) > max(other):
        return "behind"
    return "tie"


def write_report(
    a: argparse.Namespace,
    times: Dict[str, List[float]],
    fills: Dict[str, List[float]],
    versions: Dict[str, str],
) -> None:
    import subprocess

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines = [
        "# Python batch writes: sett's native `Batch` against rocksdict's `WriteBatch`",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC at commit {commit or '?'} on "
        f"{os.cpu_count()} cores, `python bindings-python/bench/batch_put.py "
        f"--runs {a.runs} --report ...`: "
        f'{a.n:,} keys `b"key%012d"` with {a.valsz}-byte values in {a.batch}-entry batches, '
        "WAL on, sync off, each engine at its defaults otherwise (rocksdict in raw mode without "
        "compression, as sett's tables are), engines alternating, a fresh directory each run; "
        "keys and values made before the clock.",
        "",
        "| engine | median | range | runs | ns per put | of which filling batches in Python, "
        "ns per put (median) | the rest, commits, ns per put (median) |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for e, t in times.items():
        m = statistics.median(t)
        runs = " ".join(f"{x:.3f}" for x in t)
        name = versions.get(e, e)
        fill = statistics.median(fills[e])
        commits = statistics.median(x - f for x, f in zip(t, fills[e], strict=True))
        lines.append(
            f"| {name} | {m:.3f} s | {min(t):.3f}–{max(t):.3f} s | {runs} | {m / a.n * 1e9:.0f} "
            f"| {fill / a.n * 1e9:.0f} | {commits / a.n * 1e9:.0f} |"
        )
    if "sett" in times and "rocksdict" in times:
        q = statistics.median(times["rocksdict"]) / statistics.median(times["sett"])
        lines += [
            "",
            f"rocksdict's time ÷ sett's, medians: **{q:.2f}x, "
            f"{verdict(times['sett'], times['rocksdict'])}** "
            "(above 1: sett is faster).",
        ]
    with open(a.report, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.report}")


if __name__ == "__main__":
    raise SystemExit(main())
