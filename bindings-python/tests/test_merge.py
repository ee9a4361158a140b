"""Merge operators from Python: open(merge_operator=...), Db/Keyspace.merge,
Batch.merge and Txn.merge (keyspace= too), the feed's merged changes, and
the refusals: wrong types, an unknown operator, a merge without one, a
reopen with another one, an oversized operand in a batch."""

import struct

import pytest
import sett


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def test_a_u64_counter_adds_up_across_a_reopen(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        for _ in range(5):
            db.merge(b"hits", u64(1))
        assert db[b"hits"] == u64(5)
        db.flush()
        db.merge(b"hits", u64(10))
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        assert db[b"hits"] == u64(15)
        db.merge(b"hits", u64(2**64 - 1))  # wraps around: minus one
        assert db[b"hits"] == u64(14)


def test_append_and_max_fold_in_write_order(tmp_path):
    with sett.open(tmp_path / "a", merge_operator="sett.append") as db:
        db[b"log"] = b"a"
        db.merge(b"log", b"bc")
        db.merge(b"log", bytearray(b"d"))
        assert db[b"log"] == b"abcd"
        assert list(db.items()) == [(b"log", b"abcd")]
    with sett.open(tmp_path / "m", merge_operator="sett.max") as db:
        for v in (b"b", b"z", b"q"):
            db.merge(b"m", v)
        assert db[b"m"] == b"z"


def test_batch_and_transaction_merges_combine_with_their_other_writes(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.append") as db:
        logs = db.keyspace("logs")
        with db.batch() as b:
            b.put(b"k", b"x")
            b.merge(b"k", b"y")
            b.merge(b"k", b"z")
            b.merge(b"k", b"1", keyspace=logs)
            assert len(b) == 4
        assert db[b"k"] == b"xyz" and logs[b"k"] == b"1"
        with db.transaction() as txn:
            txn.merge(b"k", b"!")
            txn.merge(b"k", b"2", keyspace=logs)
            assert txn.get(b"k") == b"xyz!"  # the transaction sees its own merge
            assert db[b"k"] == b"xyz"  # others do not, before the commit
        assert db[b"k"] == b"xyz!" and logs[b"k"] == b"12"
        logs.merge(b"k", b"3")
        assert logs[b"k"] == b"123" and db[b"k"] == b"xyz!"


def test_the_feed_marks_a_merge_and_carries_its_operand(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.append") as db:
        with db.subscribe() as sub:
            db[b"k"] = b"a"
            db.merge(b"k", b"b")
            seen: list[sett.Change] = []
            while len(seen) < 2:
                got = sub.next(timeout=5)
                assert got is not None, "no change within 5 s"
                seen.extend(got)
        assert [(c.key, c.value, c.merged) for c in seen] == [
            (b"k", b"a", False),
            (b"k", b"b", True),
        ]


def test_wrong_types_are_type_errors_and_write_nothing(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.append") as db:
        db.merge(b"k", b"a")
        with pytest.raises(TypeError):
            db.merge("k", b"b")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            db.merge(b"k", "b")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            db.merge(b"k", 1)  # type: ignore[arg-type]
        with db.batch() as b:
            with pytest.raises(TypeError):
                b.merge(b"k", None)  # type: ignore[arg-type]
        with pytest.raises(sett.InvalidArgumentError):
            db.merge(b"", b"b")  # an empty key
        assert db[b"k"] == b"a"
    with pytest.raises(TypeError, match="merge_operator"):
        sett.open(tmp_path, merge_operator=1)  # type: ignore[arg-type]


def test_an_unknown_operator_is_a_value_error_naming_the_built_ins(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        db.merge(b"n", u64(7))
    with pytest.raises(ValueError, match="sett.u64_add.*sett.append.*sett.max"):
        sett.open(tmp_path, merge_operator="sett.nope")
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        assert db[b"n"] == u64(7)


def test_a_merge_without_an_operator_is_refused_and_loses_nothing(tmp_path):
    with sett.open(tmp_path) as db:
        db[b"k"] = b"v"
        with pytest.raises(sett.MergeOperatorMissingError):
            db.merge(b"k", b"x")
        with pytest.raises(sett.MergeOperatorMissingError):
            with db.batch() as b:
                b.put(b"other", b"o")
                b.merge(b"k", b"x")
        with pytest.raises(sett.MergeOperatorMissingError):
            with db.transaction() as txn:
                txn.merge(b"k", b"x")
        assert db[b"k"] == b"v" and b"other" not in db


def test_a_reopen_with_another_operator_is_refused_and_the_right_one_reads_everything(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        db[b"plain"] = b"p"
        db.merge(b"n", u64(3))
    with pytest.raises(sett.MergeOperatorMismatchError, match="sett.u64_add"):
        sett.open(tmp_path, merge_operator="sett.append")
    with sett.open(tmp_path) as db:  # no operator: merged keys refuse, others read
        assert db[b"plain"] == b"p"
        with pytest.raises(sett.MergeOperatorMissingError):
            db.get(b"n")
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        assert db[b"n"] == u64(3) and db[b"plain"] == b"p"


def test_an_operand_the_operator_refuses_fails_the_read_until_a_put_repairs_it(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.u64_add") as db:
        db.merge(b"good", u64(1))
        db.merge(b"bad", b"abc")  # not 8 bytes
        with pytest.raises(sett.MergeFailedError, match="operand of 3 bytes"):
            db.get(b"bad")
        assert db[b"good"] == u64(1)
        db[b"bad"] = u64(5)
        db.merge(b"bad", u64(1))
        assert db[b"bad"] == u64(6)


def test_an_oversized_operand_refuses_the_whole_batch(tmp_path):
    with sett.open(tmp_path, merge_operator="sett.append", max_value_size=1024) as db:
        db[b"k"] = b"a"
        with pytest.raises(sett.TooBigError):
            with db.batch() as b:
                b.put(b"other", b"o")
                b.merge(b"k", b"x" * 2048)
        with pytest.raises(sett.TooBigError):
            db.merge(b"k", b"x" * 2048)
        assert db[b"k"] == b"a" and b"other" not in db
        db.merge(b"k", b"b")
        assert db[b"k"] == b"ab"
