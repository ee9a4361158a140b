package sett

import (
	"errors"
	"sync"
	"testing"
)

func TestSequenceIsIncreasingAcrossGoroutinesAndReopens(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := db.GetSequence([]byte("ids"), 10)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				v, err := seq.Next()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[v] {
					t.Errorf("number %d handed out twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var max uint64
	for v := range seen {
		max = maxU(max, v)
	}
	if len(seen) != 100 || max != 99 {
		t.Fatalf("%d numbers, largest %d; want 0..99", len(seen), max)
	}
	if err := seq.Release(); err != nil {
		t.Fatal(err)
	}
	if err := seq.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if _, err := seq.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("next after release: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seq, err = db.GetSequence([]byte("ids"), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Release()
	// Release gave back the unused lease: the sequence goes on at 100.
	if v, err := seq.Next(); err != nil || v != 100 {
		t.Fatalf("first number after a release and a reopen: %d %v", v, err)
	}
	if _, err := db.GetSequence([]byte("zero"), 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bandwidth 0: %v", err)
	}
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
