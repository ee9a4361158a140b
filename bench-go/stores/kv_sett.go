package stores

import (
	"errors"

	"settbench/sett"
)

type settKV struct{ db *sett.DB }

func openSettKV(dir string, o KVOptions) (KV, error) {
	db, err := sett.Open(dir, &sett.Options{ValueThreshold: ValueThreshold, SyncWrites: o.Fsync})
	if err != nil {
		return nil, err
	}
	return &settKV{db: db}, nil
}

func (s *settKV) Name() string                { return "sett" }
func (s *settKV) Set(key, value []byte) error { return s.db.Set(key, value) }
func (s *settKV) Delete(key []byte) error     { return s.db.Delete(key) }
func (s *settKV) Clear() error                { return s.db.DropAll() }
func (s *settKV) Flush() error                { return s.db.Flush() }
func (s *settKV) Close() error                { return s.db.Close() }

func (s *settKV) BatchSet(keys, vals [][]byte) error {
	b := s.db.NewBatch()
	for i := range keys {
		if err := b.Set(keys[i], vals[i]); err != nil {
			b.Discard()
			return err
		}
	}
	return b.Commit()
}

func (s *settKV) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errors.Is(err, sett.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *settKV) BatchGet(keys [][]byte) ([][]byte, error) { return s.db.MultiGet(keys) }

func (s *settKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	it, err := s.db.NewIterator(sett.IteratorOptions{Prefix: prefix})
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
