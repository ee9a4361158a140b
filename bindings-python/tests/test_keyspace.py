"""Keyspaces from Python: Db.keyspace, Keyspace get/put/delete/delete_range
and iteration, batches and transactions across keyspaces (keyspace=), drop,
listing and options across a reopen."""

import pytest
import sett


def test_two_keyspaces_with_the_same_keys_stay_independent(db):
    a = db.keyspace("a")
    b = db.keyspace("b")
    assert a.name == "a" and a.id != b.id
    for i in range(20):
        a.put(b"k%02d" % i, b"a%d" % i)
        b[b"k%02d" % i] = b"b%d" % i
    db[b"k00"] = b"default"
    del a[b"k01"]
    b.delete_range(b"k10", b"")
    assert a[b"k00"] == b"a0" and b[b"k00"] == b"b0" and db[b"k00"] == b"default"
    assert b"k01" not in a and b"k01" in b and b.get(b"k15") is None
    assert [k for k, _ in a.iter(start=b"k05", end=b"k08")] == [b"k05", b"k06", b"k07"]
    assert list(b.keys(reverse=True))[:2] == [b"k09", b"k08"]
    assert list(db.keys()) == [b"k00"]
    assert len(list(a)) == 19 and list(b.values())[0] == b"b0"
    with pytest.raises(KeyError):
        a[b"k01"]
    with pytest.raises(TypeError):
        a.put("str", b"v")


def test_the_default_keyspace_refuses_the_reserved_prefix(db):
    with pytest.raises(sett.InvalidArgumentError, match="FF FF FF FF"):
        db.put(b"\xff\xff\xff\xffk", b"v")
    with pytest.raises(sett.InvalidArgumentError):
        db.get(b"\xff\xff\xff\xffk")


def test_a_batch_and_a_transaction_across_keyspaces_commit_together(db):
    a = db.keyspace("a")
    b = db.keyspace("b")
    with db.batch() as batch:
        batch.put(b"x", b"1", keyspace=a)
        batch.put(b"x", b"2", keyspace=b)
        batch.put(b"x", b"3")
        batch.put(b"y", b"gone", keyspace=b)
        batch.delete(b"y", keyspace=b)
        batch.put(b"r1", b"r", keyspace=a)
        batch.delete_range(b"r", b"s", keyspace=a)
    assert (a[b"x"], b[b"x"], db[b"x"]) == (b"1", b"2", b"3")
    assert a.get_entry(b"x")[3] == b.get_entry(b"x")[3] == db.get_entry(b"x")[3]
    assert b.get(b"y") is None and a.get(b"r1") is None

    with db.transaction() as txn:
        txn.put(b"t", b"at", keyspace=a)
        txn.put(b"t", b"bt", keyspace=b)
        txn.delete(b"x", keyspace=a)
        assert txn.get(b"t", keyspace=a) == b"at"
        assert txn.get(b"x", keyspace=a) is None
        assert [k for k, _ in txn.iter(keyspace=a)] == [b"t"]
        assert a.get(b"t") is None
    assert (a[b"t"], b[b"t"], a.get(b"x")) == (b"at", b"bt", None)

    # A read of a keyspace key conflicts with a later write of it.
    txn = db.begin(write=True)
    assert txn.get(b"t", keyspace=b) == b"bt"
    txn.put(b"z", b"1", keyspace=a)
    b[b"t"] = b"changed"
    with pytest.raises(sett.ConflictError):
        txn.commit()
    assert a.get(b"z") is None


