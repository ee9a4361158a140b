package sett

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// allOptions sets every field to a valid value other than the default.
func allOptions() Options {
	return Options{
		ValueThreshold:             128,
		MemTableSize:               1 << 20,
		NumMemtables:               3,
		BlockSize:                  8192,
		Compression:                CompressionLZ4,
		CompressionPerLevel:        []Compression{CompressionNone, CompressionLZ4, CompressionZSTD},
		ZSTDCompressionLevel:       5,
		BloomBitsPerKey:            12,
		CacheSize:                  16 << 20,
		BaseTableSize:              2 << 20,
		BaseLevelSize:              8 << 20,
		LevelSizeMultiplier:        8,
		LevelDynamic:               true,
		MaxLevels:                  5,
		NumLevelZeroTables:         3,
		NumLevelZeroTablesSlowdown: 6,
		NumLevelZeroTablesStall:    9,
		NumCompactors:              1,
		ValueLogFileSize:           4 << 20,
		ValueLogGCRatio:            0.3,
		ValueLogGCIdleRatio:        0.2,
		ValueLogGCRate:             8 << 20,
		ValueLogGCWriteFactor:      3,
		MaxKeySize:                 1000,
		MaxValueSize:               1 << 20,
		MaxTxnSize:                 4 << 20,
		ChangeFeedHistoryBytes:     1 << 20,
		SyncWrites:                 true,
		MergeOperator:              MergeAppend,
		// The secret and its rotation are outside core's table of options
		// (ffi/tests/options_table.rs) but set here all the same, so that an
		// encrypted database is opened with every other option too.
		EncryptionKey:                 bytes.Repeat([]byte{7}, 32),
		EncryptionKeyRotationDuration: time.Hour,
	}
}

func TestEveryOptionIsAcceptedAndTheDatabaseWorks(t *testing.T) {
	o := allOptions()
	// Every field of Options is set by allOptions except ReadOnly (tested
	// below): a new field must be added there and to cOptions.
	v := reflect.ValueOf(o)
	for i := 0; i < v.NumField(); i++ {
		if name := v.Type().Field(i).Name; name != "ReadOnly" && v.Field(i).IsZero() {
			t.Errorf("allOptions leaves %s at its zero value", name)
		}
	}
	db := openTempWith(t, &o)
	mustSet(t, db, "k", "v")
	if err := db.Merge([]byte("k"), []byte("w")); err != nil {
		t.Fatal(err)
	}
	if mustGet(t, db, "k") != "vw" {
		t.Fatal("read back")
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.LevelTables) != 5 {
		t.Fatalf("MaxLevels 5 gave %d levels", len(st.LevelTables))
	}
	if st.CacheCapacity != 16<<20 {
		t.Fatalf("CacheSize 16 MiB gave a capacity of %d", st.CacheCapacity)
	}
}

func TestOptionsReachTheEngine(t *testing.T) {
	// MaxKeySize and MaxValueSize are checked on every write: the limits set
	// from Go must be the ones enforced.
	db := openTempWith(t, &Options{MaxKeySize: 10, MaxValueSize: 100})
	if err := db.Set(bytes.Repeat([]byte("k"), 11), nil); !errors.Is(err, ErrTooBig) {
		t.Fatalf("an 11-byte key with MaxKeySize 10: %v", err)
	}
	if err := db.Set([]byte("k"), make([]byte, 101)); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a 101-byte value with MaxValueSize 100: %v", err)
	}
	if err := db.Set(bytes.Repeat([]byte("k"), 10), make([]byte, 100)); err != nil {
		t.Fatalf("a write at both limits: %v", err)
	}
	// MaxTxnSize bounds a transaction's buffered writes.
	db2 := openTempWith(t, &Options{MaxTxnSize: 10000})
	err := db2.Update(func(txn *Txn) error {
		for i := 0; i < 1000; i++ {
			if err := txn.Set([]byte(fmt.Sprintf("k%04d", i)), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("100 KB in a transaction with MaxTxnSize 10000: %v", err)
	}
}

func TestOutOfRangeOptionsAreRefusedNamingTheOptionAndItsBounds(t *testing.T) {
	cases := []struct {
		o    Options
		name string
		// The bounds of core's table of options, as the message states them
		// (empty: refused by Go before C, as negative).
		bounds string
	}{
		{Options{BlockSize: 10}, "block_size", "10 is outside 256..=1 MiB"},
		{Options{MemTableSize: 100}, "memtable_size", "100 is outside 4 KiB..=4 GiB"},
		{Options{ValueLogFileSize: 100}, "vlog_file_size", "100 is outside 4 KiB..=1 TiB"},
		{Options{CacheSize: 1000}, "cache_size", "1000 is outside at least 1 MiB"},
		{Options{MemTableSize: -1}, "MemTableSize", ""},
		{Options{BaseTableSize: -5}, "BaseTableSize", ""},
	}
	for _, c := range cases {
		_, err := Open(t.TempDir(), &c.o)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), c.name) ||
			!strings.Contains(err.Error(), c.bounds) {
			t.Errorf("%+v: %v, want ErrInvalidOption naming %s and %q", c.o, err, c.name, c.bounds)
		}
	}
}

