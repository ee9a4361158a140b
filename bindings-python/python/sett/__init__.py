"""sett: an embedded key-value store — an LSM tree with a value log (WiscKey design).

    import sett
    with sett.open("/tmp/db") as db:
        db[b"k"] = b"v"
        with db.batch() as b:
            b.put(b"a", b"1")
            b.delete(b"k")
        with db.transaction() as txn:
            txn.put(b"n", txn.get(b"n", b"0") + b"!")
        for key, value in db.iter(prefix=b"a"):
            ...

Keys and values are ``bytes`` (or ``bytearray``); ``str`` raises TypeError.
Errors are ``sett.Error`` and its subclasses.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable, Iterator, List, Optional, Tuple, TypeVar, Union

from . import _sett
from ._sett import (
    ClosedError,
    ConflictError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    InvalidOptionError,
    IOError,
    Iter,
    LockedError,
    PoisonedError,
    ReadOnlyError,
    TooBigError,
    Txn,
    UnsupportedVersionError,
)

__version__: str = _sett.__version__

__all__ = [
    "Batch",
    "ClosedError",
    "ConflictError",
    "CorruptionError",
    "Db",
    "Error",
    "IOError",
    "InvalidArgumentError",
    "InvalidOptionError",
    "Iter",
    "LockedError",
    "PoisonedError",
    "ReadOnlyError",
    "TooBigError",
    "Txn",
    "UnsupportedVersionError",
    "open",
    "__version__",
]

Bytes = Union[bytes, bytearray]
T = TypeVar("T")

#: How many times ``Db.update`` runs its function before giving up on conflicts.
UPDATE_RETRIES = 64


def _check(value: object, what: str) -> None:
    if isinstance(value, str):
        raise TypeError(f"{what} must be bytes, not str (encode it, e.g. s.encode())")
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{what} must be bytes or bytearray, not {type(value).__name__}")


class Batch:
    """Puts and deletes applied atomically by ``commit()`` (or at the end of a
    ``with`` block that raised nothing)."""

    def __init__(self, db: Db) -> None:
        self._db = db
        self._ops: List[Tuple[Bytes, Optional[Bytes], Optional[float], int]] = []

    def put(self, key: Bytes, value: Bytes, *, ttl: Optional[float] = None, meta: int = 0) -> None:
        _check(key, "key")
        _check(value, "value")
        self._ops.append((key, value, ttl, meta))

    def delete(self, key: Bytes) -> None:
        _check(key, "key")
        self._ops.append((key, None, None, 0))

    def commit(self) -> None:
        ops, self._ops = self._ops, []
        self._db._write_batch(ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self._ops = []


class Db(_sett.Db):
    """An open database; see ``sett.open``. Usable as a mapping of bytes to bytes
    and as a context manager that closes it."""

    def batch(self) -> Batch:
        """A batch to fill and commit atomically (a context manager)."""
        return Batch(self)

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        """A read-write transaction committed when the block ends without an
        exception (ConflictError if it must be retried; see ``update``)."""
        txn = self.begin(True)
        try:
            yield txn
        except BaseException:
            txn.discard()
            raise
        txn.commit()

    @contextmanager
    def view(self) -> Iterator[Txn]:
        """A read-only transaction: a stable snapshot while writes go on."""
        txn = self.begin(False)
        try:
            yield txn
        finally:
            txn.discard()

    def update(self, fn: Callable[[Txn], T], retries: int = UPDATE_RETRIES) -> T:
        """Runs ``fn(txn)`` in a read-write transaction and commits it, running it
        again on ConflictError, up to ``retries`` times."""
        for _ in range(retries):
            try:
                with self.transaction() as txn:
                    result = fn(txn)
                return result
            except ConflictError:
                continue
        raise ConflictError(f"transaction still conflicted after {retries} attempts")


def open(path: Union[str, "os.PathLike[str]"], **options: Union[int, bool]) -> Db:  # noqa: A001 (mirrors sett.open of the docs)
    """Opens (or creates) the database in directory ``path``. Options are the
    Rust ``Options`` fields: value_threshold, memtable_size, sync_writes,
    read_only, max_value_size, ... An unknown option is a TypeError; a value
    out of range raises InvalidOptionError naming it."""
    return Db(path, **options)
