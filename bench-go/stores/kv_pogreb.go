package stores

import (
	"bytes"
	"errors"
	"sort"

	"github.com/akrylysov/pogreb"
)

// pogrebKV is pogreb, a hash-indexed log store: no batches and no ordered
// iteration, only a walk of every item in hash order.
type pogrebKV struct {
	db    *pogreb.DB
	fsync bool
}

// openPogrebKV opens pogreb at its defaults (memory-mapped index and log,
// no background sync or compaction). With fsync each write is followed by
// DB.Sync, which is what its own option for it (BackgroundSyncInterval -1)
// does inside every Put; doing it here lets a batch sync once at its end, as
// every other store's batch does.
func openPogrebKV(dir string, o KVOptions) (KV, error) {
	db, err := pogreb.Open(dir, &pogreb.Options{})
	if err != nil {
		return nil, err
	}
	return &pogrebKV{db: db, fsync: o.Fsync}, nil
}

func (s *pogrebKV) Name() string { return "pogreb" }
func (s *pogrebKV) Flush() error { return s.db.Sync() }
func (s *pogrebKV) Close() error { return s.db.Close() }

// synced syncs after a write when fsync is on.
func (s *pogrebKV) synced(err error) error {
	if err != nil || !s.fsync {
		return err
	}
	return s.db.Sync()
}

func (s *pogrebKV) Set(key, value []byte) error { return s.synced(s.db.Put(key, value)) }
func (s *pogrebKV) Delete(key []byte) error     { return s.synced(s.db.Delete(key)) }

// BatchSet puts the pairs one by one (pogreb has no batch, so a batch is not
// atomic) and syncs once at the end with fsync.
func (s *pogrebKV) BatchSet(keys, vals [][]byte) error {
	for i := range keys {
		if err := s.db.Put(keys[i], vals[i]); err != nil {
			return err
		}
	}
	return s.synced(nil)
}

// Get: pogreb returns nil for a missing key and a copy (never nil) otherwise.
func (s *pogrebKV) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	return v, v != nil && err == nil, err
}

func (s *pogrebKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.db.Get(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// each walks every item in pogreb's own (hash) order.
func (s *pogrebKV) each(fn func(k, v []byte)) error {
	it := s.db.Items()
	for {
		k, v, err := it.Next()
		if errors.Is(err, pogreb.ErrIterationDone) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(k, v)
	}
}

// Prefix is a full scan: pogreb's index is a hash table and its only iterator
// visits every item in hash order, so the matching keys are collected, sorted
// and the first limit handed to fn. Its cost grows with the whole store, not
// with limit; the report says so.
func (s *pogrebKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	type kv struct{ k, v []byte }
	var hits []kv
	if err := s.each(func(k, v []byte) {
		if bytes.HasPrefix(k, prefix) {
			hits = append(hits, kv{k, v})
		}
	}); err != nil {
		return 0, err
	}
	sort.Slice(hits, func(i, j int) bool { return bytes.Compare(hits[i].k, hits[j].k) < 0 })
	n := 0
	for _, h := range hits {
		if n >= limit {
			break
		}
		n++
		if !fn(h.k, h.v) {
			break
		}
	}
	return n, nil
}

// Clear deletes every key: pogreb has no drop-all, so the keys are collected
// by a walk first (its iterator must not see the deletes).
func (s *pogrebKV) Clear() error {
	var keys [][]byte
	if err := s.each(func(k, _ []byte) { keys = append(keys, k) }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.db.Delete(k); err != nil {
			return err
		}
	}
	return s.synced(nil)
}