def test_drop_lists_options_and_reopen(db_path):
    db = sett.open(db_path, value_threshold=1024)
    small = db.keyspace("small", value_threshold=16, default_ttl=3600)
    gone = db.keyspace("gone")
    small[b"k"] = b"v" * 100
    gone[b"k"] = b"v"
    assert db.keyspaces() == ["gone", "small"]
    before = db.stats()["vlog_bytes"]
    small[b"big"] = b"w" * 200
    assert db.stats()["vlog_bytes"] >= before + 200, "the keyspace's own threshold"
    assert small.get_entry(b"k")[2] > 0, "the default TTL set an expiry"
    db.drop_keyspace("gone")
    with pytest.raises(sett.InvalidArgumentError, match="dropped"):
        gone.get(b"k")
    with pytest.raises(sett.NotFoundError):
        db.drop_keyspace("gone")
    assert db.keyspaces() == ["small"]
    db.close()

    db = sett.open(db_path, value_threshold=1024)
    assert db.keyspaces() == ["small"]
    small = db.keyspace("small")
    assert small.value_threshold == 16 and small.default_ttl == 3600.0
    assert small[b"k"] == b"v" * 100
    assert db.keyspace("gone").get(b"k") is None, "a new keyspace of the old name is empty"
    with pytest.raises(ValueError):
        db.keyspace("bad", default_ttl=0.5)
    with pytest.raises(sett.InvalidOptionError):
        db.keyspace("bad", value_threshold=0)
    db.close()


def test_a_keyspace_subscription_sees_its_own_keys_and_the_db_s_does_not(db):
    ks = db.keyspace("ks")
    with db.subscribe() as everything, ks.subscribe() as own:
        with db.batch() as b:
            b.put(b"d", b"1")
            b.put(b"k", b"2", keyspace=ks)
        db.put(b"e", b"3")
        db.drop_keyspace("ks")
        seen = [(c.key, c.value) for c in everything.next(timeout=1.0) or []]
        seen += [(c.key, c.value) for c in everything.next(timeout=1.0) or []]
        assert seen == [(b"d", b"1"), (b"e", b"3")]
        mine = [(c.key, c.value, c.range_end) for c in own.next(timeout=1.0) or []]
        mine += [(c.key, c.value, c.range_end) for c in own.next(timeout=1.0) or []]
        assert mine == [(b"k", b"2", None), (b"", None, b"")]


def _table_bytes(path):
    return sum(f.stat().st_size for f in path.glob("*.sst"))


def _fill(path, compression):
    """Compressible records into keyspace "ks" (its own codec, or the
    database's: none), flattened; returns the tables' bytes."""
    db = sett.open(path)
    ks = db.keyspace("ks", compression=compression)
    assert ks.compression == compression
    for i in range(2000):
        ks[b"key%05d" % i] = b'{"id":%d,"city":"Lyon","bio":"alpha bravo charlie delta echo"}' % i
    db.flatten()
    db.close()
    return _table_bytes(path)


def test_a_zstd_keyspace_s_tables_shrink_and_keep_the_codec_after_reopen(tmp_path):
    plain = _fill(tmp_path / "plain", None)
    zstd = _fill(tmp_path / "zstd", "zstd")
    assert 0 < zstd * 2 < plain, (zstd, plain)
    db = sett.open(tmp_path / "zstd")
    ks = db.keyspace("ks")
    assert ks.compression == "zstd"
    assert ks[b"key01999"].startswith(b'{"id":1999,')
    assert len(list(ks.keys())) == 2000
    with pytest.raises(ValueError, match="compression"):
        db.keyspace("bad", compression="snappy")
    db.close()


def test_db_and_keyspace_are_both_stores_and_get_many_reads_each_in_order(db):
    ks = db.keyspace("named")
    assert isinstance(db, sett.Store) and isinstance(ks, sett.Store)
    for store, tag in ((db, b"d"), (ks, b"k")):
        for i in range(10):
            store[b"k%d" % i] = tag + b"%d" % i
        del store[b"k3"]
    wanted = [b"k9", b"k3", b"missing", b"k0"]
    assert db.get_many(wanted) == [b"d9", None, None, b"d0"]
    assert ks.get_many(iter(wanted)) == [b"k9", None, None, b"k0"]
    with pytest.raises(TypeError):
        ks.get_many([b"k1", "str"])
    with pytest.raises(sett.InvalidArgumentError):
        ks.get_many([b""])
    db.drop_keyspace("named")
    with pytest.raises(sett.InvalidArgumentError):
        ks.get_many([b"k1"])
    assert db.get_many([b"k1"]) == [b"d1"]
