package sett

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
)

func TestIteratorPrefixReverseKeysOnlyAndSeek(t *testing.T) {
	db := openTemp(t)
	for i := 0; i < 2000; i++ {
		_ = db.Set([]byte(fmt.Sprintf("p/%05d", i)), bytes.Repeat([]byte{byte(i)}, i%200))
	}
	_ = db.Set([]byte("q/other"), []byte("v"))
	it, err := db.NewIterator(IteratorOptions{Prefix: []byte("p/"), PrefetchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; it.Valid(); it.Next() {
		if want := fmt.Sprintf("p/%05d", n); string(it.Key()) != want || !bytes.Equal(it.Value(), bytes.Repeat([]byte{byte(n)}, n%200)) {
			t.Fatalf("entry %d: %q (%d bytes)", n, it.Key(), len(it.Value()))
		}
		n++
	}
	if n != 2000 || it.Err() != nil {
		t.Fatalf("iterated %d, err %v", n, it.Err())
	}
	if err := it.Seek([]byte("p/01500")); err != nil || string(it.Key()) != "p/01500" {
		t.Fatalf("seek: %q %v", it.Key(), err)
	}
	k := it.KeyCopy(nil)
	it.Next()
	if string(k) != "p/01500" || string(it.Key()) != "p/01501" {
		t.Fatalf("KeyCopy %q, next %q", k, it.Key())
	}
	if err := it.Rewind(); err != nil || string(it.Key()) != "p/00000" {
		t.Fatalf("rewind: %q %v", it.Key(), err)
	}
	it.Close()
	it.Close()
	if err := it.Seek([]byte("p")); !errors.Is(err, ErrClosed) || it.Valid() {
		t.Fatalf("seek on a closed iterator: %v", err)
	}
	rev, _ := db.NewIterator(IteratorOptions{Reverse: true, KeysOnly: true, Start: []byte("p/00010"), End: []byte("p/00020")})
	var keys []string
	for ; rev.Valid(); rev.Next() {
		keys = append(keys, string(rev.Key()))
		if len(rev.Value()) != 0 {
			t.Fatal("keys-only iterator returned a value")
		}
	}
	rev.Close()
	if len(keys) != 10 || keys[0] != "p/00019" || keys[9] != "p/00010" {
		t.Fatalf("reverse bounded keys: %v", keys)
	}
}

func TestIteratorIsASnapshot(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "a", "1")
	mustSet(t, db, "b", "2")
	it, err := db.NewIterator(IteratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	mustSet(t, db, "c", "3")
	_ = db.Delete([]byte("a"))
	var got []string
	for ; it.Valid(); it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if fmt.Sprint(got) != "[a=1 b=2]" {
		t.Fatalf("iterator saw writes made after it: %v", got)
	}
}

func TestIteratorLendsInlineAndSeparatedValuesOfAnySizeIntact(t *testing.T) {
	db := openTemp(t)
	// Values inline and in the value log, up to 300 KiB, lent from the C
	// iterator's buffers (sett_iter_next_view) in one batch.
	sizes := []int{10, 5000, 300 << 10, 20, 70 << 10}
	for i, n := range sizes {
		if err := db.Set([]byte(fmt.Sprintf("k%d", i)), bytes.Repeat([]byte{byte('a' + i)}, n)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIterator(IteratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	i := 0
	for ; it.Valid(); it.Next() {
		if !bytes.Equal(it.Value(), bytes.Repeat([]byte{byte('a' + i)}, sizes[i])) {
			t.Fatalf("value %d: %d bytes", i, len(it.Value()))
		}
		i++
	}
	if i != len(sizes) || it.Err() != nil {
		t.Fatalf("%d entries, %v", i, it.Err())
	}
}

func TestIteratorOptionsAreChecked(t *testing.T) {
	db := openTemp(t)
	if _, err := db.NewIterator(IteratorOptions{PrefetchSize: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative prefetch: %v", err)
	}
	if _, err := db.NewIterator(IteratorOptions{Limit: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative limit: %v", err)
	}
	it, err := db.NewIterator(IteratorOptions{Prefix: []byte("none/")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Valid() || it.Err() != nil {
		t.Fatalf("an empty range: valid %v, err %v", it.Valid(), it.Err())
	}
}

func TestIteratorLimitStopsAfterThatManyEntriesFromEachPosition(t *testing.T) {
	db := openTemp(t)
	for i := 0; i < 100; i++ {
		mustSet(t, db, fmt.Sprintf("l/%03d", i), fmt.Sprint(i))
	}
	for _, limit := range []int{1, 10, 99, 100, 500} {
		it, err := db.NewIterator(IteratorOptions{Prefix: []byte("l/"), Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; it.Valid(); it.Next() {
			if want := fmt.Sprintf("l/%03d", n); string(it.Key()) != want {
				t.Fatalf("limit %d: entry %d is %q", limit, n, it.Key())
			}
			n++
		}
		if want := min(limit, 100); n != want || it.Err() != nil {
			t.Fatalf("limit %d: %d entries (want %d), err %v", limit, n, want, it.Err())
		}
		// A seek starts a new count.
		if err := it.Seek([]byte("l/050")); err != nil {
			t.Fatal(err)
		}
		n = 0
		for ; it.Valid(); it.Next() {
			n++
		}
		if want := min(limit, 50); n != want {
			t.Fatalf("limit %d after a seek: %d entries, want %d", limit, n, want)
		}
		it.Close()
	}
}

// BenchmarkIteratorPrefixOfTen is KVBench's Prefix case: a 10-key prefix scan
// with 256 B values, with and without Limit; values inline in the tables (as
// KVBench has them: sett's default threshold is 1024 B) and separated into
// the value log.
func BenchmarkIteratorPrefixOfTen(b *testing.B) {
	const groups = 10000
	val := bytes.Repeat([]byte{7}, 256)
	for _, values := range []struct {
		name      string
		threshold int
	}{{"inline", 1024}, {"separated", 64}} {
		db := openTempWith(b, &Options{ValueThreshold: values.threshold, MemTableSize: 64 << 10})
		for i := 0; i < groups*10; i++ {
			if err := db.Set([]byte(fmt.Sprintf("kvbench-%012d", i)), val); err != nil {
				b.Fatal(err)
			}
		}
		for _, limit := range []int{0, 10} {
			b.Run(fmt.Sprintf("values=%s/limit=%d", values.name, limit), func(b *testing.B) {
				x := uint64(88172645463325252)
				for n := 0; n < b.N; n++ {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					p := []byte(fmt.Sprintf("kvbench-%011d", x%groups))
					it, err := db.NewIterator(IteratorOptions{Prefix: p, Limit: limit})
					if err != nil {
						b.Fatal(err)
					}
					got := 0
					for ; it.Valid() && got < 10; it.Next() {
						got++
					}
					it.Close()
					if got != 10 {
						b.Fatalf("%q: %d keys", p, got)
					}
				}
			})
		}
	}
}

// BenchmarkIteratorFullScan walks 100k entries of 256 B values (inline) from
// start to end: the batch buffer's growth must not slow long scans.
func BenchmarkIteratorFullScan(b *testing.B) {
	db := openTempWith(b, &Options{MemTableSize: 64 << 10})
	val := bytes.Repeat([]byte{7}, 256)
	const n = 100000
	for i := 0; i < n; i++ {
		if err := db.Set([]byte(fmt.Sprintf("kvbench-%012d", i)), val); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		it, err := db.NewIterator(IteratorOptions{})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for ; it.Valid(); it.Next() {
			got++
		}
		it.Close()
		if got != n {
			b.Fatalf("%d entries, want %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

// A short prefix scan takes its batch buffer from the iterator closed before
// it: KVBench's 10-key Prefix made and cleared a 4 KiB buffer per call.
func TestShortPrefixScansReuseTheViewsAndEntriesOfClosedIterators(t *testing.T) {
	db := openTemp(t)
	val := bytes.Repeat([]byte{7}, 256)
	for i := 0; i < 100; i++ {
		if err := db.Set([]byte(fmt.Sprintf("kvbench-%012d", i)), val); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(group int) {
		p := []byte(fmt.Sprintf("kvbench-%011d", group))
		it, err := db.NewIterator(IteratorOptions{Prefix: p, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for ; it.Valid(); it.Next() {
			if !bytes.HasPrefix(it.Key(), p) || !bytes.Equal(it.Value(), val) {
				t.Fatalf("%q: entry %q", p, it.Key())
			}
			got++
		}
		it.Close()
		if got != 10 {
			t.Fatalf("%q: %d keys", p, got)
		}
	}
	// One P, so that the pool hands back what the last Close put in it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	scan(0)
	const scans = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for n := 0; n < scans; n++ {
		scan(n % 10)
	}
	runtime.ReadMemStats(&after)
	perScan := (after.TotalAlloc - before.TotalAlloc) / scans
	// A collection in the loop may empty the pool once, and the race
	// detector's pool drops a quarter of what is put back: without the pool
	// a scan allocates the whole first view array and entry slice, and more.
	if perScan >= uint64(iterFirstBytes) {
		t.Fatalf("%d bytes allocated per 10-key scan: the %d bytes of entries (and the pair) are made anew", perScan, iterFirstBytes)
	}
	t.Logf("%d bytes allocated per 10-key scan", perScan)
}
