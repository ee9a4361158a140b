"""Db.checkpoint: an openable copy made by hard links."""

import pathlib

import pytest
import sett


def test_checkpoint_opens_as_its_own_db_and_refuses_an_existing_target(tmp_path: pathlib.Path):
    src, target = tmp_path / "db", tmp_path / "ckpt"
    want = {}
    with sett.open(src, value_threshold=64, memtable_size=16 << 10, vlog_file_size=16 << 10) as db:
        for i in range(300):
            k = b"ck%04d" % i
            v = bytes([97 + i % 26]) * (10 + (i % 2) * 190)  # both sides of the threshold
            db[k] = v
            want[k] = v
        r = db.checkpoint(target)
        assert r["files_linked"] >= 2 and r["bytes_linked"] > 0, r
        assert r["files_copied"] == 0 and r["elapsed_seconds"] >= 0, r
        db[b"later"] = b"x"
        with pytest.raises(sett.InvalidArgumentError, match="already exists"):
            db.checkpoint(target)
        with pytest.raises(sett.InvalidArgumentError, match="already exists"):
            db.checkpoint(str(src))
        with sett.open(target) as ck:
            assert dict(ck.items()) == want
            assert ck.verify()["values"] >= 150
            ck[b"ck0000"] = b"changed"  # not seen by the source
        assert db[b"ck0000"] == want[b"ck0000"]
    # A directory holding the marker of an interrupted checkpoint is refused.
    (target / "CHECKPOINT-INCOMPLETE").write_bytes(b"")
    with pytest.raises(sett.CorruptionError, match="CHECKPOINT-INCOMPLETE"):
        sett.open(target)
