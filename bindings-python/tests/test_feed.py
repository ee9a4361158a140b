"""The change feed from Python: Db.subscribe, Subscription, FellBehindError."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest
import sett


def take(sub: sett.Subscription, n: int) -> List[sett.Change]:
    out: List[sett.Change] = []
    deadline = time.monotonic() + 20
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {len(out)} of {n} changes"
        got = sub.next(timeout=0.2)
        if got:
            out.extend(got)
    assert len(out) == n
    return out


def test_committed_writes_arrive_in_version_order_under_the_prefixes(tmp_path):
    with sett.open(tmp_path / "db") as db:
        with db.subscribe(prefixes=[b"a", b"c"]) as sub:
            assert sub.start_version == db.last_version()
            db.put(b"a1", b"v1")
            db.put(b"b1", b"not mine")
            db.put(b"c1", b"v2", meta=3)
            db.delete(b"a1")
            with db.batch() as b:
                b.put(b"a2", b"v3")
                b.delete(b"a3")
            got = take(sub, 5)
            assert [(c.key, c.value) for c in got] == [
                (b"a1", b"v1"),
                (b"c1", b"v2"),
                (b"a1", None),
                (b"a2", b"v3"),
                (b"a3", None),
            ]
            assert got[2].deleted and not got[0].deleted
            assert got[1].user_meta == 3
            versions = [c.version for c in got]
            assert versions[:4] == sorted(set(versions[:4]))
            assert versions[3] == versions[4] == db.last_version()
            assert sub.next(timeout=0.02) is None
        assert sub.closed
        with pytest.raises(sett.ClosedError):
            sub.next(timeout=0)


def test_a_slow_subscriber_falls_behind_and_resumes_from_the_history(tmp_path):
    with sett.open(tmp_path / "db", change_feed_history_bytes=16 << 20) as db:
        db.put(b"before", b"x")
        sub = db.subscribe(max_pending_bytes=16 << 10)
        start = sub.start_version
        for i in range(200):
            db.put(b"k%03d" % i, b"x" * 200)
        with pytest.raises(sett.FellBehindError) as e:
            sub.next(timeout=5)
        assert e.value.resume_from == start
        sub.close()
        again = db.subscribe(since=e.value.resume_from)
        got = take(again, 200)
        assert [c.key for c in got] == [b"k%03d" % i for i in range(200)]
        assert [c.version for c in got] == list(range(start + 1, start + 201))
        again.close()
        # Older than the history: the error names the oldest version held.
        with pytest.raises(sett.FeedHistoryTooShortError) as h:
            db.subscribe(since=start - 1)
        assert h.value.oldest == start
        with pytest.raises(ValueError):
            db.subscribe(prefixes=b"a")  # one bytes object, not a list


def test_iteration_waits_for_writes_and_ends_when_the_db_closes(tmp_path):
    db = sett.open(tmp_path / "db")
    sub = db.subscribe()
    seen: List[bytes] = []

    def consume() -> None:
        for changes in sub:
            seen.extend(c.key for c in changes)

    t = threading.Thread(target=consume)
    t.start()
    db.put(b"x", b"1")
    db.put(b"y", b"2")
    with db.begin(write=False) as txn:
        assert txn.read_ts == db.last_version()
    db.close()
    t.join(timeout=10)
    assert not t.is_alive()
    assert seen == [b"x", b"y"]


def test_closing_a_subscription_wakes_a_thread_waiting_on_it(tmp_path):
    with sett.open(tmp_path / "db") as db:
        sub = db.subscribe()
        errors: List[BaseException] = []

        def wait() -> None:
            try:
                sub.next()
            except sett.ClosedError as e:
                errors.append(e)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.05)
        sub.close()
        t.join(timeout=5)
        assert not t.is_alive()
        assert len(errors) == 1


def test_a_range_delete_arrives_as_one_change_with_its_range(tmp_path):
    with sett.open(tmp_path / "db") as db:
        with db.subscribe(prefixes=[b"a"]) as sub:
            db.put(b"a1", b"v")
            db.delete_range(b"x", b"z")  # does not meet "a"
            db.drop_prefix(b"a")
            got = take(sub, 2)
            assert got[0].range_end is None and got[0].value == b"v"
            assert (got[1].key, got[1].range_end, got[1].value) == (b"a", b"b", None)
            assert got[1].deleted and "range" in repr(got[1])
