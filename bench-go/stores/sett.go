package stores

import (
	"errors"

	"settbench/sett"
)

type settStore struct {
	db *sett.DB
}

func openSett(dir string, o Options) (Store, error) {
	db, err := sett.Open(dir, &sett.Options{ValueThreshold: ValueThreshold, SyncWrites: o.Sync, ReadOnly: o.ReadOnly})
	if err != nil {
		return nil, err
	}
	return &settStore{db: db}, nil
}

func (s *settStore) Name() string { return "sett" }

func (s *settStore) WriteBatch(keys, vals [][]byte) error {
	b := s.db.NewBatch()
	for i := range keys {
		if err := b.Set(keys[i], vals[i]); err != nil {
			b.Discard()
			return err
		}
	}
	return b.Commit()
}

func (s *settStore) Get(key, dst []byte) ([]byte, error) {
	v, err := s.db.GetInto(key, dst)
	if errors.Is(err, sett.ErrNotFound) {
		return nil, ErrNotFound
	}
	return v, err
}

func (s *settStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	return s.scan(sett.IteratorOptions{KeysOnly: keysOnly}, limit, fn)
}

// scan walks an iterator with opts, at most limit items.
func (s *settStore) scan(opts sett.IteratorOptions, limit int, fn func(k, v []byte) bool) (int, error) {
	it, err := s.db.NewIterator(opts)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for ; it.Valid() && n < limit; it.Next() {
		n++
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return n, it.Err()
}

func (s *settStore) Close() error { return s.db.Close() }
