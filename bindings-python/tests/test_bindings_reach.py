"""What each binding reaches, checked against one source each.

Options: the fields of core's `Options` struct (core/src/options.rs) are the
list. Each must have a C setter `sett_options_set_<field>` in include/sett.h,
be accepted as a keyword by `sett.open` (checked at run time against the
installed module), and be a field of the Go package's `Options` struct
(bindings-go/*.go; Go names are compared without underscores and case) -- or
be listed below with a reason.

C functions: every function declared in include/sett.h must be reached from
Python. The extension calls the Rust core directly, not the C ABI, so
C_TO_PYTHON maps each header function to the Python attribute that does its
job (checked with hasattr on the installed module), and C_NOT_IN_PYTHON lists
the ones Python has no use for, with the reason. Both lists must match the
header exactly: a new C function fails this test until it is mapped.
"""

from __future__ import annotations

import pathlib
import re
import warnings
from typing import Dict, List, Set

import pytest
import sett

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = ROOT / "include" / "sett.h"
CORE_OPTIONS = ROOT / "core" / "src" / "options.rs"

# --- options -------------------------------------------------------------

#: Core options that no binding sets, and why.
OPTION_NOT_IN_BINDINGS: Dict[str, str] = {
    "dir": "the path argument of sett_open / sett.open(path) / Open(dir), not an option setter",
    "clock": "a Rust closure for tests that move time by hand; TTLs use the system clock",
    "fs": "the file-system layer for the power-loss tests (SimFs); bindings use the real one",
}


def core_option_fields() -> List[str]:
    src = CORE_OPTIONS.read_text()
    m = re.search(r"pub struct Options \{(.*?)\n\}", src, re.S)
    assert m, f"no `pub struct Options` in {CORE_OPTIONS}"
    fields = re.findall(r"^\s*pub (\w+):", m.group(1), re.M)
    assert len(fields) >= 10, fields
    return fields


def header_functions() -> List[str]:
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    names = re.findall(r"^[A-Za-z_][\w \t\*]*?\b(sett_\w+)\s*\(", text, re.M)
    assert len(names) >= 50, names
    assert len(set(names)) == len(names), "a function declared twice?"
    return names


