package sett

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBatchAppliesPutsAndDeletesTogether(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "b050", "old")
	b := db.NewBatch()
	for i := 0; i < 100; i++ {
		if err := b.Set([]byte(fmt.Sprintf("b%03d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete([]byte("b050")); err != nil {
		t.Fatal(err)
	}
	if err := b.SetEntry(NewEntry([]byte("meta"), []byte("m")).WithMeta(9).WithTTL(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 102 {
		t.Fatalf("len %d", b.Len())
	}
	if _, err := db.Get([]byte("b001")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a batch write visible before Commit: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second commit: %v", err)
	}
	if err := b.Set([]byte("x"), nil); !errors.Is(err, ErrClosed) || b.Len() != 0 {
		t.Fatalf("set on a committed batch: %v", err)
	}
	if mustGet(t, db, "b001") != "v1" || mustGet(t, db, "b099") != "v99" {
		t.Fatal("batch values")
	}
	if _, err := db.Get([]byte("b050")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the batch's delete after its put: %v", err)
	}
	it, err := db.GetItem([]byte("meta"))
	if err != nil || it.UserMeta != 9 || it.ExpiresAt == 0 {
		t.Fatalf("batch entry with meta: %+v %v", it, err)
	}
}

func TestBatchWriteKeepsItForReuseAfterClear(t *testing.T) {
	db := openTemp(t)
	b := db.NewBatch()
	defer b.Discard()
	_ = b.Set([]byte("a"), []byte("1"))
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	if err := b.Clear(); err != nil || b.Len() != 0 {
		t.Fatalf("clear: %v, %d left", err, b.Len())
	}
	_ = b.Set([]byte("b"), []byte("2"))
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	if mustGet(t, db, "a") != "1" || mustGet(t, db, "b") != "2" {
		t.Fatal("reused batch")
	}
}

func TestBatchWithABadKeyWritesNothing(t *testing.T) {
	db := openTemp(t)
	b := db.NewBatch()
	_ = b.Set([]byte("good"), []byte("v"))
	_ = b.Set(nil, []byte("v"))
	if err := b.Commit(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a batch with an empty key: %v", err)
	}
	if _, err := db.Get([]byte("good")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("part of a refused batch was written: %v", err)
	}
}
