"""Type stubs of the compiled module sett._sett."""

import datetime
import os
from types import TracebackType
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Optional,
    Protocol,
    Tuple,
    Type,
    TypedDict,
    TypeVar,
    Union,
    overload,
)

from typing_extensions import Unpack

Bytes = Union[bytes, bytearray]
_D = TypeVar("_D", bound="Db")
_X = TypeVar("_X", bound="Txn")

__version__: str

class _Writer(Protocol):
    """A binary file object Db.backup() writes to."""
    def write(self, data: bytes, /) -> Optional[int]: ...

class _Reader(Protocol):
    """A binary file object Db.restore() reads from."""
    def read(self, n: int, /) -> Bytes: ...

class Error(Exception): ...
class ConflictError(Error): ...
class CorruptionError(Error): ...
class ClosedError(Error): ...
class TooBigError(Error): ...
class LockedError(Error): ...
class ReadOnlyError(Error): ...
class PoisonedError(Error): ...
class InvalidOptionError(Error): ...
class InvalidArgumentError(Error): ...
class NotFoundError(Error): ...
class MergeOperatorMissingError(Error): ...
class MergeOperatorMismatchError(Error): ...
class MergeFailedError(Error): ...
class IOError(Error): ...
class UnsupportedVersionError(Error): ...
class WrongEncryptionKeyError(Error): ...
class EncryptionKeyRequiredError(Error): ...
class NotEncryptedError(Error): ...

class FellBehindError(Error):
    resume_from: int

class FeedHistoryTooShortError(Error):
    oldest: int

class Change:
    """One committed write; value is None for a delete."""
    @property
    def key(self) -> bytes: ...
    @property
    def value(self) -> Optional[bytes]: ...
    @property
    def deleted(self) -> bool: ...
    @property
    def merged(self) -> bool:
        """A merge: value is the operand written, not the key's new value."""
    @property
    def range_end(self) -> Optional[bytes]:
        """A range delete's end (keys in [key, range_end) deleted; b"": unbounded); else None."""
    @property
    def version(self) -> int: ...
    @property
    def user_meta(self) -> int: ...
    @property
    def expires_at(self) -> int: ...

_S = TypeVar("_S", bound="Subscription")

class Subscription(Iterator[List[Change]]):
    """A live change-feed subscription (Db.subscribe); a context manager."""
    def next(self, timeout: Optional[float] = None) -> Optional[List[Change]]: ...
    @property
    def start_version(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __iter__(self: _S) -> _S: ...
    def __next__(self) -> List[Change]: ...
    def __enter__(self: _S) -> _S: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> Literal[False]: ...

_T_co = TypeVar("_T_co", covariant=True)

class Iter(Iterator[_T_co]):
    """Yields (key, value) tuples, keys, or values, per the call that made it."""
    def __iter__(self) -> Iter[_T_co]: ...
    def __next__(self) -> _T_co: ...
    def seek(self, key: Bytes) -> None:
        """Next item: the first key >= key (reverse: the last key <= key), within bounds."""
    def rewind(self) -> None:
        """Next item: the first key (reverse: the last) within bounds."""
    def close(self) -> None: ...

class Store:
    """An ordered map of a database: Db (its default keyspace) or a Keyspace."""
    def get(self, key: Bytes, default: Optional[bytes] = None) -> Optional[bytes]: ...
    def get_entry(self, key: Bytes) -> Optional[Tuple[bytes, int, int, int]]: ...
    def __getitem__(self, key: Bytes) -> bytes: ...
    def __setitem__(self, key: Bytes, value: Bytes) -> None: ...
    def __delitem__(self, key: Bytes) -> None: ...
    def __contains__(self, key: object) -> bool: ...
    def put(
        self, key: Bytes, value: Bytes, *, ttl: Optional[float] = None, meta: int = 0
    ) -> None: ...
    def merge(self, key: Bytes, operand: Bytes) -> None:
        """Merges operand into key with the database's merge operator (open's merge_operator)."""
    def delete(self, key: Bytes) -> None: ...
    def get_many(self, keys: Iterable[Bytes]) -> List[Optional[bytes]]:
        """The values at one consistent point, in the order asked."""
    def delete_range(self, start: Bytes, end: Bytes) -> None:
        """Deletes every key in [start, end) with one range tombstone (b"" end: to the end)."""
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        keys_only: Literal[False] = False,
        *,
        prefetch: Optional[int] = None,
    ) -> Iter[Tuple[bytes, bytes]]: ...
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        *,
        keys_only: Literal[True],
        prefetch: Optional[int] = None,
    ) -> Iter[bytes]: ...
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        keys_only: bool = False,
        *,
        prefetch: Optional[int] = None,
    ) -> Iter[Any]: ...
    def keys(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
    ) -> Iter[bytes]: ...
    def items(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
    ) -> Iter[Tuple[bytes, bytes]]: ...
    def values(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
    ) -> Iter[bytes]: ...
    def __iter__(self) -> Iter[bytes]: ...
    def subscribe(
        self,
        prefixes: Optional[List[Bytes]] = None,
        since: Optional[int] = None,
        max_pending_bytes: Optional[int] = None,
    ) -> Subscription:
        """Committed writes under prefixes, in version order (the change feed)."""

