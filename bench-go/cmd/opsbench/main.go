// Command opsbench is the Go row of `make bench-bindings`: the four phases of
// `sett-bench ops` (cli/src/opsbench.rs) through the Go package over cgo, on the
// same data, so that the difference between rows is the binding layer:
//
//	batch   N keys "key%012d" with 100-byte values, in 1000-entry batches
//	put     the same N keys overwritten with one Set each
//	get     N GetInto lookups of existing keys in a fixed xorshift64 order
//	iterate one forward scan with values
//
// Keys and the 256 possible values are made before the clock starts. It prints
// "RESULT go PHASE NS" (ns per key) and exits 1 if data reads back
// wrong.
//
//	opsbench DIR N
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	sett "github.com/sett-db/sett-go"
)

const valueLen = 100

func report(phase string, t time.Time, n int) {
	fmt.Printf("RESULT go %s %.0f\n", phase, float64(time.Since(t).Nanoseconds())/float64(n))
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: opsbench DIR N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "N must be a positive number")
		os.Exit(2)
	}
	if err := run(os.Args[1], n); err != nil {
		fmt.Fprintln(os.Stderr, "opsbench:", err)
		os.Exit(1)
	}
}

func run(dir string, n int) error {
	db, err := sett.Open(dir, nil)
	if err != nil {
		return err
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%012d", i)
	}
	var values [256][]byte
	for v := range values {
		values[v] = bytes.Repeat([]byte{byte(v)}, valueLen)
	}
	value := func(i int) []byte { return values[i&0xff] }

	t := time.Now()
	b := db.NewBatch()
	for i := 0; i < n; i++ {
		if err := b.Set(keys[i], value(i)); err != nil {
			return err
		}
		if b.Len() == 1000 || i+1 == n {
			if err := b.Commit(); err != nil {
				return err
			}
			b = db.NewBatch()
		}
	}
	b.Discard()
	report("batch", t, n)

	t = time.Now()
	for i := 0; i < n; i++ {
		if err := db.Set(keys[i], value(i+1)); err != nil {
			return err
		}
	}
	report("put", t, n)

	x := uint64(88172645463325252)
	dst := make([]byte, 256)
	t = time.Now()
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		k := int(x % uint64(n))
		v, err := db.GetInto(keys[k], dst)
		if err != nil {
			return fmt.Errorf("get %d: %w", k, err)
		}
		if len(v) != valueLen || v[0] != byte(k+1) {
			return fmt.Errorf("get %d: wrong value", k)
		}
	}
	report("get", t, n)

	t = time.Now()
	it, err := db.NewIterator(sett.IteratorOptions{})
	if err != nil {
		return err
	}
	seen := 0
	for ; it.Valid(); it.Next() {
		if len(it.Key()) != 15 || len(it.Value()) != valueLen {
			return fmt.Errorf("scan returned %d / %d bytes", len(it.Key()), len(it.Value()))
		}
		seen++
	}
	report("iterate", t, n)
	it.Close()
	if err := it.Err(); err != nil {
		return err
	}
	if seen != n {
		return fmt.Errorf("scan saw %d of %d keys", seen, n)
	}
	return db.Close()
}
