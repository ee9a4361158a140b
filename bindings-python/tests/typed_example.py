"""A typed use of the API; `mypy --strict` checks it against the stubs."""

import datetime
import tempfile
from typing import List, Optional, Tuple

import sett


def main() -> None:
    with sett.open(tempfile.mkdtemp(), sync_writes=False) as db:
        db[b"k"] = b"v"
        value: bytes = db[b"k"]
        maybe: Optional[bytes] = db.get(b"absent")
        many: List[Optional[bytes]] = db.get_many([b"k", b"absent"])
        with db.batch() as b:
            b.put(b"a", b"1", ttl=60.0, meta=1)
            b.delete(b"k")
        batch: sett.Batch = db.batch()
        batch.put(bytearray(b"b"), b"2")
        queued: int = len(batch)
        batch.clear()
        batch.commit()
        with db.transaction() as txn:
            txn.put(b"n", (txn.get(b"n") or b"0") + b"1")
        with db.begin(write=True) as wtxn:
            wtxn.put(b"w", b"1")
            ended: bool = wtxn.active
        with db.begin(False) as rtxn:
            seen: Optional[bytes] = rtxn.get(b"w")
            writable: bool = rtxn.write
        with db.view() as view:
            snap: List[bytes] = list(view.iter(keys_only=True))
        count: int = db.update(lambda t: len(t.get(b"n") or b""))
        pairs: List[Tuple[bytes, bytes]] = list(db.iter(prefix=b"a"))
        keys: List[bytes] = list(db.keys(prefix=b"a", reverse=True))
        items: List[Tuple[bytes, bytes]] = list(db.items(start=b"a", end=b"z"))
        values: List[bytes] = list(db.values())
        every: List[bytes] = [k for k in db]
        it: sett.Iter[Tuple[bytes, bytes]] = db.iter()
        it.seek(b"m")
        it.rewind()
        with db.sequence(b"ids", 100) as ids:
            first_id: int = ids.next()
        fast: List[bytes] = list(db.iter(keys_only=True, prefetch=16))
        after_m: Optional[Tuple[bytes, bytes]] = next(it, None)
        rev = db.keys(reverse=True)
        rev.seek(bytearray(b"m"))
        first_below: bytes = next(rev, b"")
        stats = db.stats()
        print(value, maybe, many, count, pairs, stats["last_seq"], queued, first_id, fast)
        print(ended, seen, writable, snap, keys, items, values, every, after_m, first_below)
    with sett.open(tempfile.mkdtemp(), merge_operator="sett.append") as mdb:
        mdb.merge(b"log", b"a")
        with mdb.batch() as mb:
            mb.merge(b"log", b"b")
        with mdb.transaction() as mtxn:
            mtxn.merge(b"log", b"c")
        merged: bytes = mdb[b"log"]
        try:
            sett.open(tempfile.mkdtemp(), merge_operator="sett.nope")
        except ValueError as e:
            print(merged, e)

    # Encryption at rest: the key and rotation are keywords outside OpenOptions.
    with sett.open(
        tempfile.mkdtemp(),
        encryption_key=bytes(32),
        encryption_key_rotation=datetime.timedelta(days=1),
    ) as enc:
        key_id: int = enc.rotate_encryption_key()
        print(key_id)


if __name__ == "__main__":
    main()
