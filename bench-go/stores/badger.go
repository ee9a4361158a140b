package stores

import (
	"errors"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

type badgerStore struct {
	db *badger.DB
}

// openBadger opens Badger v4 with sett's value threshold (its default of 1 MB
// would keep every value in its LSM), no compression (values are random), and
// SyncWrites as asked; everything else is Badger's default.
func openBadger(dir string, o Options) (Store, error) {
	opts := badger.DefaultOptions(dir).
		WithValueThreshold(ValueThreshold).
		WithSyncWrites(o.Sync).
		WithCompression(options.None).
		WithReadOnly(o.ReadOnly).
		WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	return &badgerStore{db: db}, nil
}

func (s *badgerStore) Name() string { return "badger" }

// WriteBatch uses Badger's WriteBatch, which splits past its transaction size
// limit (a 1000-entry batch of 16 KB values exceeds it).
func (s *badgerStore) WriteBatch(keys, vals [][]byte) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for i := range keys {
		if err := wb.Set(keys[i], vals[i]); err != nil {
			return err
		}
	}
	return wb.Flush()
}

func (s *badgerStore) Get(key, dst []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(dst[:0])
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	return out, err
}

func (s *badgerStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = !keysOnly
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid() && n < limit; it.Next() {
			item := it.Item()
			var v []byte
			if !keysOnly {
				var err error
				if v, err = item.ValueCopy(nil); err != nil {
					return err
				}
			}
			n++
			if !fn(item.Key(), v) {
				break
			}
		}
		return nil
	})
	return n, err
}

func (s *badgerStore) Close() error { return s.db.Close() }
