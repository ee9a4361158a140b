package stores

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/tidwall/buntdb"
)

// buntKV is BuntDB: every key and value in memory, in a B-tree, and every
// commit appended to one file that is replayed at open.
type buntKV struct {
	db   *buntdb.DB
	path string
}

// openBuntKV opens BuntDB with SyncPolicy Always under fsync (its own option
// for a sync on every commit) and Never otherwise: no sync until Flush, as the
// other stores without fsync (its default, EverySecond, would add a sync a
// second under its write lock). Its automatic shrinking of the file stays at
// its defaults.
func openBuntKV(dir string, o KVOptions) (KV, error) {
	path := filepath.Join(dir, "bunt.db")
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, err
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		_ = db.Close()
		return nil, err
	}
	cfg.SyncPolicy = buntdb.Never
	if o.Fsync {
		cfg.SyncPolicy = buntdb.Always
	}
	if err := db.SetConfig(cfg); err != nil {
		_ = db.Close()
		return nil, err
	}
	return &buntKV{db: db, path: path}, nil
}

func (s *buntKV) Name() string { return "buntdb" }
func (s *buntKV) Close() error { return s.db.Close() }

// Flush: BuntDB has no sync call of its own (Close syncs), so its file is
// synced from outside.
func (s *buntKV) Flush() error { return syncFile(s.path) }

// BuntDB's keys and values are strings: each call converts (copies) them.
func (s *buntKV) Set(key, value []byte) error {
	return s.db.Update(func(tx *buntdb.Tx) error {
		_, _, err := tx.Set(string(key), string(value), nil)
		return err
	})
}

func (s *buntKV) Delete(key []byte) error {
	err := s.db.Update(func(tx *buntdb.Tx) error {
		_, err := tx.Delete(string(key))
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return nil
	}
	return err
}

func (s *buntKV) BatchSet(keys, vals [][]byte) error {
	return s.db.Update(func(tx *buntdb.Tx) error {
		for i := range keys {
			if _, _, err := tx.Set(string(keys[i]), string(vals[i]), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

func buntGet(tx *buntdb.Tx, key []byte) ([]byte, error) {
	v, err := tx.Get(string(key))
	if errors.Is(err, buntdb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

func (s *buntKV) Get(key []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(tx *buntdb.Tx) error {
		var err error
		v, err = buntGet(tx, key)
		return err
	})
	return v, v != nil, err
}

func (s *buntKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := s.db.View(func(tx *buntdb.Tx) error {
		for i, k := range keys {
			v, err := buntGet(tx, k)
			if err != nil {
				return err
			}
			out[i] = v
		}
		return nil
	})
	return out, err
}

// Prefix walks BuntDB's key order from the prefix on ("" names the keys
// themselves, no secondary index).
func (s *buntKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	p := string(prefix)
	err := s.db.View(func(tx *buntdb.Tx) error {
		if limit <= 0 {
			return nil
		}
		return tx.AscendGreaterOrEqual("", p, func(k, v string) bool {
			if !strings.HasPrefix(k, p) {
				return false
			}
			n++
			return fn([]byte(k), []byte(v)) && n < limit
		})
	})
	return n, err
}

func (s *buntKV) Clear() error {
	return s.db.Update(func(tx *buntdb.Tx) error { return tx.DeleteAll() })
}
