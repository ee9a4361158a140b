package stores

import (
	"bytes"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"
)

var boltBucketName = []byte("kv")

// boltDB is what boltKV needs of bbolt or of the original bolt it was forked
// from: their APIs are one, so each gets a small adapter and the KV logic is
// shared.
type boltDB interface {
	update(fn func(b boltBucket) error) error
	view(fn func(b boltBucket) error) error
	// clear drops the bucket and makes it anew, in one transaction.
	clear() error
	sync() error
	close() error
}

// boltBucket is the bucket of one transaction.
type boltBucket interface {
	Put(k, v []byte) error
	Get(k []byte) []byte
	Delete(k []byte) error
	// scan calls fn for the keys from seek on, in order, until fn returns false.
	scan(seek []byte, fn func(k, v []byte) bool)
}

type boltKV struct {
	name string
	db   boltDB
}

func (s *boltKV) Name() string { return s.name }
func (s *boltKV) Set(key, value []byte) error {
	return s.db.update(func(b boltBucket) error { return b.Put(key, value) })
}
func (s *boltKV) Delete(key []byte) error {
	return s.db.update(func(b boltBucket) error { return b.Delete(key) })
}
func (s *boltKV) Flush() error { return s.db.sync() }
func (s *boltKV) Close() error { return s.db.close() }
func (s *boltKV) Clear() error { return s.db.clear() }

func (s *boltKV) BatchSet(keys, vals [][]byte) error {
	return s.db.update(func(b boltBucket) error {
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
	err := s.db.view(func(b boltBucket) error {
		if got := b.Get(key); got != nil {
			v = append([]byte(nil), got...)
		}
		return nil
	})
	return v, v != nil, err
}

func (s *boltKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := s.db.view(func(b boltBucket) error {
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
	err := s.db.view(func(b boltBucket) error {
		if limit <= 0 {
			return nil
		}
		b.scan(prefix, func(k, v []byte) bool {
			if !bytes.HasPrefix(k, prefix) {
				return false
			}
			n++
			return fn(k, v) && n < limit
		})
		return nil
	})
	return n, err
}

// bboltDB is go.etcd.io/bbolt.
type bboltDB struct{ db *bbolt.DB }

type bboltBucket struct{ *bbolt.Bucket }

func (b bboltBucket) scan(seek []byte, fn func(k, v []byte) bool) {
	c := b.Cursor()
	for k, v := c.Seek(seek); k != nil && fn(k, v); k, v = c.Next() {
	}
}

func openBboltKV(dir string, o KVOptions) (KV, error) {
	db, err := bbolt.Open(filepath.Join(dir, "bolt.db"), 0o644, &bbolt.Options{NoSync: !o.Fsync})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &boltKV{name: "bbolt", db: bboltDB{db}}, nil
}

func (d bboltDB) update(fn func(b boltBucket) error) error {
	return d.db.Update(func(tx *bbolt.Tx) error { return fn(bboltBucket{tx.Bucket(boltBucketName)}) })
}

func (d bboltDB) view(fn func(b boltBucket) error) error {
	return d.db.View(func(tx *bbolt.Tx) error { return fn(bboltBucket{tx.Bucket(boltBucketName)}) })
}

func (d bboltDB) clear() error {
	return d.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(boltBucketName); err != nil {
			return err
		}
		_, err := tx.CreateBucket(boltBucketName)
		return err
	})
}

func (d bboltDB) sync() error  { return d.db.Sync() }
func (d bboltDB) close() error { return d.db.Close() }
