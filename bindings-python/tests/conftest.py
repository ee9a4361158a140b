import pathlib

import pytest
import sett


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "db"


@pytest.fixture
def db(db_path: pathlib.Path):
    d = sett.open(db_path, value_threshold=64, memtable_size=64 << 10)
    yield d
    d.close()
