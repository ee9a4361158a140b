package stores

import (
	"bytes"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

var boltBucket = []byte("kv")

type boltKV struct{ db *bolt.DB }

func openBoltKV(dir string, o KVOptions) (KV, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, &bolt.Options{NoSync: !o.Fsync})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &boltKV{db: db}, nil
}

func (s *boltKV) Name() string { return "bbolt" }
func (s *boltKV) Set(key, value []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Put(key, value) })
}
func (s *boltKV) Delete(key []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Delete(key) })
}
func (s *boltKV) Flush() error { return s.db.Sync() }
func (s *boltKV) Close() error { return s.db.Close() }

func (s *boltKV) Clear() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(boltBucket); err != nil {
			return err
		}
		_, err := tx.CreateBucket(boltBucket)
		return err
	})
}

func (s *boltKV) BatchSet(keys, vals [][]byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		for i := range keys {
			if err := b.Put(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltKV) Get(key []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if got := tx.Bucket(boltBucket).Get(key); got != nil {
			v = append([]byte(nil), got...)
		}
		return nil
	})
	return v, v != nil, err
}

func (s *boltKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		for i, k := range keys {
			if got := b.Get(k); got != nil {
				out[i] = append([]byte(nil), got...)
			}
		}
		return nil
	})
	return out, err
}

func (s *boltKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, v = c.Next() {
			n++
			if !fn(k, v) {
				break
			}
		}
		return nil
	})
	return n, err
}
