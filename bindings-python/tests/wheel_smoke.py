"""What a user does first with an installed wheel: open a database, write
(single puts and a batch), read, iterate, run value-log GC, back it up and
restore the backup. `make wheel-check` runs it in a clean virtualenv where no
Rust toolchain is reachable; it also checks that `sett` was imported from that
environment and not from the source tree.

    python wheel_smoke.py [EXPECTED_PREFIX]
"""

from __future__ import annotations

import os
import sys
import tempfile

import sett


def main() -> int:
    where = os.path.realpath(sett.__file__)
    if len(sys.argv) > 1 and not where.startswith(os.path.realpath(sys.argv[1])):
        print(f"sett was imported from {where}, not from {sys.argv[1]}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "db")
        # Small thresholds so that values go to the value log and files roll over.
        # GC is run by hand below: the background GC is off (vlog_gc_ratio=0).
        opts = dict(
            value_threshold=64, vlog_file_size=64 << 10, memtable_size=64 << 10, vlog_gc_ratio=0.0
        )
        with sett.open(path, **opts) as db:
            for r in range(4):
                with db.batch() as b:
                    for i in range(300):
                        b.put(b"k%04d" % i, bytes([r]) * 256)
            db[b"single"] = b"value"
            assert db[b"single"] == b"value" and db.get(b"absent") is None
            assert db[b"k0042"] == bytes([3]) * 256
            keys = list(db.keys(prefix=b"k"))
            assert keys == [b"k%04d" % i for i in range(300)], keys[:3]
            assert sum(1 for _ in db.items()) == 301
            before = db.stats()["vlog_bytes"]
            db.flatten()
            collected = 0
            while db.run_value_log_gc(0.5):
                collected += 1
            after = db.stats()["vlog_bytes"]
            assert collected > 0 and after < before, (collected, before, after)
            assert all(v == bytes([3]) * 256 for k, v in db.items(prefix=b"k"))
            backup = os.path.join(tmp, "db.backup")
            assert db.backup(backup) > 0
        with sett.open(os.path.join(tmp, "restored")) as r:
            assert r.restore(backup) == 301
            assert r[b"k0299"] == bytes([3]) * 256 and r[b"single"] == b"value"
    print(
        f"wheel smoke: sett {sett.__version__} from {where}: open, batch, put, get, iterate, "
        f"value-log GC ({collected} files, {before} -> {after} bytes), backup and restore passed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
