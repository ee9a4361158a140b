package stores

import (
	"errors"

	sett "github.com/sett-db/sett-go"
)

// settKV is the KVBench face of the badger-bench adapter.
type settKV struct {
	*settStore
	hint valueSizeHint
}

func openSettKV(dir string, o KVOptions) (KV, error) {
	s, err := openSett(dir, Options{Sync: o.Fsync, CacheBytes: o.cacheBytes()}, false)
	if err != nil {
		return nil, err
	}
	return &settKV{settStore: s.(*settStore)}, nil
}

func (s *settKV) Set(key, value []byte) error              { return s.db.Set(key, value) }
func (s *settKV) Delete(key []byte) error                  { return s.db.Delete(key) }
func (s *settKV) Clear() error                             { return s.db.DropAll() }
func (s *settKV) Flush() error                             { return s.db.Flush() }
func (s *settKV) BatchSet(keys, vals [][]byte) error       { return s.WriteBatch(keys, vals) }
func (s *settKV) BatchGet(keys [][]byte) ([][]byte, error) { return s.db.MultiGet(keys) }

// Get is one lookup: the buffer is sized by the last value seen, so that
// GetInto does not fail for lack of room and look the key up a second time.
func (s *settKV) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.GetInto(key, s.hint.buf())
	s.hint.saw(len(v))
	if errors.Is(err, sett.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *settKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	// The limit goes to the iterator too: a 10-key call is then one cgo
	// fetch, without a second one to find the end.
	o := sett.IteratorOptions{Prefix: prefix}
	if limit > 0 && limit < 1<<30 {
		o.Limit = limit
	}
	return s.scan(o, limit, fn)
}

// cacheCapacity reads the cache's capacity back from sett's stats.
func (s *settKV) cacheCapacity() (int64, error) {
	st, err := s.db.Stats()
	return int64(st.CacheCapacity), err
}