class Keyspace(Store):
    """A named, independent ordered map in one database (Db.keyspace)."""
    @property
    def name(self) -> str: ...
    @property
    def id(self) -> int: ...
    @property
    def value_threshold(self) -> Optional[int]: ...
    @property
    def default_ttl(self) -> Optional[float]: ...
    @property
    def compression(self) -> Optional[str]: ...

class Txn:
    def get(
        self, key: Bytes, default: Optional[bytes] = None, *, keyspace: Optional[Keyspace] = None
    ) -> Optional[bytes]: ...
    def get_entry(self, key: Bytes) -> Optional[Tuple[bytes, int, int, int]]: ...
    def put(
        self,
        key: Bytes,
        value: Bytes,
        *,
        ttl: Optional[float] = None,
        meta: int = 0,
        keyspace: Optional[Keyspace] = None,
    ) -> None: ...
    def merge(self, key: Bytes, operand: Bytes, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete(self, key: Bytes, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete_range(
        self, start: Bytes, end: Bytes, *, keyspace: Optional[Keyspace] = None
    ) -> None:
        """Buffers a delete of [start, end); this transaction's reads stop seeing it."""
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        keys_only: Literal[False] = False,
        *,
        prefetch: Optional[int] = None,
        keyspace: Optional[Keyspace] = None,
    ) -> Iter[Tuple[bytes, bytes]]: ...
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        *,
        keys_only: Literal[True],
        prefetch: Optional[int] = None,
        keyspace: Optional[Keyspace] = None,
    ) -> Iter[bytes]: ...
    @overload
    def iter(
        self,
        prefix: Optional[Bytes] = None,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        reverse: bool = False,
        keys_only: bool = False,
        *,
        prefetch: Optional[int] = None,
        keyspace: Optional[Keyspace] = None,
    ) -> Iter[Any]: ...
    def commit(self) -> None: ...
    def discard(self) -> None: ...
    @property
    def read_ts(self) -> int: ...
    @property
    def active(self) -> bool: ...
    @property
    def write(self) -> bool: ...
    def __enter__(self: _X) -> _X: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...

