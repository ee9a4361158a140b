package sett

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBulkLoadIntoAnEmptyDatabase(t *testing.T) {
	db := openTemp(t)
	l, err := db.NewBulkLoader()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if err := l.Add([]byte(fmt.Sprintf("bulk%06d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Add([]byte("bulk000001"), []byte("out of order")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a key out of order: %v", err)
	}
	n, err := l.Finish()
	if err != nil || n != 1000 {
		t.Fatalf("finish: %d entries, %v", n, err)
	}
	if _, err := l.Finish(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second finish: %v", err)
	}
	if err := l.Add([]byte("z"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("add after finish: %v", err)
	}
	l.Abort()
	if mustGet(t, db, "bulk000999") != "v999" {
		t.Fatal("bulk-loaded value")
	}
	st, _ := db.Stats()
	if st.TableEntries != 1000 {
		t.Fatalf("table entries %d after a bulk load of 1000", st.TableEntries)
	}
	if _, err := db.NewBulkLoader(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bulk load into a non-empty database: %v", err)
	}
}

func TestAbortedBulkLoadLeavesNothing(t *testing.T) {
	db := openTemp(t)
	l, err := db.NewBulkLoader()
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Add([]byte("a"), []byte("1"))
	l.Abort()
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an aborted load is visible: %v", err)
	}
	mustSet(t, db, "b", "2")
	if mustGet(t, db, "b") != "2" {
		t.Fatal("write after an aborted load")
	}
}

func TestBulkLoaderAddEntryKeepsMetaAndTTL(t *testing.T) {
	db := openTemp(t)
	l, err := db.NewBulkLoader()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AddEntry(NewEntry([]byte("a"), []byte("1")).WithMeta(3)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddEntry(NewEntry([]byte("b"), make([]byte, 500)).WithTTL(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddEntry(NewEntry([]byte("c"), []byte("3")).WithTTL(-time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative TTL: %v", err)
	}
	if err := l.AddEntry(NewEntry([]byte("a"), []byte("x"))); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("key out of order: %v", err)
	}
	if n, err := l.Finish(); err != nil || n != 2 {
		t.Fatalf("Finish: %d, %v", n, err)
	}
	if err := l.AddEntry(NewEntry([]byte("z"), nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddEntry after Finish: %v", err)
	}
	a, err := db.GetItem([]byte("a"))
	if err != nil || a.UserMeta != 3 || a.ExpiresAt != 0 {
		t.Fatalf("a: %+v, %v", a, err)
	}
	now := uint64(time.Now().Unix())
	b, err := db.GetItem([]byte("b"))
	if err != nil || b.UserMeta != 0 || b.ExpiresAt < now+119 || b.ExpiresAt > now+121 || len(b.Value) != 500 {
		t.Fatalf("b: meta %d expires %d (now %d), %v", b.UserMeta, b.ExpiresAt, now, err)
	}
}