func TestValueLogGCRatioOfOneOrMoreIsRefusedByNameAndTheDataStays(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "kept", "value")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Negative means off in Go; 1 and more are out of range.
	for _, ratio := range []float64{1, 1.5, 1e9} {
		db, err := Open(dir, &Options{ValueLogGCRatio: ratio})
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "vlog_gc_ratio") {
			t.Errorf("ValueLogGCRatio %v: %v, want ErrInvalidOption naming vlog_gc_ratio", ratio, err)
		}
		if db != nil {
			t.Errorf("ValueLogGCRatio %v: a DB came back with the error", ratio)
			db.Close()
		}
	}
	for _, ratio := range []float64{1, 2.5} {
		db, err := Open(dir, &Options{ValueLogGCIdleRatio: ratio})
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "vlog_gc_idle_ratio") {
			t.Errorf("ValueLogGCIdleRatio %v: %v, want ErrInvalidOption naming vlog_gc_idle_ratio", ratio, err)
		}
		if db != nil {
			t.Errorf("ValueLogGCIdleRatio %v: a DB came back with the error", ratio)
			db.Close()
		}
	}
	db, err = Open(dir, &Options{ValueLogGCRatio: -1, ValueLogGCIdleRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := mustGet(t, db, "kept"); got != "value" {
		t.Fatalf("kept = %q after the refused opens", got)
	}
}

// jsonRecord is a compressible JSON-like value, deterministic from i.
func jsonRecord(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"name":"user-%d","email":"user%d@example.com","city":"Lyon",`+
		`"active":true,"tags":["alpha","bravo"],"bio":"charlie delta echo foxtrot golf hotel"}`, i, i, i))
}

// tableBytes sums the sizes of the .sst files in dir.
func tableBytes(t *testing.T, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sst") {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			total += info.Size()
		}
	}
	return total
}

func TestCompressionPerLevelReadsBackAndShrinksTables(t *testing.T) {
	const n = 3000
	write := func(o Options) int64 {
		dir := t.TempDir()
		o.MemTableSize, o.BaseTableSize = 64<<10, 64<<10
		db, err := Open(dir, &o)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := db.Set([]byte(fmt.Sprintf("user:%06d", i)), jsonRecord(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flatten(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(dir, &o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for i := 0; i < n; i++ {
			got := mustGet(t, db, fmt.Sprintf("user:%06d", i))
			if got != string(jsonRecord(i)) {
				t.Fatalf("key %d read back as %q", i, got)
			}
		}
		if _, err := db.Verify(); err != nil {
			t.Fatal(err)
		}
		return tableBytes(t, dir)
	}
	plain := write(Options{})
	packed := write(Options{
		CompressionPerLevel:  []Compression{CompressionNone, CompressionLZ4, CompressionZSTD},
		ZSTDCompressionLevel: 5,
	})
	if packed <= 0 || packed*10 >= plain*7 {
		t.Fatalf("compressed tables %d bytes against %d uncompressed", packed, plain)
	}
	_, err := Open(t.TempDir(), &Options{Compression: Compression(9)})
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "Compression") {
		t.Errorf("codec 9: %v, want ErrInvalidOption naming Compression", err)
	}
	_, err = Open(t.TempDir(), &Options{ZSTDCompressionLevel: 30})
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "zstd_level") {
		t.Errorf("zstd level 30: %v, want ErrInvalidOption naming zstd_level", err)
	}
}

func TestBloomFiltersCanBeTurnedOff(t *testing.T) {
	with := openTempWith(t, &Options{MemTableSize: 64 << 10})
	without := openTempWith(t, &Options{MemTableSize: 64 << 10, BloomBitsPerKey: -1})
	for _, db := range []*DB{with, without} {
		for i := 0; i < 2000; i++ {
			mustSet(t, db, fmt.Sprintf("key%05d", i), "v")
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := with.Stats()
	b, _ := without.Stats()
	if a.IndexFilterBytes <= b.IndexFilterBytes {
		t.Fatalf("index+filter bytes with bloom filters %d, without %d", a.IndexFilterBytes, b.IndexFilterBytes)
	}
	if mustGet(t, without, "key01999") != "v" {
		t.Fatal("read without bloom filters")
	}
}

func TestReadOnlyOpenSharesTheDirectoryAndRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "k", "v")
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second read-write open: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r1, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a second read-only open: %v", err)
	}
	defer r2.Close()
	if mustGet(t, r1, "k") != "v" || mustGet(t, r2, "k") != "v" {
		t.Fatal("read-only reads")
	}
	if err := r1.Set([]byte("k"), []byte("w")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a write to a read-only database: %v", err)
	}
	if err := r1.Update(func(txn *Txn) error { return txn.Set([]byte("k"), []byte("w")) }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a transaction on a read-only database: %v", err)
	}
}
