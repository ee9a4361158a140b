"""sett: an embedded key-value store — an LSM tree with a value log (WiscKey design).

    import sett
    with sett.open("/tmp/db") as db:
        db[b"k"] = b"v"
        with db.batch() as b:
            b.put(b"a", b"1")
            b.delete(b"k")
        with db.transaction() as txn:  # or: with db.begin(write=True) as txn:
            txn.put(b"n", txn.get(b"n", b"0") + b"!")
        for key, value in db.items(prefix=b"a"):
            ...
        for key in db:  # also db.keys(), db.values()
            ...
        it = db.iter()
        it.seek(b"m")  # the next item is the first key >= b"m"

Keys and values are ``bytes`` (or ``bytearray``); ``str`` raises TypeError.
Errors are ``sett.Error`` and its subclasses.

``db.keys()``, ``db.items()``, ``db.values()`` and ``iter(db)`` are iterators
over a snapshot (not views or lists), read in chunks as you go. There is no
``len(db)``: the engine keeps no exact count of live keys, so it would have to
scan everything (count with ``sum(1 for _ in db)`` if you mean that).
"""

from __future__ import annotations

import datetime
import os
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Callable,
    List,
    NoReturn,
    Optional,
    Type,
    TypeVar,
    Union,
)

from . import _sett
from ._sett import (
    Batch,
    BulkLoader,
    Change,
    ClosedError,
    ConflictError,
    CorruptionError,
    EncryptionKeyRequiredError,
    Error,
    FeedHistoryTooShortError,
    FellBehindError,
    InvalidArgumentError,
    InvalidOptionError,
    IOError,
    Iter,
    Keyspace,
    LockedError,
    MergeFailedError,
    MergeOperatorMismatchError,
    MergeOperatorMissingError,
    NotEncryptedError,
    NotFoundError,
    PoisonedError,
    ReadOnlyError,
    Sequence,
    Store,
    Subscription,
    TooBigError,
    Txn,
    UnsupportedVersionError,
    WrongEncryptionKeyError,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._sett import OpenOptions, OptionInfo

__version__: str = _sett.__version__

#: Core's table of options (sett::options::OPTIONS), one dict per option in its
#: order: name, type, default, min, max, bounds (in words) and doc. open()'s
#: keyword arguments are its names; docs/options.md renders it.
OPTIONS: "List[OptionInfo]" = _sett.OPTIONS

__all__ = [
    "Batch",
    "BulkLoader",
    "Change",
    "ClosedError",
    "ConflictError",
    "CorruptionError",
    "Db",
    "EncryptionKeyRequiredError",
    "Error",
    "FeedHistoryTooShortError",
    "FellBehindError",
    "IOError",
    "InvalidArgumentError",
    "InvalidOptionError",
    "Iter",
    "Keyspace",
    "LockedError",
    "MergeFailedError",
    "MergeOperatorMismatchError",
    "MergeOperatorMissingError",
    "OPTIONS",
    "NotEncryptedError",
    "NotFoundError",
    "PoisonedError",
    "ReadOnlyError",
    "Sequence",
    "Store",
    "Subscription",
    "TooBigError",
    "Txn",
    "TxnBlock",
    "UnsupportedVersionError",
    "WrongEncryptionKeyError",
    "open",
    "__version__",
]

Bytes = Union[bytes, bytearray]
T = TypeVar("T")

#: How many times ``Db.update`` runs its function before giving up on conflicts.
UPDATE_RETRIES = 64


class TxnBlock:
    """What ``Db.transaction()`` and ``Db.view()`` return: a context manager that
    begins a transaction on entering a ``with`` block and yields it, commits it
    (or, read-only, ends it) when the block raises nothing, and discards it when
    the block raises. Anything else done with it raises AttributeError."""

    __slots__ = ("_db", "_write", "_txn")

    def __init__(self, db: Db, write: bool) -> None:
        self._db = db
        self._write = write
        self._txn: Optional[Txn] = None

    def __enter__(self) -> Txn:
        if self._txn is not None:
            raise RuntimeError("this transaction block is already in use; call transaction() again")
        self._txn = self._db.begin(write=self._write)
        return self._txn

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        txn, self._txn = self._txn, None
        if txn is not None:
            txn.__exit__(exc_type, exc, tb)

    if not TYPE_CHECKING:  # mypy reports such misuse statically; at run time:

        def __getattr__(self, name: str) -> NoReturn:
            how = "transaction" if self._write else "view"
            raise AttributeError(
                f"db.{how}() returns a context manager, not a transaction (it has no "
                f"{name!r}): use `with db.{how}() as txn:`, or for a transaction held in a "
                f"variable txn = db.begin(write={self._write}) ... txn.commit()"
            )


class Db(_sett.Db):
    """An open database; see ``sett.open``. Usable as a mapping of bytes to bytes
    and as a context manager that closes it."""

    def transaction(self) -> TxnBlock:
        """A read-write transaction for a ``with`` block: ``with db.transaction()
        as txn:``. It begins on entering the block and commits when the block
        ends without an exception (ConflictError if it must be retried; see
        ``update``); an exception discards it and propagates.

        The object returned is not the transaction: using it outside ``with``
        (``txn = db.transaction(); txn.put(...)``) raises AttributeError saying
        so, rather than leaving writes to be discarded unseen. For a transaction
        held in a variable, use ``db.begin(write=True)`` and ``txn.commit()``."""
        return TxnBlock(self, True)

    def view(self) -> TxnBlock:
        """A read-only transaction for a ``with`` block (``with db.view() as
        txn:``): a stable snapshot while writes go on. Like ``transaction()``, it
        must be used in a ``with`` statement."""
        return TxnBlock(self, False)

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


def open(  # noqa: A001 (mirrors sett.open of the docs)
    path: Union[str, "os.PathLike[str]"],
    *,
    encryption_key: Optional[Union[bytes, bytearray]] = None,
    encryption_key_rotation: Optional[Union[float, datetime.timedelta]] = None,
    **options: "Unpack[OpenOptions]",
) -> Db:
    """Opens (or creates) the database in directory ``path``. Options are the
    names of core's table of options, ``sett.OPTIONS`` (docs/options.md, with
    defaults and bounds): value_threshold, memtable_size, sync_writes,
    read_only, max_value_size, ... Table compression: ``compression="lz4"``
    (or ``"zstd"``, ``"none"``, the default) for every level, or
    ``compression_per_level=["none", "none", "lz4", "zstd"]`` (entry N for
    level N, the last repeating), and ``zstd_level`` (default 3). The memory
    budget for reading: ``cache_size`` in bytes (default 256 MiB), reported by
    ``stats()`` as ``cache_capacity`` and ``cache_usage``. Merges
    (``db.merge(key, operand)``) need ``merge_operator``, the name of a
    built-in: ``"sett.u64_add"`` (8-byte little-endian counters),
    ``"sett.append"`` or ``"sett.max"``; the database records it, and a later
    open with another one raises MergeOperatorMismatchError. An unknown
    option is a TypeError, a value of the wrong type a TypeError naming it, an
    unknown codec name a ValueError naming it; a value outside the option's
    bounds raises InvalidOptionError naming the option and its bounds.

    Encryption at rest: ``encryption_key`` (32 bytes) encrypts every file
    of a new database and is needed for every later open
    (WrongEncryptionKeyError for another key, EncryptionKeyRequiredError for
    none, NotEncryptedError for a key on a plain database);
    ``encryption_key_rotation`` (seconds or a timedelta, default 10 days, 0:
    never by age) is how old a data key gets before files get a new one, and
    ``Db.rotate_encryption_key()`` makes one at once. A str key is a
    TypeError, another length than 32 a ValueError."""
    return Db(
        path,
        encryption_key=encryption_key,
        encryption_key_rotation=encryption_key_rotation,
        **options,
    )
