"""open()'s keyword arguments go through core's table of options (sett.OPTIONS)."""

from __future__ import annotations

import pytest
import sett


def test_the_table_lists_each_option_with_its_default_and_bounds():
    by_name = {o["name"]: o for o in sett.OPTIONS}
    assert by_name["memtable_size"]["default"] == 16 << 20
    assert by_name["memtable_size"]["bounds"] == "4 KiB..=4 GiB"
    assert (by_name["memtable_size"]["min"], by_name["memtable_size"]["max"]) == (4096, 4 << 30)
    assert by_name["vlog_gc_ratio"]["default"] == 0.5
    assert (by_name["vlog_gc_ratio"]["min"], by_name["vlog_gc_ratio"]["max"]) == (0.0, 1.0)
    assert by_name["compression"]["default"] == "none"
    assert by_name["compression_per_level"]["default"] == []
    assert by_name["sync_writes"]["default"] is False
    for o in sett.OPTIONS:
        assert set(o) == {"name", "type", "default", "min", "max", "bounds", "doc"}, o
        assert o["doc"], o


def test_opening_with_every_default_spelled_out_works(tmp_path):
    defaults = {o["name"]: o["default"] for o in sett.OPTIONS}
    with sett.open(tmp_path, **defaults) as db:
        db[b"k"] = b"v"
        assert db[b"k"] == b"v"


@pytest.mark.parametrize(
    "name, value, bounds",
    [
        ("memtable_size", 100, "4 KiB..=4 GiB"),
        ("memtable_size", -1, "4 KiB..=4 GiB"),
        ("memtable_size", 1 << 70, "4 KiB..=4 GiB"),
        ("cache_size", 1000, "at least 1 MiB"),
        ("max_memtables", 65, "2..=64"),
        ("vlog_gc_ratio", 1.0, "[0, 1)"),
        ("change_feed_history_bytes", -1, "0..="),
        ("vlog_gc_write_factor", 1 << 32, "0..=4294967295"),
    ],
)
def test_a_value_out_of_bounds_is_refused_naming_the_option_and_its_bounds_before_opening(
    tmp_path, name, value, bounds
):
    path = tmp_path / "db"
    with pytest.raises(sett.InvalidOptionError) as e:
        sett.open(path, **{name: value})
    msg = str(e.value)
    assert name in msg and bounds in msg, msg
    # Refused before anything is opened: no directory was created.
    assert not path.exists()


def test_an_unknown_option_is_a_type_error_naming_it(tmp_path):
    with pytest.raises(TypeError, match='unknown option "memtable_bytes": not in sett.OPTIONS'):
        sett.open(tmp_path, memtable_bytes=1 << 20)  # type: ignore[call-arg]


def test_a_value_of_the_wrong_type_names_the_option_and_its_bounds(tmp_path):
    want = r"option block_size: takes an int \(256\.\.=1 MiB\), not str"
    with pytest.raises(TypeError, match=want):
        sett.open(tmp_path, block_size="4096")  # type: ignore[arg-type]
