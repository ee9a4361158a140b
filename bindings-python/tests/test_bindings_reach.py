"""What each binding reaches, checked against one source each.

Options: core's table of options (sett::options::OPTIONS, exposed here as
sett.OPTIONS) is the list. Every name must be accepted as a keyword by
`sett.open` (checked at run time against the installed module) and have a C
setter `sett_options_set_<name>` in include/sett.h; the header's setter types
and stated defaults, Go's `Options` struct and the stubs' `OpenOptions` are
checked against the same table by ffi/tests/options_table.rs.

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
from typing import Dict, List

import pytest
import sett

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = ROOT / "include" / "sett.h"

# --- options -------------------------------------------------------------


def table_option_names() -> List[str]:
    names = [o["name"] for o in sett.OPTIONS]
    assert len(names) >= 20, names
    assert len(set(names)) == len(names), "a name twice in sett.OPTIONS"
    return names


def header_functions() -> List[str]:
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    names = re.findall(r"^[A-Za-z_][\w \t\*]*?\b(sett_\w+)\s*\(", text, re.M)
    assert len(names) >= 50, names
    assert len(set(names)) == len(names), "a function declared twice?"
    return names


#: C setters of settings outside the table (core keeps its secret and its code out of the
#: table of printable options) and the keyword of sett.open taking each.
NOT_IN_TABLE: Dict[str, str] = {
    "encryption_key": "encryption_key",
    "encryption_key_rotation_ms": "encryption_key_rotation",
    # Code in core (a trait object), not a row of the table: C names a built-in.
    "merge_operator": "merge_operator",
}


def test_every_table_option_has_a_c_setter_and_no_setter_is_extra():
    declared = set(header_functions())
    table = table_option_names()
    missing = [n for n in table if f"sett_options_set_{n}" not in declared]
    assert not missing, f"options without sett_options_set_*: {missing}"
    setters = {n[len("sett_options_set_") :] for n in declared if n.startswith("sett_options_set_")}
    assert setters - set(NOT_IN_TABLE) <= set(table), setters - set(NOT_IN_TABLE) - set(table)
    assert set(NOT_IN_TABLE) <= setters, set(NOT_IN_TABLE) - setters
    assert not set(NOT_IN_TABLE) & set(table)


def test_every_setting_outside_the_table_is_a_keyword_of_open(tmp_path):
    # A value of the wrong type fails naming the keyword before anything is
    # opened: the keyword is taken (an unknown one says "unknown option").
    for setter, keyword in NOT_IN_TABLE.items():
        with pytest.raises(TypeError) as e:
            sett.open(tmp_path / setter, **{keyword: object()})  # type: ignore[arg-type]
        assert keyword in str(e.value) and "unknown option" not in str(e.value), e.value


def test_every_table_option_is_a_python_keyword(tmp_path):
    missing = []
    for f in table_option_names():
        # A value of the wrong type: a known option fails naming itself before
        # anything is opened; an unknown one fails as "unknown option". (A
        # string option, such as compression, refuses this one as a ValueError.)
        with pytest.raises((TypeError, ValueError)) as e:
            sett.open(tmp_path / f, **{f: "not a value"})  # type: ignore[misc]
        if not str(e.value).startswith(f"option {f}"):
            missing.append((f, str(e.value)))
    assert not missing, f"options sett.open does not take: {missing}"
    with pytest.raises(TypeError, match="unknown option"):
        sett.open(tmp_path / "x", no_such_option=1)  # type: ignore[call-arg]


# --- C functions -> Python -------------------------------------------------

#: Header function -> the Python attribute ("module" or "Class.method") doing its job.
C_TO_PYTHON: Dict[str, str] = {
    "sett_version_number": "__version__",
    "sett_version_string": "__version__",
    "sett_open": "open",
    "sett_merge": "Db.merge",
    "sett_options_set_merge_operator": "open",  # merge_operator=
    "sett_options_new": "open",  # options are keyword arguments of open()
    "sett_close": "Db.close",
    "sett_stats": "Db.stats",
    "sett_get": "Db.get",
    "sett_get_entry": "Db.get_entry",
    "sett_multi_get": "Db.get_many",
    "sett_multi_get_into": "Db.get_many",
    "sett_put": "Db.put",
    "sett_put_with": "Db.put",  # ttl=, meta=
    "sett_delete": "Db.delete",
    "sett_write": "Batch.commit",
    "sett_batch_new": "Db.batch",
    "sett_batch_put": "Batch.put",
    "sett_batch_merge": "Batch.merge",
    "sett_batch_put_with": "Batch.put",  # ttl=, meta=
    "sett_batch_delete": "Batch.delete",
    "sett_batch_clear": "Batch.clear",
    "sett_batch_count": "Batch.__len__",
    "sett_run_value_log_gc": "Db.run_value_log_gc",
    "sett_flatten": "Db.flatten",
    "sett_flush": "Db.flush",
    "sett_rotate_encryption_key": "Db.rotate_encryption_key",
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
    "sett_txn_merge": "Txn.merge",
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
    "sett_iter_next_view": "Iter.__next__",  # chunks lent without a copy
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
    "sett_keyspace_merge": "Keyspace.merge",
    "sett_keyspace_put_with": "Keyspace.put",  # ttl=, meta=
    "sett_keyspace_get": "Keyspace.get",
    "sett_keyspace_multi_get": "Keyspace.get_many",
    "sett_keyspace_multi_get_into": "Keyspace.get_many",
    "sett_keyspace_delete": "Keyspace.delete",
    "sett_keyspace_delete_range": "Keyspace.delete_range",
    "sett_keyspace_iter_new": "Keyspace.iter",
    "sett_keyspace_subscribe": "Keyspace.subscribe",
    "sett_batch_put_in": "Batch.put",  # keyspace=
    "sett_batch_merge_in": "Batch.merge",  # keyspace=
    "sett_batch_delete_in": "Batch.delete",  # keyspace=
    "sett_batch_delete_range_in": "Batch.delete_range",  # keyspace=
    "sett_txn_get_in": "Txn.get",  # keyspace=
    "sett_txn_put_in": "Txn.put",  # keyspace=
    "sett_txn_merge_in": "Txn.merge",  # keyspace=
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
