package stores

import (
	"errors"

	"github.com/nutsdb/nutsdb"
)

// nutsBucket is the one B-tree (key-value) bucket KVBench uses.
const nutsBucket = "kv"

// nutsKV is NutsDB: a log of data files with every key (and, in its default
// mode, every value) indexed in memory.
type nutsKV struct {
	db  *nutsdb.DB
	dir string
}

// openNutsKV opens NutsDB at its defaults (HintKeyValAndRAMIdxMode, FileIO,
// 256 MiB segments) with SyncEnable = fsync, its own option for a sync on
// every commit.
func openNutsKV(dir string, o KVOptions) (KV, error) {
	opts := nutsdb.DefaultOptions
	opts.Dir = dir
	opts.SyncEnable = o.Fsync
	db, err := nutsdb.Open(opts)
	if err != nil {
		return nil, err
	}
	s := &nutsKV{db: db, dir: dir}
	if err := s.ensureBucket(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

func (s *nutsKV) ensureBucket() error {
	return s.db.Update(func(tx *nutsdb.Tx) error {
		if tx.ExistBucket(nutsdb.DataStructureBTree, nutsBucket) {
			return nil
		}
		return tx.NewKVBucket(nutsBucket)
	})
}

func (s *nutsKV) Name() string { return "nutsdb" }
func (s *nutsKV) Close() error { return s.db.Close() }

// Flush: NutsDB has no sync call (it syncs inside a commit only when
// SyncEnable is set), so its files are synced from outside.
func (s *nutsKV) Flush() error { return syncDir(s.dir) }

func (s *nutsKV) Set(key, value []byte) error {
	return s.db.Update(func(tx *nutsdb.Tx) error { return tx.Put(nutsBucket, key, value, nutsdb.Persistent) })
}

// Delete of a missing key is no error, as in every other store.
func (s *nutsKV) Delete(key []byte) error {
	err := s.db.Update(func(tx *nutsdb.Tx) error { return tx.Delete(nutsBucket, key) })
	if errors.Is(err, nutsdb.ErrKeyNotFound) {
		return nil
	}
	return err
}

func (s *nutsKV) BatchSet(keys, vals [][]byte) error {
	return s.db.Update(func(tx *nutsdb.Tx) error {
		for i := range keys {
			if err := tx.Put(nutsBucket, keys[i], vals[i], nutsdb.Persistent); err != nil {
				return err
			}
		}
		return nil
	})
}

// get copies the value out: NutsDB's slice is valid only in its transaction.
func nutsGet(tx *nutsdb.Tx, key []byte) ([]byte, error) {
	v, err := tx.Get(nutsBucket, key)
	if errors.Is(err, nutsdb.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

func (s *nutsKV) Get(key []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(tx *nutsdb.Tx) error {
		var err error
		v, err = nutsGet(tx, key)
		return err
	})
	return v, v != nil, err
}

func (s *nutsKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := s.db.View(func(tx *nutsdb.Tx) error {
		for i, k := range keys {
			v, err := nutsGet(tx, k)
			if err != nil {
				return err
			}
			out[i] = v
		}
		return nil
	})
	return out, err
}

// Prefix uses NutsDB's ordered prefix scan of its B-tree index, limit pushed
// down; it reports "no match" as ErrPrefixScan.
func (s *nutsKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	err := s.db.View(func(tx *nutsdb.Tx) error {
		keys, vals, err := tx.PrefixScanEntries(nutsBucket, prefix, "", 0, limit, true, true)
		if errors.Is(err, nutsdb.ErrPrefixScan) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range keys {
			n++
			if !fn(keys[i], vals[i]) {
				break
			}
		}
		return nil
	})
	return n, err
}

// Clear drops the bucket and makes it anew (a delete per key could exceed
// NutsDB's limit on entries per transaction).
func (s *nutsKV) Clear() error {
	if err := s.db.Update(func(tx *nutsdb.Tx) error {
		return tx.DeleteBucket(nutsdb.DataStructureBTree, nutsBucket)
	}); err != nil {
		return err
	}
	return s.ensureBucket()
}
