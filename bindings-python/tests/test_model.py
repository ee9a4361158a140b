"""Seeded random operations against a dict, with reopens, small memtables (so
flushes and compactions run) and values on both sides of the value threshold."""

import random

import pytest
import sett

OPTS = dict(
    value_threshold=64, memtable_size=16 << 10, table_size=16 << 10, level_base_size=64 << 10
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_match_a_dict(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "db"
    db = sett.open(path, **OPTS)
    model: dict = {}
    try:
        for step in range(4000):
            op = rng.random()
            key = b"k%d" % rng.randrange(300)
            if op < 0.45:
                value = rng.randbytes(rng.choice([0, 10, 60, 64, 70, 300]))
                db[key] = value
                model[key] = value
            elif op < 0.55:
                db.delete(key)
                model.pop(key, None)
            elif op < 0.65:
                with db.batch() as b:
                    for _ in range(rng.randrange(1, 10)):
                        k = b"k%d" % rng.randrange(300)
                        if rng.random() < 0.8:
                            v = rng.randbytes(rng.randrange(200))
                            b.put(k, v)
                            model[k] = v
                        else:
                            b.delete(k)
                            model.pop(k, None)
            elif op < 0.85:
                assert db.get(key) == model.get(key), f"step {step}"
            elif op < 0.97:
                prefix = b"k%d" % rng.randrange(30)
                reverse = rng.random() < 0.5
                want = sorted((k, v) for k, v in model.items() if k.startswith(prefix))
                if reverse:
                    want.reverse()
                assert list(db.iter(prefix=prefix, reverse=reverse)) == want, f"step {step}"
            else:
                db.close()
                db = sett.open(path, **OPTS)
        assert list(db.iter()) == sorted(model.items())
    finally:
        db.close()
