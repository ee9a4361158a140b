//go:build !race

package stores

import (
	"path/filepath"

	bolt "github.com/boltdb/bolt"
)

// boltdbDB is github.com/boltdb/bolt, the original that bbolt forked, as the
// seed's KVBench ranked it (no longer maintained: v1.3.1 of 2017 is its last).
// Not in race-detector builds: kv_boltdb_race.go says why.
const (
	boltdbBuilt   = true
	boltdbRaceWhy = ""
)

type boltdbDB struct{ db *bolt.DB }

type boltdbBucket struct{ *bolt.Bucket }

func (b boltdbBucket) scan(seek []byte, fn func(k, v []byte) bool) {
	c := b.Cursor()
	for k, v := c.Seek(seek); k != nil && fn(k, v); k, v = c.Next() {
	}
}

func openBoltdbKV(dir string, o KVOptions) (KV, error) {
	db, err := bolt.Open(filepath.Join(dir, "boltdb.db"), 0o644, nil)
	if err != nil {
		return nil, err
	}
	// bolt's NoSync is a field of the DB, set before the first write
	// (bbolt moved it into Options).
	db.NoSync = !o.Fsync
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &boltKV{name: "bolt", db: boltdbDB{db}}, nil
}

func (d boltdbDB) update(fn func(b boltBucket) error) error {
	return d.db.Update(func(tx *bolt.Tx) error { return fn(boltdbBucket{tx.Bucket(boltBucketName)}) })
}

func (d boltdbDB) view(fn func(b boltBucket) error) error {
	return d.db.View(func(tx *bolt.Tx) error { return fn(boltdbBucket{tx.Bucket(boltBucketName)}) })
}

func (d boltdbDB) clear() error {
	return d.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(boltBucketName); err != nil {
			return err
		}
		_, err := tx.CreateBucket(boltBucketName)
		return err
	})
}

func (d boltdbDB) sync() error  { return d.db.Sync() }
func (d boltdbDB) close() error { return d.db.Close() }