def go_options_fields() -> "tuple[pathlib.Path, Set[str]]":
    for f in sorted(ROOT.glob("bindings-go/*.go")):
        if f.name.endswith("_test.go"):
            continue
        m = re.search(r"^type Options struct \{(.*?)^\}", f.read_text(), re.S | re.M)
        if not m:
            continue
        names: Set[str] = set()
        for line in m.group(1).splitlines():
            line = line.split("//")[0].strip()
            if not line:
                continue
            decl = re.match(r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s+\S", line)
            if decl:
                names.update(n.strip() for n in decl.group(1).split(","))
        return f, names
    pytest.fail("no `type Options struct` in bindings-go/*.go")


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


#: The Go package names options as Badger does where Badger has the setting.
GO_NAMES: Dict[str, str] = {
    "memtable_size": "MemTableSize",
    "max_memtables": "NumMemtables",
    "table_size": "BaseTableSize",
    "level_base_size": "BaseLevelSize",
    "level_multiplier": "LevelSizeMultiplier",
    "num_levels": "MaxLevels",
    "l0_compaction_trigger": "NumLevelZeroTables",
    "l0_slowdown_trigger": "NumLevelZeroTablesSlowdown",
    "l0_stop_trigger": "NumLevelZeroTablesStall",
    "compaction_threads": "NumCompactors",
    "vlog_file_size": "ValueLogFileSize",
    "vlog_gc_ratio": "ValueLogGCRatio",
    "vlog_gc_idle_ratio": "ValueLogGCIdleRatio",
    "vlog_gc_rate": "ValueLogGCRate",
    "vlog_gc_write_factor": "ValueLogGCWriteFactor",
    "zstd_level": "ZSTDCompressionLevel",
}


def _go_norm(core_name: str) -> str:
    return _norm(GO_NAMES.get(core_name, core_name))


def test_every_core_option_has_a_c_setter():
    declared = set(header_functions())
    missing = [
        f
        for f in core_option_fields()
        if f not in OPTION_NOT_IN_BINDINGS and f"sett_options_set_{f}" not in declared
    ]
    assert not missing, f"core options without sett_options_set_*: {missing}"
    setters = {n[len("sett_options_set_") :] for n in declared if n.startswith("sett_options_set_")}
    assert setters <= set(core_option_fields()), setters - set(core_option_fields())


def test_every_core_option_is_a_python_keyword(tmp_path):
    missing = []
    for f in core_option_fields():
        if f in OPTION_NOT_IN_BINDINGS:
            continue
        # A value of the wrong type: a known option fails naming itself before
        # anything is opened; an unknown one fails as "unknown option". (A
        # string option, such as compression, refuses this one as a ValueError.)
        with pytest.raises((TypeError, ValueError)) as e:
            sett.open(tmp_path / f, **{f: "not a value"})  # type: ignore[arg-type]
        if not str(e.value).startswith(f"option {f}"):
            missing.append((f, str(e.value)))
    assert not missing, f"options sett.open does not take: {missing}"
    with pytest.raises(TypeError, match="unknown option"):
        sett.open(tmp_path / "x", no_such_option=1)


def test_every_core_option_is_in_the_go_options_struct():
    path, names = go_options_fields()
    have = {_norm(n) for n in names}
    core = core_option_fields()
    missing = [f for f in core if f not in OPTION_NOT_IN_BINDINGS and _go_norm(f) not in have]
    assert not missing, f"core options missing from Options in {path}: {missing}"
    # Go-only fields (say, a logger) are allowed; they are only reported.
    unknown = sorted(n for n in names if _norm(n) not in {_go_norm(f) for f in core})
    if unknown:
        warnings.warn(f"Go Options fields with no core option: {unknown}", stacklevel=1)


def test_option_exceptions_are_core_options():
    assert set(OPTION_NOT_IN_BINDINGS) <= set(core_option_fields())
    assert set(GO_NAMES) <= set(core_option_fields())


# --- C functions -> Python -------------------------------------------------

#: Header function -> the Python attribute ("module" or "Class.method") doing its job.
C_TO_PYTHON: Dict[str, str] = {
    "sett_version_number": "__version__",
    "sett_version_string": "__version__",
    "sett_open": "open",
    "sett_options_new": "open",  # options are keyword arguments of open()
    "sett_close": "Db.close",
    "sett_stats": "Db.stats",
    "sett_get": "Db.get",
    "sett_get_entry": "Db.get_entry",
    "sett_multi_get": "Db.get_many",
    "sett_put": "Db.put",
    "sett_put_with": "Db.put",  # ttl=, meta=
    "sett_delete": "Db.delete",
    "sett_write": "Batch.commit",
    "sett_batch_new": "Db.batch",
    "sett_batch_put": "Batch.put",
    "sett_batch_put_with": "Batch.put",  # ttl=, meta=
    "sett_batch_delete": "Batch.delete",
    "sett_batch_clear": "Batch.clear",
    "sett_batch_count": "Batch.__len__",
    "sett_run_value_log_gc": "Db.run_value_log_gc",
    "sett_flatten": "Db.flatten",
    "sett_flush": "Db.flush",
    "sett_drop_all": "Db.drop_all",
    "sett_drop_prefix": "Db.drop_prefix",
    "sett_delete_range": "Db.delete_range",
    "sett_batch_delete_range": "Batch.delete_range",
    "sett_txn_delete_range": "Txn.delete_range",
    "sett_backup": "Db.backup",
    "sett_restore": "Db.restore",
    "sett_backup_to": "Db.backup",  # a file object with write()
    "sett_restore_from": "Db.restore",  # a file object with read()
    "sett_verify": "Db.verify",
    "sett_checkpoint": "Db.checkpoint",
    "sett_stats_ex": "Db.stats",  # the GC counts and the rest, in one dict
    "sett_txn_get_entry": "Txn.get_entry",
    "sett_bulk_loader_add_with": "BulkLoader.add",  # ttl=, meta=
    "sett_txn_begin": "Db.begin",
    "sett_txn_get": "Txn.get",
    "sett_txn_put": "Txn.put",
    "sett_txn_put_with": "Txn.put",
    "sett_txn_delete": "Txn.delete",
    "sett_txn_commit": "Txn.commit",
    "sett_txn_discard": "Txn.discard",
    "sett_txn_iter_new": "Txn.iter",
    "sett_iter_new": "Db.iter",
    "sett_iter_options_new": "Db.iter",  # keyword arguments of iter()
    "sett_iter_options_set_prefix": "Db.iter",  # prefix=
    "sett_iter_options_set_bounds": "Db.iter",  # start=, end=
    "sett_iter_options_set_reverse": "Db.iter",  # reverse=
    "sett_iter_options_set_keys_only": "Db.iter",  # keys_only=
    "sett_iter_valid": "Iter.__next__",  # StopIteration at the end
    "sett_iter_next": "Iter.__next__",
    "sett_iter_next_batch": "Iter.__next__",  # the iterator reads in chunks
    "sett_iter_key": "Iter.__next__",
    "sett_iter_value": "Iter.__next__",
    "sett_iter_seek": "Iter.seek",
    "sett_iter_rewind": "Iter.rewind",
    "sett_iter_options_set_prefetch": "Db.iter",  # prefetch=
    "sett_sequence_new": "Db.sequence",
    "sett_sequence_next": "Sequence.next",
    "sett_sequence_release": "Sequence.release",
    "sett_bulk_loader_new": "Db.bulk_load",
    "sett_bulk_loader_add": "BulkLoader.add",
    "sett_bulk_loader_finish": "BulkLoader.finish",
    "sett_iter_free": "Iter.close",
    "sett_error_code": "Error",  # one exception class per code
    "sett_error_message": "Error",  # str(exception)
    "sett_status_string": "Error",
    "sett_subscribe": "Db.subscribe",
    "sett_subscription_next": "Subscription.next",
    "sett_subscription_close": "Subscription.close",
    "sett_last_version": "Db.last_version",
    "sett_txn_read_ts": "Txn.read_ts",
    "sett_error_version": "FellBehindError",  # .resume_from; FeedHistoryTooShortError.oldest
    "sett_keyspace_open": "Db.keyspace",
    "sett_keyspace_options_new": "Db.keyspace",  # keyword arguments of keyspace()
    "sett_keyspace_options_set_value_threshold": "Db.keyspace",  # value_threshold=
    "sett_keyspace_options_set_default_ttl": "Db.keyspace",  # default_ttl=
    "sett_keyspace_options_set_compression": "Db.keyspace",  # compression=
    "sett_keyspace_compression": "Keyspace.compression",
    "sett_keyspace_names": "Db.keyspaces",
    "sett_drop_keyspace": "Db.drop_keyspace",
    "sett_keyspace_id": "Keyspace.id",
    "sett_keyspace_put": "Keyspace.put",
    "sett_keyspace_put_with": "Keyspace.put",  # ttl=, meta=
    "sett_keyspace_get": "Keyspace.get",
    "sett_keyspace_multi_get": "Keyspace.get_many",
    "sett_keyspace_delete": "Keyspace.delete",
    "sett_keyspace_delete_range": "Keyspace.delete_range",
    "sett_keyspace_iter_new": "Keyspace.iter",
    "sett_keyspace_subscribe": "Keyspace.subscribe",
    "sett_batch_put_in": "Batch.put",  # keyspace=
    "sett_batch_delete_in": "Batch.delete",  # keyspace=
    "sett_batch_delete_range_in": "Batch.delete_range",  # keyspace=
    "sett_txn_get_in": "Txn.get",  # keyspace=
    "sett_txn_put_in": "Txn.put",  # keyspace=
    "sett_txn_delete_in": "Txn.delete",  # keyspace=
    "sett_txn_iter_new_in": "Txn.iter",  # keyspace=
}

#: Header functions Python has no counterpart for, and why.
C_NOT_IN_PYTHON: Dict[str, str] = {
    "sett_options_free": "memory: Python frees its objects itself",
    "sett_db_free": "memory: a Db is freed when unreferenced (close() releases the directory)",
    "sett_txn_free": "memory: a Txn is freed (and discarded) when unreferenced",
    "sett_batch_free": "memory: a Batch is freed when unreferenced",
    "sett_iter_options_free": "memory: iterator options are keyword arguments",
    "sett_buf_free": "memory: values come back as bytes objects",
    "sett_error_free": "memory: errors are exceptions",
    "sett_get_into": "a caller-owned buffer: Python returns new bytes objects",
    "sett_bulk_loader_free": "memory: a BulkLoader is freed (the load abandoned) when unreferenced",
    "sett_sequence_free": "memory: a Sequence is freed when unreferenced",
    "sett_changes_free": "memory: changes come back as Change objects",
    "sett_keyspace_close": "memory: a Keyspace is freed when unreferenced",
    "sett_keyspace_options_free": "memory: keyspace options are keyword arguments",
}


def c_to_python() -> Dict[str, str]:
    """C_TO_PYTHON plus every sett_options_set_* of the header, which maps to
    a keyword argument of sett.open (checked one by one by the options tests)."""
    m = dict(C_TO_PYTHON)
    for n in header_functions():
        if n.startswith("sett_options_set_"):
            m[n] = "open"
    return m


def test_every_c_function_is_mapped_to_python_or_excepted():
    declared = set(header_functions())
    to_python = c_to_python()
    mapped = set(to_python) | set(C_NOT_IN_PYTHON)
    assert not set(to_python) & set(C_NOT_IN_PYTHON)
    assert not declared - mapped, f"C functions with no Python mapping: {sorted(declared - mapped)}"
    assert not mapped - declared, f"mapped but not in sett.h: {sorted(mapped - declared)}"


def test_python_has_the_attribute_each_c_function_maps_to():
    missing = []
    for c_name, target in sorted(c_to_python().items()):
        obj: object = sett
        for part in target.split("."):
            if not hasattr(obj, part):
                missing.append(f"{c_name} -> sett.{target}")
                break
            obj = getattr(obj, part)
    assert not missing, missing
