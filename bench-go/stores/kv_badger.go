package stores

import (
	"errors"

	badger "github.com/dgraph-io/badger/v4"
)

// badgerKV is the KVBench face of the badger-bench adapter.
type badgerKV struct{ *badgerStore }

// openBadgerKV opens Badger as badger-bench does: with no block cache, so the
// budget is not used (kvStoreInfos says why).
func openBadgerKV(dir string, o KVOptions) (KV, error) {
	s, err := openBadger(dir, Options{Sync: o.Fsync})
	if err != nil {
		return nil, err
	}
	return &badgerKV{s.(*badgerStore)}, nil
}

func (s *badgerKV) Set(key, value []byte) error {
	return s.db.Update(func(t *badger.Txn) error { return t.Set(key, value) })
}
func (s *badgerKV) Delete(key []byte) error {
	return s.db.Update(func(t *badger.Txn) error { return t.Delete(key) })
}
func (s *badgerKV) Clear() error { return s.db.DropAll() }
func (s *badgerKV) Flush() error { return s.db.Sync() }

func (s *badgerKV) BatchSet(keys, vals [][]byte) error { return s.WriteBatch(keys, vals) }

func (s *badgerKV) Get(key []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(t *badger.Txn) error {
		item, err := t.Get(key)
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *badgerKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := s.db.View(func(t *badger.Txn) error {
		for i, k := range keys {
			item, err := t.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if out[i], err = item.ValueCopy(nil); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (s *badgerKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	err := s.db.View(func(t *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := t.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix) && n < limit; it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			n++
			if !fn(it.Item().Key(), v) {
				break
			}
		}
		return nil
	})
	return n, err
}
