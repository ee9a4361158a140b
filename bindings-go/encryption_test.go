package sett

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	keyA = bytes.Repeat([]byte{0xa1}, 32)
	keyB = bytes.Repeat([]byte{0xb2}, 32)
)

// writeEncrypted creates an encrypted database in a new directory under key,
// with one value in the LSM tree, one in the value log and one only in the
// WAL, and closes it.
func writeEncrypted(t *testing.T, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, &Options{EncryptionKey: key, ValueThreshold: 64, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "small", "value")
	mustSet(t, db, "big", strings.Repeat("v", 300))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "wal", "only")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readsBack opens dir with key and checks every key of writeEncrypted.
func readsBack(t *testing.T, dir string, key []byte) {
	t.Helper()
	db, err := Open(dir, &Options{EncryptionKey: key})
	if err != nil {
		t.Fatalf("open with the right key: %v", err)
	}
	defer db.Close()
	if got := mustGet(t, db, "small"); got != "value" {
		t.Fatalf("small = %q", got)
	}
	if got := mustGet(t, db, "big"); got != strings.Repeat("v", 300) {
		t.Fatalf("big = %q", got)
	}
	if got := mustGet(t, db, "wal"); got != "only" {
		t.Fatalf("wal = %q", got)
	}
}

func TestAnEncryptedDatabaseReopensWithItsKey(t *testing.T) {
	dir := writeEncrypted(t, keyA)
	readsBack(t, dir, keyA)
}

func TestNoFileOfAnEncryptedDatabaseHoldsThePlaintext(t *testing.T) {
	dir := writeEncrypted(t, keyA)
	needle := []byte(strings.Repeat("v", 64))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // a directory
		}
		if bytes.Contains(b, needle) {
			t.Errorf("%s holds the plaintext value", e.Name())
		}
	}
}

func TestAWrongKeyIsRefusedAndTheRightKeyStillOpens(t *testing.T) {
	dir := writeEncrypted(t, keyA)
	_, err := Open(dir, &Options{EncryptionKey: keyB})
	if !errors.Is(err, ErrWrongEncryptionKey) {
		t.Fatalf("open with a wrong key: %v", err)
	}
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(se.Message, "not the key this database was encrypted with") {
		t.Fatalf("message: %v", err)
	}
	readsBack(t, dir, keyA)
}

func TestNoKeyForAnEncryptedDatabaseIsRefusedAndLosesNothing(t *testing.T) {
	dir := writeEncrypted(t, keyA)
	if _, err := Open(dir, nil); !errors.Is(err, ErrEncryptionKeyRequired) {
		t.Fatalf("open without a key: %v", err)
	}
	if _, err := Open(dir, &Options{EncryptionKey: []byte{}}); !errors.Is(err, ErrEncryptionKeyRequired) {
		t.Fatalf("open with an empty key: %v", err)
	}
	readsBack(t, dir, keyA)
}

func TestAKeyForAPlainDatabaseIsRefusedAndLosesNothing(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "k", "plain")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, &Options{EncryptionKey: keyA}); !errors.Is(err, ErrNotEncrypted) {
		t.Fatalf("open a plain database with a key: %v", err)
	}
	db = openTempDir(t, dir, nil)
	if got := mustGet(t, db, "k"); got != "plain" {
		t.Fatalf("k = %q", got)
	}
}

func TestAKeyOfTheWrongLengthIsAnInvalidArgumentAndLosesNothing(t *testing.T) {
	dir := writeEncrypted(t, keyA)
	for _, n := range []int{1, 16, 31, 33, 64} {
		_, err := Open(dir, &Options{EncryptionKey: bytes.Repeat([]byte{1}, n)})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "not 32") {
			t.Fatalf("a %d-byte key: %v", n, err)
		}
	}
	readsBack(t, dir, keyA)
}

func TestRotationGivesNewKeyIdsAndEveryKeyStillReads(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{EncryptionKey: keyA, EncryptionKeyRotationDuration: -1, MemTableSize: 64 << 10}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var last uint32
	for i, k := range []string{"a", "b", "c"} {
		mustSet(t, db, k, k+"-value")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		id, err := db.RotateEncryptionKey()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && id <= last {
			t.Fatalf("rotation %d gave key %d after %d", i, id, last)
		}
		last = id
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateEncryptionKey(); !errors.Is(err, ErrClosed) {
		t.Fatalf("rotate on a closed db: %v", err)
	}
	db = openTempDir(t, dir, opts)
	for _, k := range []string{"a", "b", "c"} {
		if got := mustGet(t, db, k); got != k+"-value" {
			t.Fatalf("%s = %q", k, got)
		}
	}
}

func TestRotatingAPlainDatabaseIsAnInvalidArgument(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "k", "v")
	if _, err := db.RotateEncryptionKey(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("rotate on a plain db: %v", err)
	}
	if got := mustGet(t, db, "k"); got != "v" {
		t.Fatalf("k = %q", got)
	}
}

func TestAShortRotationPeriodMakesNewKeysAsFilesAreMade(t *testing.T) {
	// A 1 ns period is rounded up to 1 ms: every file made after it is past
	// gets a new data key, so rotating by hand next gives a larger id than
	// the first explicit rotation on a database that never rotates by age.
	ids := map[time.Duration]uint32{}
	for _, period := range []time.Duration{-1, time.Nanosecond} {
		db := openTempWith(t, &Options{EncryptionKey: keyA, EncryptionKeyRotationDuration: period, MemTableSize: 64 << 10})
		for i := 0; i < 5; i++ {
			mustSet(t, db, "k", "v")
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		id, err := db.RotateEncryptionKey()
		if err != nil {
			t.Fatal(err)
		}
		ids[period] = id
	}
	if ids[time.Nanosecond] <= ids[-1] {
		t.Fatalf("key ids after five flushes: %d with a 1 ns period, %d with none", ids[time.Nanosecond], ids[-1])
	}
}

// openTempDir opens dir and closes it when the test ends.
func openTempDir(t *testing.T, dir string, o *Options) *DB {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
