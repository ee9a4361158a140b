// Command sett-installed is a program outside the sett repository's modules
// that uses the Go package against an installed libsett, found through
// pkg-config (PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig go build). It opens a
// database, writes, reads, iterates, runs value-log GC and backs it up, then
// restores the backup into a second database and checks it.
//
// Usage: sett-installed DIR
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sett "github.com/sett-db/sett-go"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sett-installed DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "sett-installed:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if sett.Version() != sett.HeaderVersion() {
		return fmt.Errorf("libsett %d at run time, sett.h %d at build time", sett.Version(), sett.HeaderVersion())
	}
	// GC is run by hand below, so the background GC is off (ValueLogGCRatio < 0);
	// by default it collects without being asked.
	db, err := sett.Open(filepath.Join(dir, "db"), &sett.Options{
		ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 16 << 10,
		ValueLogGCRatio: -1,
	})
	if err != nil {
		return err
	}
	defer db.Close()

	// Write: four rounds over the same 300 keys, the last one in a batch.
	const keys = 300
	for round := 0; round < 4; round++ {
		b := db.NewBatch()
		for i := 0; i < keys; i++ {
			if err := b.Set(key(i), bytes.Repeat([]byte{byte('a' + round)}, 200)); err != nil {
				b.Discard()
				return err
			}
		}
		if err := b.Commit(); err != nil {
			return err
		}
	}
	err = db.Update(func(txn *sett.Txn) error { return txn.Set([]byte("meta/owner"), []byte("example")) })
	if err != nil {
		return err
	}

	// Read.
	v, err := db.Get(key(7))
	if err != nil || len(v) != 200 || v[0] != 'd' {
		return fmt.Errorf("get: %d bytes, %v", len(v), err)
	}
	if _, err := db.Get([]byte("absent")); !errors.Is(err, sett.ErrNotFound) {
		return fmt.Errorf("get of an absent key: %v", err)
	}

	// Iterate.
	it, err := db.NewIterator(sett.IteratorOptions{Prefix: []byte("key/")})
	if err != nil {
		return err
	}
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	it.Close()
	if err := it.Err(); err != nil || n != keys {
		return fmt.Errorf("iterated %d keys, %v", n, err)
	}

	// Value-log GC: the three overwritten rounds are garbage once compacted.
	if err := db.Flatten(); err != nil {
		return err
	}
	before, err := db.Stats()
	if err != nil {
		return err
	}
	rounds := 0
	for {
		err := db.RunValueLogGC(0.5)
		if errors.Is(err, sett.ErrNoRewrite) {
			break
		}
		if err != nil {
			return err
		}
		rounds++
	}
	after, _ := db.Stats()
	if rounds == 0 || after.VlogBytes >= before.VlogBytes {
		return fmt.Errorf("GC: %d rounds, value log %d -> %d bytes", rounds, before.VlogBytes, after.VlogBytes)
	}

	// Back up to a file through an io.Writer, restore into a new database.
	f, err := os.Create(filepath.Join(dir, "full.backup"))
	if err != nil {
		return err
	}
	if _, err := db.Backup(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	restored, err := sett.Open(filepath.Join(dir, "restored"), nil)
	if err != nil {
		return err
	}
	defer restored.Close()
	f, err = os.Open(filepath.Join(dir, "full.backup"))
	if err != nil {
		return err
	}
	defer f.Close()
	entries, err := restored.Restore(f)
	if err != nil || entries != keys+1 {
		return fmt.Errorf("restore: %d entries, %v", entries, err)
	}
	if v, err := restored.Get([]byte("meta/owner")); err != nil || string(v) != "example" {
		return fmt.Errorf("restored value: %q %v", v, err)
	}

	fmt.Printf("sett-installed: libsett %s: wrote %d keys, iterated %d, GC took the value log from %d to %d bytes in %d rounds, restored %d entries from a backup\n",
		sett.VersionString(), keys, n, before.VlogBytes, after.VlogBytes, rounds, entries)
	return nil
}

func key(i int) []byte { return []byte(fmt.Sprintf("key/%04d", i)) }
