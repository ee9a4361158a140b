package stores

import (
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// BadgerVersion is the module version go.mod pins; a test holds it to go.mod.
const BadgerVersion = "v4.9.6"

type badgerStore struct {
	db *badger.DB
}

// badgerSettings is what openBadger sets, for the reports.
func badgerSettings(Options) string {
	return fmt.Sprintf("Badger "+BadgerVersion+": ValueThreshold %d B (sett's; Badger's default of 1 MB would keep every value in its LSM), "+
		"no compression, BlockCacheSize 0 (its documentation: with compression and encryption off a block cache only adds overhead; "+
		"blocks are read from its mapped tables through the page cache, as sett's are), IndexCacheSize 0 (indexes in memory, its default), "+
		"writes through WriteBatch; everything else its defaults (64 MiB memtables)", ValueThreshold)
}

// openBadger opens Badger v4 with the settings badgerSettings describes.
func openBadger(dir string, o Options) (Store, error) {
	opts := badger.DefaultOptions(dir).
		WithValueThreshold(ValueThreshold).
		WithSyncWrites(o.Sync).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
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

// MultiGet: Badger has no batched read, so its users look keys up one after
// another in one read transaction, which is what this does.
func (s *badgerStore) MultiGet(keys [][]byte, fn func(i int, v []byte)) error {
	return s.db.View(func(txn *badger.Txn) error {
		for i, k := range keys {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				fn(i, nil)
				continue
			}
			if err != nil {
				return err
			}
			if err := item.Value(func(v []byte) error { fn(i, v); return nil }); err != nil {
				return err
			}
		}
		return nil
	})
}

// Iterate hands fn Badger's own slices (item.Value's callback), with no copy:
// the benchmark loop copies key and value itself, the same for every engine.
func (s *badgerStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = !keysOnly
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid() && n < limit; it.Next() {
			item := it.Item()
			n++
			more := true
			if keysOnly {
				more = fn(item.Key(), nil)
			} else if err := item.Value(func(v []byte) error {
				more = fn(item.Key(), v)
				return nil
			}); err != nil {
				return err
			}
			if !more {
				break
			}
		}
		return nil
	})
	return n, err
}

// Backlog: Badger compacts a level whose score reaches 1 (Levels() reports the
// scores its compactors pick from).
func (s *badgerStore) Backlog() (bool, string, error) {
	idle := true
	desc := ""
	for _, l := range s.db.Levels() {
		if l.Score >= 1 {
			idle = false
		}
		if l.NumTables > 0 {
			desc += fmt.Sprintf("L%d %d tables score %.2f; ", l.Level, l.NumTables, l.Score)
		}
	}
	return idle, desc, nil
}

func (s *badgerStore) Close() error { return s.db.Close() }
