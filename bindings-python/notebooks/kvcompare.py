"""Measures sett and RocksDB (rocksdict in raw mode) on the same operations.

Each (engine, value size) runs in a fresh process so that its peak RSS is its
own: ``measure()`` starts ``python kvcompare.py ENGINE VALSZ N DIR`` and reads
the JSON it prints. Keys follow badger-bench (``vsz=%05d-k=%010d``, drawn at
random with replacement); values are random bytes; writes go in 1000-entry
batches; reads pick random keys of the same format (about 63% exist).
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List

ENGINES = ("sett", "rocksdict")
BATCH = 1000


def _key(valsz: int, k: int) -> bytes:
    return b"vsz=%05d-k=%010d" % (valsz, k)


def _disk(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.stat(os.path.join(root, f)).st_blocks * 512
    return total


class _Sett:
    def __init__(self, path: str) -> None:
        import sett

        self.db = sett.open(path)

    def write(self, pairs: List[tuple]) -> None:
        with self.db.batch() as b:
            for k, v in pairs:
                b.put(k, v)

    def get(self, k: bytes) -> Any:
        return self.db.get(k)

    def get_many(self, ks: List[bytes]) -> List[Any]:
        return self.db.get_many(ks)

    def keys(self) -> Any:
        return self.db.iter(keys_only=True)

    def items(self) -> Any:
        return self.db.iter()

    def close(self) -> None:
        self.db.close()


class _Rocks:
    def __init__(self, path: str) -> None:
        from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict

        o = Options(raw_mode=True)
        o.create_if_missing(True)
        o.set_compression_type(DBCompressionType.none())
        t = BlockBasedOptions()
        t.set_bloom_filter(10, False)
        o.set_block_based_table_factory(t)
        self.db = Rdict(path, o)

    def write(self, pairs: List[tuple]) -> None:
        from rocksdict import WriteBatch

        wb = WriteBatch(raw_mode=True)
        for k, v in pairs:
            wb.put(k, v)
        self.db.write(wb)

    def get(self, k: bytes) -> Any:
        return self.db.get(k)

    def get_many(self, ks: List[bytes]) -> List[Any]:
        return self.db.get(ks)

    def keys(self) -> Any:
        return self.db.keys()

    def items(self) -> Any:
        return self.db.items()

    def close(self) -> None:
        self.db.close()


def rocksdb_version(path: str) -> str:
    """The RocksDB release that wrote the database at path, from its OPTIONS file
    (RocksDB records its own version there): what rocksdict bundles."""
    import glob

    found = "unknown"
    for f in sorted(glob.glob(os.path.join(path, "OPTIONS-*"))):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip().startswith("rocksdb_version="):
                    found = line.strip().split("=", 1)[1]
    return found


def _version(engine: str, path: str) -> str:
    """What ran, read at run time: sett's library version, or rocksdict's and the
    RocksDB release it bundles."""
    import importlib.metadata

    if engine == "sett":
        import sett

        return f"sett {sett.__version__}"
    return f"rocksdict {importlib.metadata.version('rocksdict')}, RocksDB {rocksdb_version(path)}"


def run(engine: str, valsz: int, n: int, base: str) -> Dict[str, Any]:
    """The measurements of one engine at one value size, in this process."""
    path = os.path.join(base, f"{engine}-{valsz}")
    db = _Sett(path) if engine == "sett" else _Rocks(path)
    rng = random.Random(42)
    t = time.perf_counter()
    written = 0
    while written < n:
        count = min(BATCH, n - written)
        payload = os.urandom(valsz * count)
        db.write(
            [
                (_key(valsz, rng.randrange(n)), payload[i * valsz : (i + 1) * valsz])
                for i in range(count)
            ]
        )
        written += count
    populate_s = time.perf_counter() - t

    reads = [_key(valsz, rng.randrange(n)) for _ in range(min(n, 50_000))]
    t = time.perf_counter()
    hits = sum(1 for k in reads if db.get(k) is not None)
    get_ns = (time.perf_counter() - t) / len(reads) * 1e9

    t = time.perf_counter()
    for i in range(0, len(reads), 100):
        db.get_many(reads[i : i + 100])
    get_many_ns = (time.perf_counter() - t) / len(reads) * 1e9

    t = time.perf_counter()
    nk = sum(1 for _ in db.keys())
    iter_keys_ns = (time.perf_counter() - t) / max(nk, 1) * 1e9
    t = time.perf_counter()
    nv = 0
    for _, v in db.items():
        nv += 1
        if len(v) != valsz:
            raise AssertionError(f"{engine}: a value of {len(v)} bytes, expected {valsz}")
    iter_values_ns = (time.perf_counter() - t) / max(nv, 1) * 1e9
    if nk != nv:
        raise AssertionError(f"{engine}: {nk} keys but {nv} items")
    db.close()
    return {
        "engine": engine,
        "version": _version(engine, path),
        "valsz": valsz,
        "keys_written": n,
        "unique_keys": nk,
        "populate_keys_per_s": n / populate_s,
        "get_ns": get_ns,
        "get_hit_rate": hits / len(reads),
        "get_many_ns_per_key": get_many_ns,
        "iter_keys_ns": iter_keys_ns,
        "iter_values_ns": iter_values_ns,
        "disk_bytes": _disk(path),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def measure(engine: str, valsz: int, n: int, base: str) -> Dict[str, Any]:
    """``run()`` in a fresh Python process."""
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), engine, str(valsz), str(n), base],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    e, vs, count, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(json.dumps(run(e, vs, count, d)))
