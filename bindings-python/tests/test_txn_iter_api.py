"""Transactions as context managers, dict-style iteration (keys/items/values,
iter(db)) and Iter.seek, each checked against a plain dict or sorted list."""

import bisect
import random

import pytest
import sett

# ---------------------------------------------------------------- transactions


def test_begin_as_context_manager_commits_on_success(db):
    db[b"n"] = b"0"
    with db.begin(write=True) as txn:
        assert txn.active and txn.write
        txn.put(b"a", b"1")
        txn.put(b"n", txn.get(b"n") + b"!")
        txn.delete(b"gone")
        assert db.get(b"a") is None, "not visible before the block ends"
    assert not txn.active
    assert db[b"a"] == b"1" and db[b"n"] == b"0!"


@pytest.mark.parametrize("how", ["begin", "transaction"])
def test_exception_discards_and_propagates(db, how):
    db[b"keep"] = b"old"

    class Boom(Exception):
        pass

    with pytest.raises(Boom, match="boom"):
        with db.begin(write=True) if how == "begin" else db.transaction() as txn:
            txn.put(b"new", b"1")
            txn.put(b"keep", b"changed")
            raise Boom("boom")
    assert not txn.active
    assert b"new" not in db and db[b"keep"] == b"old"
    # KeyboardInterrupt and other BaseExceptions discard too.
    with pytest.raises(KeyboardInterrupt):
        with db.begin(write=True) as txn:
            txn.put(b"new", b"2")
            raise KeyboardInterrupt
    assert b"new" not in db


def test_read_only_txn_just_ends(db):
    db[b"k"] = b"v"
    with db.begin(write=False) as txn:
        assert not txn.write and txn.active
        assert txn.get(b"k") == b"v"
        db[b"k"] = b"changed"
        assert txn.get(b"k") == b"v", "a snapshot"
        with pytest.raises(sett.InvalidArgumentError):
            txn.put(b"x", b"y")
    assert not txn.active
    assert db[b"k"] == b"changed" and b"x" not in db


def test_commit_conflict_propagates_from_the_block(db):
    db[b"n"] = b"0"
    with pytest.raises(sett.ConflictError):
        with db.begin(write=True) as t1:
            t1.put(b"n", t1.get(b"n") + b"1")
            t2 = db.begin(write=True)
            t2.put(b"n", t2.get(b"n") + b"2")
            t2.commit()
    assert db[b"n"] == b"02"


def test_txn_ended_in_the_block_is_left_as_is(db):
    with db.begin(write=True) as txn:
        txn.put(b"a", b"1")
        txn.commit()
    assert db[b"a"] == b"1"
    with db.begin(write=True) as txn:
        txn.put(b"b", b"1")
        txn.discard()
    assert b"b" not in db


@pytest.mark.parametrize("end", ["with", "commit", "discard", "raise"])
def test_use_after_end_raises_closed_error(db, end):
    if end == "with":
        with db.begin(write=True) as txn:
            txn.put(b"k", b"v")
    elif end == "raise":
        with pytest.raises(ValueError):
            with db.begin(write=True) as txn:
                raise ValueError
    else:
        txn = db.begin(write=True)
        getattr(txn, end)()
    for op in (
        lambda: txn.get(b"k"),
        lambda: txn.put(b"k", b"v2"),
        lambda: txn.delete(b"k"),
        lambda: txn.iter(),
        txn.commit,
    ):
        with pytest.raises(sett.ClosedError, match="already committed or discarded"):
            op()
    with pytest.raises(sett.ClosedError):
        with txn:
            pass
    txn.discard()  # still allowed: a no-op
    assert db.get(b"k") == (b"v" if end == "with" else None)


def test_begin_keeps_update_and_takes_write_as_alias(db):
    assert db.begin().write
    assert not db.begin(False).write
    assert not db.begin(update=False).write
    assert db.begin(update=True).write
    assert not db.begin(write=False).write
    assert db.begin(write=True).write
    with pytest.raises(TypeError, match="not both"):
        db.begin(update=True, write=True)
    with pytest.raises(TypeError):
        db.begin(False, write=False)


@pytest.mark.parametrize("how", ["transaction", "view"])
def test_transaction_helper_misused_outside_with_raises(db, how):
    block = getattr(db, how)()
    with pytest.raises(AttributeError, match=rf"with db\.{how}\(\) as txn"):
        block.put(b"k", b"v")
    with pytest.raises(AttributeError, match="not a transaction"):
        block.commit()
    assert not hasattr(block, "get")
    assert b"k" not in db
    # The helper still works as intended, once per with statement.
    with block as txn:
        assert txn.write == (how == "transaction")
        with pytest.raises(RuntimeError, match="already in use"):
            with block:
                pass
    assert not txn.active
    with block as txn2:
        assert txn2 is not txn and txn2.active


