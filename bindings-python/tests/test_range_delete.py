"""Range deletes from Python: Db.delete_range and Batch.delete_range hide
their range from reads and scans, atomically, across flatten and reopen."""

import pytest
import sett


def _fill(db, n=100):
    for i in range(n):
        db.put(b"k%03d" % i, b"v%d" % i)


def test_delete_range_hides_the_range_from_gets_and_scans_and_survives_reopen(db_path):
    db = sett.open(db_path, value_threshold=64, memtable_size=64 << 10)
    _fill(db)
    snap = db.begin(update=False)
    db.delete_range(b"k020", b"k030")
    assert db.get(b"k025") is None and b"k020" not in db
    assert db[b"k030"] == b"v30" and db[b"k019"] == b"v19"
    keys = [k for k, _ in db.iter()]
    assert len(keys) == 90 and b"k025" not in keys
    rev = [k for k, _ in db.iter(reverse=True, start=b"k015", end=b"k035")]
    assert rev == [b"k%03d" % i for i in range(34, 29, -1)] + [
        b"k%03d" % i for i in range(19, 14, -1)
    ]
    # A snapshot taken before still sees the keys.
    assert snap.get(b"k025") == b"v25"
    snap.discard()
    db.flatten()
    assert len(list(db.iter())) == 90
    db.close()
    db = sett.open(db_path, value_threshold=64, memtable_size=64 << 10)
    assert db.get(b"k025") is None and len(list(db.iter())) == 90
    assert db.get_many([b"k019", b"k020", b"k029", b"k030"]) == [b"v19", None, None, b"v30"]
    db.close()


def test_a_batch_range_delete_removes_earlier_puts_of_the_batch_but_not_later_ones(db):
    _fill(db)
    with db.batch() as b:
        b.put(b"k050", b"early")
        b.delete_range(b"k040", b"k060")
        b.put(b"k055", b"late")
    assert db.get(b"k050") is None and db.get(b"k045") is None
    assert db[b"k055"] == b"late"
    assert len(list(db.iter())) == 100 - 20 + 1


def test_a_bad_range_is_refused_and_deletes_nothing(db):
    _fill(db)
    with pytest.raises(sett.InvalidArgumentError, match="start < end"):
        db.delete_range(b"k090", b"k010")
    with pytest.raises(TypeError):
        db.delete_range("k0", b"k1")
    b = db.batch()
    b.put(b"new", b"1")
    b.delete_range(b"k2", b"k1")
    with pytest.raises(sett.InvalidArgumentError):
        b.commit()
    assert db.get(b"new") is None
    assert len(list(db.iter())) == 100
    # An empty end: no upper bound.
    db.delete_range(b"k090", b"")
    assert len(list(db.iter())) == 90


def test_a_transaction_range_delete_is_seen_by_its_reads_and_applied_at_commit(db):
    _fill(db)
    txn = db.begin()
    txn.delete_range(b"k060", b"k065")
    assert txn.get(b"k061") is None and db[b"k061"] == b"v61"
    with pytest.raises(sett.InvalidArgumentError):
        txn.delete_range(b"k9", b"k1")
    txn.commit()
    assert db.get(b"k061") is None and len(list(db.iter())) == 95
