package sett

import (
	"errors"
	"fmt"
	"testing"
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
