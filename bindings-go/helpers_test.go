package sett

import "testing"

// openTemp opens a database in a temporary directory with small memtables and
// a low value threshold (so that most values go to the value log), closed at
// the end of the test.
func openTemp(t testing.TB) *DB {
	t.Helper()
	return openTempWith(t, &Options{ValueThreshold: 64, MemTableSize: 64 << 10})
}

func openTempWith(t testing.TB, o *Options) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustSet(t testing.TB, db *DB, k, v string) {
	t.Helper()
	if err := db.Set([]byte(k), []byte(v)); err != nil {
		t.Fatalf("set %q: %v", k, err)
	}
}

func mustGet(t testing.TB, db *DB, k string) string {
	t.Helper()
	v, err := db.Get([]byte(k))
	if err != nil {
		t.Fatalf("get %q: %v", k, err)
	}
	return string(v)
}
