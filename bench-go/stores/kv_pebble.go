package stores

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

type pebbleKV struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

// openPebbleKV opens Pebble with badger-bench's settings (pebbleOptions) and
// the KVBench cache budget.
func openPebbleKV(dir string, o KVOptions) (KV, error) {
	db, wo, err := openPebbleDB(dir, Options{Sync: o.Fsync, CacheBytes: o.cacheBytes()})
	if err != nil {
		return nil, err
	}
	return &pebbleKV{db: db, wo: wo}, nil
}

func (s *pebbleKV) Name() string                { return "pebble" }
func (s *pebbleKV) Set(key, value []byte) error { return s.db.Set(key, value, s.wo) }
func (s *pebbleKV) Delete(key []byte) error     { return s.db.Delete(key, s.wo) }
func (s *pebbleKV) Flush() error                { return s.db.LogData(nil, pebble.Sync) }
func (s *pebbleKV) Close() error                { return s.db.Close() }

func (s *pebbleKV) Clear() error {
	return s.db.DeleteRange([]byte{}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, s.wo)
}

func (s *pebbleKV) BatchSet(keys, vals [][]byte) error {
	b := s.db.NewBatch()
	for i := range keys {
		if err := b.Set(keys[i], vals[i], nil); err != nil {
			return err
		}
	}
	return b.Commit(s.wo)
}

func (s *pebbleKV) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

func (s *pebbleKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, _, err := s.Get(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (s *pebbleKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	n := 0
	for it.First(); it.Valid() && n < limit; it.Next() {
		n++
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	if err := it.Close(); err != nil {
		return n, err
	}
	return n, nil
}
