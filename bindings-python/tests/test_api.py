"""The Python API: mapping protocol, batches, transactions, iterators, TTL,
maintenance, and every error path, each leaving stored data intact."""

import threading
import time

import pytest
import sett


def test_mapping_protocol(db):
    db[b"k"] = b"v"
    assert db[b"k"] == b"v"
    assert b"k" in db and b"absent" not in db
    assert db.get(b"absent") is None
    assert db.get(b"absent", b"default") == b"default"
    with pytest.raises(KeyError):
        db[b"absent"]
    del db[b"k"]
    assert b"k" not in db
    db[bytearray(b"ba")] = bytearray(b"value")
    assert db[b"ba"] == b"value"
    big = bytes(range(256)) * 40
    db.put(b"big", big)
    assert db[b"big"] == big


@pytest.mark.parametrize("bad", ["text", 5, None, 1.5, [1]])
def test_non_bytes_keys_and_values_are_type_errors(db, bad):
    db[b"keep"] = b"me"
    with pytest.raises(TypeError):
        db[bad] = b"v"
    with pytest.raises(TypeError):
        db[b"k"] = bad
    with pytest.raises(TypeError):
        db.get(bad)
    with pytest.raises(TypeError):
        db.batch().put(bad, b"v")
    assert db[b"keep"] == b"me"


def test_str_error_says_to_encode(db):
    with pytest.raises(TypeError, match="encode"):
        db.put("key", b"v")


def test_batch_commits_on_success_and_discards_on_error(db):
    with db.batch() as b:
        b.put(b"a", b"1")
        b.put(b"b", b"2", meta=3)
        b.delete(b"a")
        assert len(b) == 3
    assert db.get(b"a") is None and db[b"b"] == b"2"
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put(b"c", b"3")
            raise RuntimeError("boom")
    assert b"c" not in db


def test_batch_is_native_reusable_and_checks_its_arguments(db):
    b = db.batch()
    assert isinstance(b, sett.Batch)
    b.put(b"x", b"1")
    b.put(bytearray(b"y"), bytearray(b"2"), ttl=60, meta=7)
    b.clear()
    assert len(b) == 0
    b.put(b"x", b"1")
    b.commit()
    assert len(b) == 0 and db[b"x"] == b"1"
    b.delete(b"x")
    b.put(b"z", b"3")
    b.commit()
    assert b"x" not in db and db[b"z"] == b"3"
    with pytest.raises(TypeError, match="encode"):
        b.put("str", b"v")
    with pytest.raises(TypeError):
        b.delete(None)
    with pytest.raises(ValueError):
        b.put(b"k", b"v", ttl=-1)
    assert len(b) == 0
    db.close()
    b.put(b"late", b"v")
    with pytest.raises(sett.ClosedError):
        b.commit()


def test_sequence_hands_out_increasing_numbers_across_leases(db):
    with db.sequence(b"seq", 10) as seq:
        got = [seq.next() for _ in range(25)] + [next(seq)]
    assert got == list(range(26))
    seq2 = db.sequence(b"seq", 10)
    assert seq2.next() == 26  # the first lease was given back at the end of the block
    with pytest.raises(TypeError):
        db.sequence("seq", 10)


def test_bulk_load_into_an_empty_database(tmp_path):
    with sett.open(tmp_path / "bulk", value_threshold=64) as db:
        with db.bulk_load() as loader:
            for i in range(1000):
                loader.add(b"k%05d" % i, bytes([i & 0xFF]) * (i % 200))
            with pytest.raises(sett.Error):
                loader.add(b"k00000", b"out of order")
        assert db[b"k00999"] == bytes([999 & 0xFF]) * (999 % 200)
        assert sum(1 for _ in db.keys()) == 1000
        with pytest.raises(sett.Error):
            db.bulk_load()  # not empty any more
    with sett.open(tmp_path / "abandoned") as db:
        with pytest.raises(RuntimeError):
            with db.bulk_load() as loader:
                loader.add(b"a", b"1")
                raise RuntimeError("boom")
        with pytest.raises(sett.ClosedError):
            loader.finish()
        db[b"b"] = b"2"  # writes work again once the load is abandoned
        assert list(db.keys()) == [b"b"]


