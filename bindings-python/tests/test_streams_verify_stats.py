"""Backup and restore through file objects, verify, meta and TTL in
transactions and the bulk loader, and the value-log GC counts of stats()."""

import io
import pathlib
import time

import pytest
import sett


def fill(db: sett.Db, n: int = 3000) -> dict:
    want = {}
    for i in range(n):
        k = b"k%05d" % i
        v = bytes([97 + i % 26]) * (10 + i % 700)
        db.put(k, v, meta=i % 7)
        want[k] = v
    return want


class FailingWriter(io.RawIOBase):
    """Takes `room` bytes, then raises."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.taken = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        if self.taken + len(b) > self.room:
            raise OSError(28, "test writer: no space left")
        self.taken += len(b)
        return len(b)


class FailingReader(io.RawIOBase):
    """Hands out `data` up to `at`, then raises."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at, self.pos = data, at, 0

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        if self.pos >= self.at:
            raise ConnectionResetError("test reader: connection reset")
        chunk = self.data[self.pos : min(self.pos + n, self.at)]
        self.pos += len(chunk)
        return chunk


def test_backup_to_a_file_object_round_trips_every_entry_with_meta(db, tmp_path):
    want = fill(db)
    db.put(b"ttl", b"t", ttl=3600)
    out = io.BytesIO()
    since = db.backup(out)
    assert since > 0
    path = tmp_path / "file.backup"
    assert db.backup(path) == since
    assert out.getvalue() == path.read_bytes(), "the stream and the file differ"
    with sett.open(tmp_path / "restored") as r:
        assert r.restore(io.BytesIO(out.getvalue())) == len(want) + 1
        for k, v in want.items():
            assert r.get_entry(k)[:2] == (v, int(k[1:]) % 7)
        assert r.get_entry(b"ttl")[2] == db.get_entry(b"ttl")[2] > time.time()


