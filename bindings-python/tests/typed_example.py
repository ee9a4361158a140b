"""A typed use of the API; `mypy --strict` checks it against the stubs."""

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
        with db.transaction() as txn:
            txn.put(b"n", (txn.get(b"n") or b"0") + b"1")
        count: int = db.update(lambda t: len(t.get(b"n") or b""))
        pairs: List[Tuple[bytes, bytes]] = list(db.iter(prefix=b"a"))
        stats = db.stats()
        print(value, maybe, many, count, pairs, stats["last_seq"])


if __name__ == "__main__":
    main()
