"""Encryption at rest from Python: open with a key, the errors of a wrong,
missing or unexpected key, bad key arguments, and key rotation. Every
refused open is followed by an open with the right key that reads the data
back: a bad key loses nothing."""

from __future__ import annotations

import datetime
import pathlib

import pytest
import sett

KEY_A = bytes(range(32))
KEY_B = bytes(range(100, 132))
BIG = b"v" * 300


def write_encrypted(path: pathlib.Path, key: bytes = KEY_A) -> None:
    """A value in the LSM tree, one in the value log and one only in the WAL."""
    with sett.open(path, encryption_key=key, value_threshold=64) as db:
        db[b"small"] = b"value"
        db[b"big"] = BIG
        db.flush()
        db[b"wal"] = b"only"


def reads_back(path: pathlib.Path, key: bytes = KEY_A) -> None:
    with sett.open(path, encryption_key=key) as db:
        assert db[b"small"] == b"value"
        assert db[b"big"] == BIG
        assert db[b"wal"] == b"only"


def test_an_encrypted_db_reopens_with_its_key_and_reads_its_data(tmp_path):
    write_encrypted(tmp_path)
    reads_back(tmp_path)


def test_no_file_of_an_encrypted_db_holds_the_plaintext(tmp_path):
    write_encrypted(tmp_path)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert files
    for p in files:
        assert b"v" * 64 not in p.read_bytes(), p.name


def test_a_wrong_key_is_refused_and_the_right_key_still_opens(tmp_path):
    write_encrypted(tmp_path)
    with pytest.raises(
        sett.WrongEncryptionKeyError, match="not the key this database was encrypted with"
    ):
        sett.open(tmp_path, encryption_key=KEY_B)
    reads_back(tmp_path)


def test_the_key_error_is_a_sett_error_and_does_not_show_the_key(tmp_path):
    write_encrypted(tmp_path)
    with pytest.raises(sett.Error) as e:
        sett.open(tmp_path, encryption_key=KEY_B)
    assert KEY_B.hex() not in str(e.value) and repr(KEY_B) not in str(e.value)
    reads_back(tmp_path)


def test_no_key_for_an_encrypted_db_is_refused_and_loses_nothing(tmp_path):
    write_encrypted(tmp_path)
    with pytest.raises(sett.EncryptionKeyRequiredError, match="is encrypted"):
        sett.open(tmp_path)
    with pytest.raises(sett.EncryptionKeyRequiredError):
        sett.open(tmp_path, encryption_key=None)
    reads_back(tmp_path)


def test_a_key_for_a_plain_db_is_refused_and_loses_nothing(tmp_path):
    with sett.open(tmp_path) as db:
        db[b"k"] = b"plain"
    with pytest.raises(sett.NotEncryptedError, match="not encrypted"):
        sett.open(tmp_path, encryption_key=KEY_A)
    with sett.open(tmp_path) as db:
        assert db[b"k"] == b"plain"


def test_a_str_key_is_a_type_error_and_loses_nothing(tmp_path):
    write_encrypted(tmp_path)
    with pytest.raises(TypeError, match="encryption_key must be bytes, not str"):
        sett.open(tmp_path, encryption_key="k" * 32)  # type: ignore[arg-type]
    reads_back(tmp_path)


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_a_key_of_the_wrong_length_is_a_value_error_naming_the_length(tmp_path, length):
    write_encrypted(tmp_path)
    with pytest.raises(ValueError, match=f"encryption_key is {length} bytes, not 32"):
        sett.open(tmp_path, encryption_key=b"\x01" * length)
    reads_back(tmp_path)


def test_a_bytearray_key_opens_as_the_same_bytes_do(tmp_path):
    write_encrypted(tmp_path)
    reads_back(tmp_path, bytearray(KEY_A))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "rotation, error",
    [(-1, ValueError), (float("nan"), ValueError), ("10", TypeError), (True, TypeError)],
)
def test_a_bad_rotation_period_is_refused_and_loses_nothing(tmp_path, rotation, error):
    write_encrypted(tmp_path)
    with pytest.raises(error, match="encryption_key_rotation"):
        sett.open(tmp_path, encryption_key=KEY_A, encryption_key_rotation=rotation)
    reads_back(tmp_path)


def test_a_rotation_period_without_a_key_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="needs an encryption_key"):
        sett.open(tmp_path, encryption_key_rotation=60)
    assert not (tmp_path / "MANIFEST").exists()


@pytest.mark.parametrize("rotation", [0, 3600, 0.5, datetime.timedelta(hours=1)])
def test_rotation_gives_new_key_ids_and_every_key_reads_after_reopen(tmp_path, rotation):
    ids = []
    with sett.open(tmp_path, encryption_key=KEY_A, encryption_key_rotation=rotation) as db:
        for k in (b"a", b"b", b"c"):
            db[k] = k * 3
            db.flush()
            ids.append(db.rotate_encryption_key())
    assert ids == sorted(ids) and len(set(ids)) == 3, ids
    with sett.open(tmp_path, encryption_key=KEY_A) as db:
        assert [db[k] for k in (b"a", b"b", b"c")] == [b"aaa", b"bbb", b"ccc"]


def test_rotating_a_plain_db_is_an_invalid_argument_and_loses_nothing(tmp_path):
    with sett.open(tmp_path) as db:
        db[b"k"] = b"v"
        with pytest.raises(sett.InvalidArgumentError, match="without encryption"):
            db.rotate_encryption_key()
        assert db[b"k"] == b"v"