def test_transaction_helper_commits_and_update_retries(db):
    with db.transaction() as txn:
        txn.put(b"t", b"1")
    assert db[b"t"] == b"1"
    with db.view() as v:
        assert v.get(b"t") == b"1" and not v.write
    calls = []

    def fn(t: sett.Txn) -> int:
        calls.append(1)
        t.put(b"u", t.get(b"u", b"") + b"x")
        if len(calls) == 1:  # a competing commit makes this attempt conflict
            other = db.begin(write=True)
            other.put(b"u", other.get(b"u", b"") + b"y")
            other.commit()
        return len(calls)

    assert db.update(fn) == 2
    assert db[b"u"] == b"yx"


# ------------------------------------------------------------------ iteration


def fill(db, rng: random.Random, n: int) -> dict:
    """Random keys under a few prefixes, values on both sides of the value
    threshold, some deleted, part flushed to tables: a model dict of what is live."""
    model = {}
    for i in range(n):
        k = b"%s/%04d" % (rng.choice([b"a", b"b", b"bb", b"c"]), rng.randrange(2000))
        v = rng.randbytes(rng.choice([0, 5, 60, 100, 500]))
        db[k] = v
        model[k] = v
        if i == n // 2:
            db.flush()
    for k in rng.sample(sorted(model), len(model) // 5):
        del db[k]
        del model[k]
    return model


def in_range(model: dict, prefix=None, start=None, end=None, reverse=False) -> list:
    out = sorted(
        (k, v)
        for k, v in model.items()
        if (prefix is None or k.startswith(prefix))
        and (start is None or k >= start)
        and (end is None or k < end)
    )
    return out[::-1] if reverse else out


def test_keys_items_values_and_iter_match_a_dict(db):
    model = fill(db, random.Random(7), 1500)
    assert list(db) == sorted(model)
    assert list(db.keys()) == sorted(model)
    assert list(db.items()) == sorted(model.items())
    assert list(db.values()) == [model[k] for k in sorted(model)]
    assert dict(db.items()) == model
    assert set(db) == set(model.keys())
    cases = [
        dict(prefix=b"b"),
        dict(prefix=b"bb/"),
        dict(prefix=b"b/"),
        dict(prefix=b"zz"),
        dict(start=b"a/1000", end=b"c/0500"),
        dict(prefix=b"c/", start=b"c/1000"),
        dict(prefix=b"a", reverse=True),
        dict(start=b"b", end=b"c", reverse=True),
        dict(reverse=True),
    ]
    for kw in cases:
        want = in_range(model, **kw)
        assert list(db.items(**kw)) == want, kw
        assert list(db.keys(**kw)) == [k for k, _ in want], kw
        assert list(db.values(**kw)) == [v for _, v in want], kw
        assert list(db.iter(**kw)) == want, kw
    assert list(db.keys(b"c/")) == [k for k, _ in in_range(model, prefix=b"c/")]


def test_dict_style_iterators_stream_from_a_snapshot(db):
    for i in range(1000):
        db[b"k%04d" % i] = b"v%d" % i
    for it in (iter(db), db.keys(), db.items(), db.values()):
        assert isinstance(it, sett.Iter)
    keys, values, items = iter(db), db.values(), db.items()
    assert next(keys) == b"k0000" and next(values) == b"v0" and next(items) == (b"k0000", b"v0")
    db[b"k0001"] = b"new"
    del db[b"k0002"]
    db[b"k9999"] = b"late"
    # Created before the writes: they see none of them.
    assert next(keys) == b"k0001" and next(keys) == b"k0002"
    assert next(values) == b"v1"
    assert list(items)[-1] == (b"k0999", b"v999")
    assert b"k9999" in list(db.keys()) and db[b"k0001"] == b"new"
    with pytest.raises(TypeError):
        db.keys(prefix="k")
    with pytest.raises(TypeError):
        len(db)  # deliberately absent: no exact count without a full scan


def test_dict_style_iterators_after_close_raise(db_path):
    d = sett.open(db_path)
    d[b"k"] = b"v"
    d.close()
    for make in (lambda: iter(d), d.keys, d.items, d.values):
        with pytest.raises(sett.ClosedError):
            make()


def test_iter_is_subscriptable_for_annotations():
    alias = sett.Iter[bytes]
    assert alias is sett.Iter or getattr(alias, "__origin__", None) is sett.Iter


# ----------------------------------------------------------------------- seek


@pytest.fixture
def evens(db):
    """k000, k002, ..., k198 (values long enough to live in the value log)."""
    for i in range(0, 200, 2):
        db[b"k%03d" % i] = b"value-%03d" % i * 10
    return db


def val(i: int) -> bytes:
    return b"value-%03d" % i * 10


def test_seek_forward(evens):
    it = evens.iter(keys_only=True)
    it.seek(b"k050")
    assert next(it) == b"k050" and next(it) == b"k052"
    it.seek(b"k051")  # between keys: the next one up
    assert next(it) == b"k052"
    it.seek(b"k010")  # backwards
    assert [next(it) for _ in range(3)] == [b"k010", b"k012", b"k014"]
    it.seek(b"a")  # before the first
    assert next(it) == b"k000"
    it.seek(b"k19")
    assert list(it) == [b"k190", b"k192", b"k194", b"k196", b"k198"]
    it.seek(b"k199")  # past the end
    with pytest.raises(StopIteration):
        next(it)
    it.seek(b"z")
    assert list(it) == []
    it.seek(b"k100")  # a seeked iterator can seek again after running out
    assert next(it) == b"k100"
    items = evens.items()
    items.seek(bytearray(b"k077"))
    assert next(items) == (b"k078", val(78))
    values = evens.values()
    values.seek(b"k198")
    assert list(values) == [val(198)]


def test_seek_reverse(evens):
    it = evens.iter(reverse=True, keys_only=True)
    it.seek(b"k051")  # between keys: the next one down
    assert next(it) == b"k050" and next(it) == b"k048"
    it.seek(b"k050")
    assert next(it) == b"k050"
    it.seek(b"z")  # above the last
    assert next(it) == b"k198"
    it.seek(b"k004")
    assert list(it) == [b"k004", b"k002", b"k000"]
    it.seek(b"a")  # past the end of a reverse walk
    with pytest.raises(StopIteration):
        next(it)
    it.seek(b"k1")
    assert next(it) == b"k098"
    items = evens.items(reverse=True)
    items.seek(b"k101")
    assert next(items) == (b"k100", val(100))


def test_seek_stays_within_prefix_and_bounds(evens):
    it = evens.keys(prefix=b"k1")
    it.seek(b"a")  # below the prefix: its first key
    assert next(it) == b"k100"
    it.seek(b"k150")
    assert next(it) == b"k150"
    it.seek(b"k2")  # above the prefix
    assert list(it) == []
    rev = evens.keys(prefix=b"k1", reverse=True)
    rev.seek(b"z")
    assert next(rev) == b"k198"
    rev.seek(b"k0")
    assert list(rev) == []
    bounded = evens.keys(start=b"k020", end=b"k030")
    bounded.seek(b"k000")
    assert list(bounded) == [b"k020", b"k022", b"k024", b"k026", b"k028"]
    bounded.seek(b"k030")
    assert list(bounded) == []
    rbounded = evens.keys(start=b"k020", end=b"k030", reverse=True)
    rbounded.seek(b"k100")
    assert next(rbounded) == b"k028"


@pytest.mark.parametrize("seed", [1, 2])
def test_seek_matches_a_sorted_model(db, seed):
    rng = random.Random(seed)
    model = fill(db, rng, 1200)
    keys = sorted(model)
    for reverse in (False, True):
        it = db.iter(reverse=reverse)
        for _ in range(60):
            target = b"%s/%04d" % (rng.choice([b"a", b"b", b"bb", b"c", b"d"]), rng.randrange(2100))
            if rng.random() < 0.2:
                target = rng.choice(keys)  # exact hits
            it.seek(target)
            n = rng.randrange(1, 40)
            if reverse:
                want = keys[: bisect.bisect_right(keys, target)][::-1][:n]
            else:
                want = keys[bisect.bisect_left(keys, target) :][:n]
            got = []
            for _ in range(n):
                item = next(it, None)
                if item is None:
                    break
                got.append(item)
            assert got == [(k, model[k]) for k in want], (reverse, target)


def test_seek_in_a_transaction_sees_its_own_writes(db):
    for k in (b"a", b"c", b"e"):
        db[k] = b"db"
    with db.begin(write=True) as txn:
        txn.put(b"b", b"txn")
        txn.delete(b"c")
        it = txn.iter()
        it.seek(b"b")
        assert list(it) == [(b"b", b"txn"), (b"e", b"db")]
        rev = txn.iter(reverse=True, keys_only=True)
        rev.seek(b"d")
        assert list(rev) == [b"b", b"a"]
        txn.discard()


def test_seek_errors(evens, db_path):
    it = evens.keys()
    with pytest.raises(TypeError, match="encode"):
        it.seek("k010")
    it.close()
    with pytest.raises(sett.ClosedError, match="closed"):
        it.seek(b"k010")
    done = evens.keys(prefix=b"k00")
    assert len(list(done)) == 5
    with pytest.raises(sett.ClosedError, match="exhausted"):
        done.seek(b"k000")  # ran out without a seek: the snapshot is released
    open_it = evens.keys()
    evens.close()
    with pytest.raises(sett.ClosedError):
        open_it.seek(b"k010")