def test_iter_rewind_and_prefetch(db):
    for i in range(600):
        db[b"r%04d" % i] = b"v" * 100
    it = db.iter(prefix=b"r", prefetch=1)
    first = [next(it) for _ in range(300)]
    it.rewind()
    assert [next(it) for _ in range(300)] == first
    rev = db.keys(reverse=True)
    next(rev)
    rev.rewind()
    assert next(rev) == b"r0599"
    assert len(list(db.iter(prefetch=1000))) == 600
    with pytest.raises(ValueError):
        db.iter(prefetch=0)
    with db.view() as txn:
        assert len(list(txn.iter(keys_only=True, prefetch=2))) == 600


def test_get_many(db):
    db[b"x"] = b"1"
    db[b"z"] = b"3"
    assert db.get_many([b"x", b"y", b"z"]) == [b"1", None, b"3"]


def test_transactions_conflict_view_and_update(db):
    db[b"n"] = b"0"
    t1, t2 = db.begin(), db.begin()
    assert t1.get(b"n") == b"0" and t2.get(b"n") == b"0"
    t1.put(b"n", b"1")
    t2.put(b"n", b"2")
    t1.commit()
    with pytest.raises(sett.ConflictError):
        t2.commit()
    with pytest.raises(sett.ClosedError):
        t1.get(b"n")
    with db.view() as v:
        assert v.get(b"n") == b"1"
        db[b"n"] = b"changed"
        assert v.get(b"n") == b"1", "a view is a stable snapshot"
        with pytest.raises(sett.InvalidArgumentError):
            v.put(b"x", b"y")
    with db.transaction() as t:
        t.put(b"t", b"in-txn")
        assert t.get(b"t") == b"in-txn"
        assert [k for k in t.iter(prefix=b"t", keys_only=True)] == [b"t"]
    assert db[b"t"] == b"in-txn"

    def incr(t: sett.Txn) -> int:
        n = int(t.get(b"counter", b"0"))
        t.put(b"counter", str(n + 1).encode())
        return n + 1

    threads = [
        threading.Thread(target=lambda: [db.update(incr) for _ in range(25)]) for _ in range(4)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert db[b"counter"] == b"100"


def test_iterators_prefix_reverse_bounds_keys_only(db):
    for i in range(500):
        db[b"p/%04d" % i] = b"v%d" % i
    db[b"q/other"] = b"x"
    items = list(db.iter(prefix=b"p/"))
    assert len(items) == 500 and items[0] == (b"p/0000", b"v0") and items[-1][0] == b"p/0499"
    rev = list(db.iter(prefix=b"p/", reverse=True, keys_only=True))
    assert rev == [k for k, _ in reversed(items)]
    bounded = list(db.iter(start=b"p/0010", end=b"p/0020", keys_only=True))
    assert bounded == [b"p/%04d" % i for i in range(10, 20)]
    assert list(db.iter(start=b"q")) == [(b"q/other", b"x")]


def test_iterator_outliving_its_with_block_raises_closed(db_path):
    with sett.open(db_path) as d:
        for i in range(2000):
            d[b"k%05d" % i] = b"v"
        it = d.iter()
        first = next(it)
    assert first == (b"k00000", b"v")
    with pytest.raises(sett.ClosedError):
        for _ in it:
            pass


def test_use_after_close_raises_closed_error(db_path):
    d = sett.open(db_path)
    d[b"k"] = b"v"
    d.close()
    d.close()
    assert d.closed
    for op in (
        lambda: d[b"k"],
        lambda: d.put(b"k", b"v"),
        lambda: d.iter(),
        lambda: d.begin(),
        d.stats,
    ):
        with pytest.raises(sett.ClosedError):
            op()
    with sett.open(db_path) as again:
        assert again[b"k"] == b"v"


def test_too_big_and_invalid_arguments_keep_the_data(db_path):
    with sett.open(db_path, max_value_size=1000) as d:
        d[b"keep"] = b"me"
        with pytest.raises(sett.TooBigError):
            d[b"k" * 70000] = b"v"
        with pytest.raises(sett.TooBigError):
            d[b"v"] = b"x" * 1001
        with pytest.raises(sett.InvalidArgumentError):
            d[b""] = b"empty key"
        assert d[b"keep"] == b"me"


def test_options_are_checked(db_path):
    with pytest.raises(sett.InvalidOptionError, match="block_size"):
        sett.open(db_path, block_size=3)
    with pytest.raises(TypeError, match="unknown option"):
        sett.open(db_path, no_such_option=1)
    with pytest.raises(TypeError):
        sett.open(db_path, sync_writes="yes")


def test_an_idle_gc_ratio_out_of_range_or_of_the_wrong_type_is_refused_and_the_data_stays(db_path):
    with sett.open(db_path) as d:
        d[b"kept"] = b"value"
    for bad in (1.0, 2.5, -0.1):
        with pytest.raises(sett.InvalidOptionError, match="vlog_gc_idle_ratio"):
            sett.open(db_path, vlog_gc_idle_ratio=bad)
    with pytest.raises(TypeError):
        sett.open(db_path, vlog_gc_idle_ratio="0.2")
    with sett.open(db_path, vlog_gc_idle_ratio=0.2) as d:
        assert d[b"kept"] == b"value"


def _json_record(i: int) -> bytes:
    return (
        f'{{"id":{i},"name":"user-{i}","email":"user{i}@example.com","city":"Lyon",'
        f'"active":true,"tags":["alpha","bravo"],"bio":"charlie delta echo foxtrot golf"}}'
    ).encode()


def _table_bytes(path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.suffix == ".sst")


def test_compression_per_level_reads_back_and_shrinks_tables(tmp_path):
    sizes = {}
    for name, opts in [
        ("plain", {}),
        ("packed", {"compression_per_level": ["none", "lz4", "zstd"], "zstd_level": 5}),
    ]:
        path = tmp_path / name
        with sett.open(path, memtable_size=64 << 10, table_size=64 << 10, **opts) as d:
            for i in range(3000):
                d[f"user:{i:06}".encode()] = _json_record(i)
            d.flatten()
        with sett.open(path, **opts) as d:
            assert all(d[f"user:{i:06}".encode()] == _json_record(i) for i in range(3000))
            assert sum(1 for _ in d.items()) == 3000
            d.verify()
        sizes[name] = _table_bytes(path)
    assert sizes["packed"] < 0.7 * sizes["plain"], sizes
    # One codec for every level reads back too.
    with sett.open(tmp_path / "lz4", compression="lz4") as d:
        d[b"k"] = _json_record(1)
        d.flush()
        assert d[b"k"] == _json_record(1)


def test_compression_options_are_checked_by_name(db_path):
    with pytest.raises(ValueError, match="option compression: .*snappy"):
        sett.open(db_path, compression="snappy")
    with pytest.raises(ValueError, match="option compression_per_level"):
        sett.open(db_path, compression_per_level=["none", "brotli"])
    with pytest.raises(TypeError, match="option compression_per_level"):
        sett.open(db_path, compression_per_level=[1, 2])
    with pytest.raises(sett.InvalidOptionError, match="zstd_level"):
        sett.open(db_path, zstd_level=99)
    with pytest.raises(sett.InvalidOptionError, match="compression_per_level"):
        sett.open(db_path, num_levels=2, compression_per_level=["none", "lz4", "zstd"])


def test_second_open_is_locked_and_read_only_refuses_writes(db_path):
    with sett.open(db_path) as d:
        d[b"k"] = b"v"
        with pytest.raises(sett.LockedError):
            sett.open(db_path)
    with sett.open(db_path, read_only=True) as ro:
        assert ro[b"k"] == b"v"
        with pytest.raises(sett.ReadOnlyError):
            ro[b"x"] = b"y"


def test_corruption_is_reported_not_returned(db_path):
    with sett.open(db_path) as d:
        for i in range(1000):
            d[b"k%04d" % i] = b"value-%d" % i
    sst = sorted(db_path.glob("*.sst"))[0]
    data = bytearray(sst.read_bytes())
    data[20] ^= 0xFF
    sst.write_bytes(bytes(data))
    with sett.open(db_path) as d:
        with pytest.raises(sett.CorruptionError, match=r"\.sst at offset"):
            for i in range(1000):
                assert d[b"k%04d" % i] == b"value-%d" % i
    assert issubclass(sett.CorruptionError, sett.Error)


def test_ttl_and_meta(db):
    # Expiry is in whole seconds (now's second + the TTL, as Badger's), so a
    # 2 s TTL lives at least 1 s: long enough to read it back at once.
    db.put(b"short", b"v", ttl=2, meta=9)
    value, meta, expires_at, version = db.get_entry(b"short")
    assert (value, meta) == (b"v", 9) and expires_at >= int(time.time()) and version > 0
    db.put(b"long", b"v", ttl=3600)
    time.sleep(3.05)
    assert db.get(b"short") is None
    assert db[b"long"] == b"v"
    with pytest.raises(ValueError):
        db.put(b"k", b"v", ttl=-1)


def test_maintenance_gc_flatten_backup_drop(db, tmp_path):
    for r in range(5):
        for i in range(200):
            db[b"k%03d" % i] = bytes([r]) * 200
    db.flatten()
    while db.run_value_log_gc(0.5):
        pass
    s = db.stats()
    assert s["levels"][-1][0] > 0 and s["vlog_files"] >= 1 and s["last_seq"] > 0
    backup = tmp_path / "db.backup"
    since = db.backup(backup)
    assert since > 0
    with sett.open(tmp_path / "restored") as r:
        assert r.restore(backup) == 200
        assert r[b"k042"] == bytes([4]) * 200
    db.drop_prefix(b"k0")
    assert db.get(b"k042") is None and db[b"k142"] == bytes([4]) * 200
    db.drop_all()
    assert list(db.iter()) == []


def test_gil_is_released_during_long_calls(db):
    keys = [b"key%07d" % i for i in range(200_000)]
    with db.batch() as b:
        for k in keys[:50_000]:
            b.put(k, b"v")
    ticks = 0
    stop = False

    def spin() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    before = ticks
    start = time.perf_counter()
    db.get_many(keys)
    during = ticks - before
    elapsed = time.perf_counter() - start
    stop = True
    t.join()
    # With the GIL held for the whole call the other thread could not run at all.
    assert elapsed > 0.01
    assert during > 1000, f"the other thread advanced {during} times in {elapsed:.3f}s"


def test_many_threads_share_one_db(db):
    errors = []

    def work(n: int) -> None:
        try:
            for i in range(300):
                k = b"t%d/%d" % (n, i)
                db[k] = k * 3
                assert db[k] == k * 3
        except Exception as e:  # noqa: BLE001 (collected and reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(list(db.iter(keys_only=True))) == 8 * 300


def test_close_racing_with_calls_in_flight(db_path):
    # Threads write and read (the GIL released inside each call) while another
    # closes the database: every call succeeds or raises ClosedError.
    for _ in range(3):
        d = sett.open(db_path, value_threshold=64, memtable_size=64 << 10)
        unexpected = []
        calls = []

        def work(n: int, d=d, unexpected=unexpected, calls=calls) -> None:
            i = 0
            try:
                while True:
                    k = b"r%d/%d" % (n, i % 200)
                    if i % 2:
                        d.get(k)
                    else:
                        d[k] = b"value" * 20
                    i += 1
            except sett.ClosedError:
                calls.append(i)
            except Exception as e:  # noqa: BLE001 (collected and reported below)
                unexpected.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        time.sleep(0.05)
        d.close()
        for th in threads:
            th.join(timeout=30)
            assert not th.is_alive()
        assert not unexpected, unexpected
        assert len(calls) == 4 and all(c > 0 for c in calls), calls
        with pytest.raises(sett.ClosedError):
            d[b"after"] = b"close"


def test_version_and_hierarchy():
    assert sett.__version__.count(".") == 2
    for exc in (
        sett.ConflictError,
        sett.ClosedError,
        sett.TooBigError,
        sett.LockedError,
        sett.IOError,
    ):
        assert issubclass(exc, sett.Error)