def test_a_writer_that_raises_mid_backup_leaves_the_db_unchanged(db):
    want = fill(db)
    full = io.BytesIO()
    db.backup(full)
    w = FailingWriter(len(full.getvalue()) // 2)
    with pytest.raises(sett.IOError, match="write\\(\\) raised") as e:
        db.backup(w)
    assert isinstance(e.value.__cause__, OSError) and "no space left" in str(e.value.__cause__)
    assert w.taken > 0, "nothing was streamed before the failure"
    assert all(db[k] == v for k, v in want.items())
    again = io.BytesIO()
    db.backup(again)
    assert again.getvalue() == full.getvalue()


def test_a_reader_that_raises_mid_restore_applies_nothing_and_a_retry_restores_all(db, tmp_path):
    want = fill(db)
    full = io.BytesIO()
    db.backup(full)
    data = full.getvalue()
    assert len(data) > 1 << 20
    with sett.open(tmp_path / "target") as r:
        with pytest.raises(sett.IOError, match="read\\(\\) raised") as e:
            r.restore(FailingReader(data, 1 << 19))  # inside the first 1 MiB chunk
        assert isinstance(e.value.__cause__, ConnectionResetError)
        assert r.get(b"k00000") is None
        assert r.restore(io.BufferedReader(io.BytesIO(data), buffer_size=1000)) == len(want)
        assert all(r[k] == v for k, v in want.items())


def test_backup_and_restore_refuse_what_is_neither_a_path_nor_a_file(db):
    with pytest.raises(TypeError, match="write\\(\\)"):
        db.backup(42)
    with pytest.raises(TypeError, match="read\\(\\)"):
        db.restore(object())


def test_restore_of_a_text_stream_says_it_wants_bytes(db, tmp_path):
    with sett.open(tmp_path / "t") as r:
        with pytest.raises(sett.IOError) as e:
            r.restore(io.StringIO("not bytes"))
        assert isinstance(e.value.__cause__, TypeError)


def test_verify_counts_a_healthy_db_and_names_a_damaged_table(db_path: pathlib.Path):
    with sett.open(db_path, value_threshold=64, vlog_gc_ratio=0) as d:
        for i in range(500):
            d[b"v%04d" % i] = b"x" * (10 + (i % 2) * 100)
        d.flush()
        r = d.verify()
        assert r["tables"] >= 1 and r["blocks"] >= r["tables"]
        assert (r["entries"], r["values"]) == (500, 250)
    table = sorted(db_path.glob("*.sst"))[0]
    raw = bytearray(table.read_bytes())
    raw[100] ^= 0x5A
    table.write_bytes(bytes(raw))
    with sett.open(db_path, vlog_gc_ratio=0) as d:
        with pytest.raises(sett.CorruptionError, match=table.name):
            d.verify()
        d[b"after"] = b"x"  # still usable
        assert d[b"after"] == b"x"


def test_txn_get_entry_reads_meta_expiry_version_and_its_own_write(db):
    db.put(b"k", b"v1", ttl=3600, meta=9)
    outside = db.get_entry(b"k")
    with db.transaction() as t:
        assert t.get_entry(b"k") == outside
        assert outside[1] == 9 and outside[2] > time.time()
        t.put(b"k", b"v2", meta=4)
        assert t.get_entry(b"k") == (b"v2", 4, 0, 0)
        assert t.get_entry(b"absent") is None
    assert db.get_entry(b"k")[:3] == (b"v2", 4, 0)


def test_bulk_loader_add_takes_meta_and_ttl(db):
    with db.bulk_load() as loader:
        loader.add(b"a", b"1", meta=3)
        loader.add(b"b", b"2" * 500, ttl=120)
        with pytest.raises(ValueError):
            loader.add(b"c", b"3", ttl=-1)
    assert db.get_entry(b"a")[1:3] == (3, 0)
    meta, expires = db.get_entry(b"b")[1:3]
    assert meta == 0 and abs(expires - (time.time() + 120)) <= 2


def test_stats_count_value_log_gc(db_path):
    with sett.open(
        db_path,
        value_threshold=64,
        memtable_size=16 << 10,
        vlog_file_size=16 << 10,
        vlog_gc_ratio=0,
    ) as d:
        s = d.stats()
        assert (s["gc_files_rewritten"], s["gc_files_deleted"], s["gc_bytes_reclaimed"]) == (
            0,
            0,
            0,
        )
        for r in range(4):
            for i in range(300):
                d[b"gc%04d" % i] = bytes([97 + r]) * 200
        d.flatten()
        rounds = 0
        while d.run_value_log_gc(0.5):
            rounds += 1
        assert rounds > 0
        s = d.stats()
        assert s["gc_files_rewritten"] + s["gc_files_deleted"] >= rounds
        assert s["gc_bytes_reclaimed"] > 0 and s["gc_seconds"] > 0
        # Background GC is off (ratio 0): nothing is its backlog.
        assert (s["gc_pending_files"], s["gc_pending_bytes"]) == (0, 0)
        assert s["batches_written"] >= 1200 and s["compactions_running"] == 0
        # Where the writes went: flushes into L0, flatten's merges, the WAL,
        # and the GC's moves when it rewrote a file.
        assert len(s["level_bytes_written"]) == len(s["levels"])
        assert s["level_bytes_written"][0] > 0 and sum(s["level_bytes_read"]) > 0
        assert s["wal_bytes_written"] > 1200 * 6
        assert (s["gc_files_rewritten"] > 0) == (s["gc_bytes_moved"] > 0)


def test_cache_size_is_the_budget_stats_report(db_path):
    with sett.open(db_path, cache_size=3 << 20, memtable_size=64 << 10, compression="lz4") as d:
        for i in range(3000):
            d[b"k%05d" % i] = b'{"id": %d, "name": "user"}' % i
        d.flatten()
        for _ in range(3):
            for i in range(0, 3000, 7):
                assert d[b"k%05d" % i] == b'{"id": %d, "name": "user"}' % i
        s = d.stats()
        assert s["cache_capacity"] == 3 << 20
        assert 0 < s["cache_usage"] <= s["cache_capacity"]
        assert s["cache_pinned_bytes"] > 0
        # Compressed blocks read again come decompressed from the cache.
        assert s["cache_data_hits"] > s["cache_data_misses"] > 0
    with pytest.raises(sett.InvalidOptionError, match="cache_size"):
        sett.open(db_path, cache_size=1000)