class Batch:
    """Puts and deletes applied atomically by commit(), or at the end of a with
    block that raised nothing (an exception discards them); keyspace= writes
    into a keyspace, several of them in one batch."""
    def put(
        self,
        key: Bytes,
        value: Bytes,
        *,
        ttl: Optional[float] = None,
        meta: int = 0,
        keyspace: Optional[Keyspace] = None,
    ) -> None: ...
    def merge(self, key: Bytes, operand: Bytes, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete(self, key: Bytes, *, keyspace: Optional[Keyspace] = None) -> None: ...
    def delete_range(
        self, start: Bytes, end: Bytes, *, keyspace: Optional[Keyspace] = None
    ) -> None:
        """Deletes [start, end) at commit; earlier puts of this batch in the range go too."""
    def commit(self) -> None: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> Literal[False]: ...

class Sequence:
    """Increasing integers stored under a key; release() gives back the unused lease."""
    def next(self) -> int: ...
    def __next__(self) -> int: ...
    def __iter__(self) -> Sequence: ...
    def release(self) -> None: ...
    def __enter__(self) -> Sequence: ...
    def __exit__(self, *args: object) -> Literal[False]: ...

class BulkLoader:
    """Entries in strictly increasing key order, loaded into an empty database."""
    def add(
        self, key: Bytes, value: Bytes, *, ttl: Optional[float] = None, meta: int = 0
    ) -> None: ...
    def finish(self) -> int: ...
    def abandon(self) -> None: ...
    def __enter__(self) -> BulkLoader: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> Literal[False]: ...

#: What an option of open() / Db() takes: ints, bools, a float
#: (vlog_gc_ratio, vlog_gc_idle_ratio), a codec name ("none", "lz4", "zstd") for compression, and a
#: list of codec names (one per level, the last repeating) for
#: compression_per_level.
OptionValue = Union[int, bool, float, str, List[str]]

class OpenOptions(TypedDict, total=False):
    """The keyword arguments of open() / Db(): core's table of options, one
    key per entry of OPTIONS (defaults and bounds in docs/options.md)."""

    value_threshold: int
    memtable_size: int
    max_memtables: int
    block_size: int
    compression: str
    compression_per_level: List[str]
    zstd_level: int
    bloom_bits_per_key: int
    cache_size: int
    table_size: int
    level_base_size: int
    level_multiplier: int
    level_dynamic: bool
    num_levels: int
    l0_compaction_trigger: int
    l0_slowdown_trigger: int
    l0_stop_trigger: int
    compaction_threads: int
    sync_writes: bool
    vlog_file_size: int
    vlog_gc_ratio: float
    vlog_gc_idle_ratio: float
    vlog_gc_rate: int
    vlog_gc_write_factor: int
    max_key_size: int
    max_value_size: int
    read_only: bool
    max_txn_size: int
    change_feed_history_bytes: int
    #: Not in OPTIONS (core takes code there): a built-in merge operator's
    #: name, "sett.u64_add", "sett.append" or "sett.max"; None for none.
    merge_operator: Optional[str]

class OptionInfo(TypedDict):
    """One entry of OPTIONS: core's table of options."""

    name: str
    #: "bool", "u32", "i32", "usize", "u64", "f64", "codec" or "codec list".
    type: str
    default: Union[int, bool, float, str, List[str]]
    #: The least value accepted (ints: the bounds within the type's range;
    #: floats: inclusive); None for bools and codecs.
    min: Optional[Union[int, float]]
    #: The largest int accepted, or the first float refused; None for bools and codecs.
    max: Optional[Union[int, float]]
    #: The bounds in words ("4 KiB..=4 GiB", "[0, 1)"), None if any value of the type goes.
    bounds: Optional[str]
    doc: str

#: Core's table of options, in its order: what open() accepts, with defaults and bounds.
OPTIONS: List[OptionInfo]

class Db(Store):
    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        encryption_key: Optional[Bytes] = None,
        encryption_key_rotation: Optional[Union[float, datetime.timedelta]] = None,
        **options: Unpack[OpenOptions],
    ) -> None: ...
    def rotate_encryption_key(self) -> int:
        """A new data key for the files made from now on; returns its id."""
    def batch(self) -> Batch:
        """A native write batch to fill and commit atomically (a context manager)."""
    def sequence(self, key: Bytes, bandwidth: int) -> Sequence:
        """Increasing integers stored under key, leased bandwidth at a time."""
    def bulk_load(self) -> BulkLoader:
        """Loads sorted entries straight into this empty database."""
    def begin(self, update: Optional[bool] = None, *, write: Optional[bool] = None) -> Txn:
        """Read-write unless update (or its alias write) is False."""
    def last_version(self) -> int: ...
    def keyspace(
        self,
        name: str,
        value_threshold: Optional[int] = None,
        default_ttl: Optional[float] = None,
        compression: Optional[str] = None,
    ) -> Keyspace:
        """Opens keyspace name, creating it with these options if missing."""
    def keyspaces(self) -> List[str]: ...
    def drop_keyspace(self, name: str) -> None:
        """Drops the keyspace and its keys in one atomic write; NotFoundError if absent."""
    def run_value_log_gc(self, discard_ratio: float = 0.5) -> bool: ...
    def flatten(self) -> None: ...
    def flush(self) -> None: ...
    def drop_all(self) -> None: ...
    def drop_prefix(self, prefix: Bytes) -> None: ...
    def backup(self, dest: Union[str, os.PathLike[str], _Writer], since: int = 0) -> int: ...
    def restore(self, src: Union[str, os.PathLike[str], _Reader]) -> int: ...
    def verify(self) -> Dict[str, int]:
        """Checks every checksum; CorruptionError names the first damaged file."""
    def checkpoint(self, path: Union[str, os.PathLike[str]]) -> Dict[str, Union[int, float]]:
        """Hard-links an openable copy into the new directory `path`; a dict of
        files_linked, files_copied, bytes_linked, bytes_copied, elapsed_seconds."""
    def stats(self) -> Dict[str, Any]: ...
    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self: _D) -> _D: ...
    def __exit__(self, *args: object) -> bool: ...
