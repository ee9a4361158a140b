package stores

import (
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

type levelKV struct {
	db *leveldb.DB
	wo *opt.WriteOptions
}

// levelOptions: no compression, and the budget as the block cache (its
// default is 8 MiB).
func levelOptions(o KVOptions) *opt.Options {
	return &opt.Options{Compression: opt.NoCompression, BlockCacheCapacity: int(o.cacheBytes())}
}

func openLevelKV(dir string, o KVOptions) (KV, error) {
	db, err := leveldb.OpenFile(dir, levelOptions(o))
	if err != nil {
		return nil, err
	}
	return &levelKV{db: db, wo: &opt.WriteOptions{Sync: o.Fsync}}, nil
}

func (s *levelKV) Name() string                { return "goleveldb" }
func (s *levelKV) Set(key, value []byte) error { return s.db.Put(key, value, s.wo) }
func (s *levelKV) Delete(key []byte) error     { return s.db.Delete(key, s.wo) }

// Flush: goleveldb has no call that only syncs its journal, and skips empty
// batches, so a synced delete of a key outside every benchmark's key space does it.
func (s *levelKV) Flush() error {
	return s.db.Delete([]byte("\xff\xffkvbench-sync"), &opt.WriteOptions{Sync: true})
}
func (s *levelKV) Close() error { return s.db.Close() }

func (s *levelKV) Clear() error {
	it := s.db.NewIterator(nil, nil)
	defer it.Release()
	b := new(leveldb.Batch)
	for it.Next() {
		b.Delete(append([]byte(nil), it.Key()...))
	}
	return s.db.Write(b, s.wo)
}

func (s *levelKV) BatchSet(keys, vals [][]byte) error {
	b := new(leveldb.Batch)
	for i := range keys {
		b.Put(keys[i], vals[i])
	}
	return s.db.Write(b, s.wo)
}

func (s *levelKV) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key, nil)
	if err == leveldb.ErrNotFound {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *levelKV) BatchGet(keys [][]byte) ([][]byte, error) {
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := snap.Get(k, nil)
		if err != nil && err != leveldb.ErrNotFound {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (s *levelKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	it := s.db.NewIterator(util.BytesPrefix(prefix), nil)
	defer it.Release()
	n := 0
	for it.Next() && n < limit {
		n++
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return n, it.Error()
}
