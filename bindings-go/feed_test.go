package sett

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// collect subscribes in a goroutine and sends each delivered batch on the
// returned channel; the returned func cancels and gives Subscribe's error.
func collect(t *testing.T, db *DB, from uint64, prefixes ...[]byte) (<-chan []Change, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan []Change, 1024)
	done := make(chan error, 1)
	go func() {
		done <- db.Subscribe(ctx, func(c []Change) error { ch <- c; return nil }, from, prefixes...)
	}()
	return ch, func() error { cancel(); return <-done }
}

func take(t *testing.T, ch <-chan []Change, n int) []Change {
	t.Helper()
	var out []Change
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case c := <-ch:
			out = append(out, c...)
		case <-deadline:
			t.Fatalf("only %d of %d changes", len(out), n)
		}
	}
	if len(out) != n {
		t.Fatalf("%d changes, want %d", len(out), n)
	}
	return out
}

// waitSubscribed writes a marker until the subscriber sees it, so that the
// subscription is known to be live before the test writes.
func waitSubscribed(t *testing.T, db *DB, ch <-chan []Change) {
	t.Helper()
	for i := 0; ; i++ {
		mustSet(t, db, "zz-marker", fmt.Sprint(i))
		select {
		case <-ch:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if i > 500 {
			t.Fatal("the subscription never started")
		}
	}
}

func TestSubscribeDeliversCommittedWritesUnderItsPrefixesInVersionOrder(t *testing.T) {
	db := openTemp(t)
	ch, stop := collect(t, db, 0, []byte("a"), []byte("zz"))
	waitSubscribed(t, db, ch)
	mustSet(t, db, "a1", "v1")
	mustSet(t, db, "b1", "not mine")
	if err := db.SetEntry(NewEntry([]byte("a2"), []byte("v2")).WithMeta(5)); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("a1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *Txn) error {
		if err := txn.Set([]byte("a3"), []byte("v3")); err != nil {
			return err
		}
		return txn.Set([]byte("a4"), []byte("v4"))
	}); err != nil {
		t.Fatal(err)
	}
	got := take(t, ch, 5)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe after cancel: %v", err)
	}
	want := []string{"a1=v1", "a2=v2", "a1 deleted", "a3=v3", "a4=v4"}
	for i, c := range got {
		s := fmt.Sprintf("%s=%s", c.Key, c.Value)
		if c.Deleted {
			s = string(c.Key) + " deleted"
		}
		if s != want[i] {
			t.Errorf("change %d: %s, want %s", i, s, want[i])
		}
	}
	if got[1].UserMeta != 5 {
		t.Errorf("user meta %d", got[1].UserMeta)
	}
	for i := 1; i < 4; i++ {
		if got[i].Version <= got[i-1].Version {
			t.Errorf("versions not increasing: %d then %d", got[i-1].Version, got[i].Version)
		}
	}
	if got[3].Version != got[4].Version {
		t.Errorf("one transaction, two versions: %d, %d", got[3].Version, got[4].Version)
	}
	item, err := db.GetItem([]byte("a4"))
	if err != nil || item.Version != got[4].Version {
		t.Errorf("a4 read at version %v (%v), delivered at %d", item, err, got[4].Version)
	}
}

func TestConcurrentWritersAreDeliveredOnceEachInVersionOrder(t *testing.T) {
	db := openTemp(t)
	ch, stop := collect(t, db, 0)
	waitSubscribed(t, db, ch)
	const writers, per = 4, 300
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := db.Set([]byte(fmt.Sprintf("w%d-%d", w, i)), []byte("v")); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	got := take(t, ch, writers*per)
	_ = stop()
	seen := map[string]bool{}
	for i, c := range got {
		if seen[string(c.Key)] {
			t.Fatalf("%s delivered twice", c.Key)
		}
		seen[string(c.Key)] = true
		if i > 0 && c.Version <= got[i-1].Version {
			t.Fatalf("version %d after %d", c.Version, got[i-1].Version)
		}
	}
}

func TestASlowSubscriberFallsBehindAndResumesFromTheHistory(t *testing.T) {
	db := openTempWith(t, &Options{ChangeFeedHistoryBytes: 64 << 20})
	ctx := context.Background()
	// The callback blocks on its first call while 9 MiB are written: past
	// the 8 MiB bound.
	started := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		first := true
		done <- db.Subscribe(ctx, func([]Change) error {
			if first {
				first = false
				close(started)
				<-release
			}
			return nil
		}, 0)
	}()
	for i := 0; ; i++ {
		mustSet(t, db, "marker", fmt.Sprint(i))
		select {
		case <-started:
		case <-time.After(20 * time.Millisecond):
			if i > 500 {
				t.Fatal("the subscription never started")
			}
			continue
		}
		break
	}
	start, err := db.LastVersion()
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 4096)
	n := 0
	for ; n < 9*256; n++ {
		if err := db.Set([]byte(fmt.Sprintf("k%05d", n)), val); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	err = <-done
	resume, ok := IsFellBehind(err)
	if !ok || !errors.Is(err, ErrFellBehind) {
		t.Fatalf("want a FellBehindError, got %v", err)
	}
	if resume > start {
		t.Fatalf("resume from %d, past the writes made while it was blocked (%d..)", resume, start+1)
	}
	// Resuming gets exactly the rest.
	ch, stop := collect(t, db, resume)
	got := take(t, ch, int(start+uint64(n)-resume))
	_ = stop()
	for i, c := range got {
		if c.Version != resume+1+uint64(i) {
			t.Fatalf("change %d has version %d, want %d", i, c.Version, resume+1+uint64(i))
		}
	}

	// A version older than the history: the error names the oldest one held.
	small := openTempWith(t, &Options{ChangeFeedHistoryBytes: -1})
	mustSet(t, small, "k1", "v")
	mustSet(t, small, "k2", "v")
	err = small.Subscribe(ctx, func([]Change) error { return nil }, 1)
	var short *HistoryTooShortError
	if !errors.As(err, &short) || !errors.Is(err, ErrFeedHistoryTooShort) || short.Oldest != 2 {
		t.Fatalf("want a HistoryTooShortError naming version 2, got %v", err)
	}
}

func TestSubscribeEndsWhenTheDBClosesAndReadTsGivesTheRescanPoint(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "a", "1")
	txn, err := db.NewTransaction(false)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := db.LastVersion()
	if txn.ReadTs() != last || last == 0 {
		t.Errorf("read ts %d, last version %d", txn.ReadTs(), last)
	}
	txn.Discard()
	ch, stop := collect(t, db, 0)
	waitSubscribed(t, db, ch)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if err := db.Subscribe(context.Background(), func([]Change) error { return nil }, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe on a closed DB: %v", err)
	}
}

func TestARangeDeleteIsDeliveredAsOneChangeWithItsRange(t *testing.T) {
	db := openTemp(t)
	ch, stop := collect(t, db, 0, []byte("a"), []byte("zz"))
	waitSubscribed(t, db, ch)
	mustSet(t, db, "a1", "v1")
	if err := db.DeleteRange([]byte("x"), []byte("z")); err != nil { // does not meet "a"
		t.Fatal(err)
	}
	if err := db.DropPrefix([]byte("a")); err != nil {
		t.Fatal(err)
	}
	got := take(t, ch, 2)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe after cancel: %v", err)
	}
	if got[0].DeleteRange || string(got[0].Key) != "a1" {
		t.Errorf("first change: %+v", got[0])
	}
	if c := got[1]; !c.DeleteRange || !c.Deleted || string(c.Key) != "a" || string(c.Value) != "b" {
		t.Errorf("the drop: %+v", c)
	}
}
