package stores

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"settbench/internal/keys"
)

// The badger-bench adapters must hold the same data after the same writes, hand
// out what was written through every read path, and report a backlog that ends.
func TestStoresHoldTheSameDataThroughEveryReadPath(t *testing.T) {
	const valsz, n = 1500, 3000 // above the value threshold: separated values
	digests := map[string]uint64{}
	for _, kind := range []string{"sett", "sett-enc", "rocksdb", "rocksdb-blob", "badger", "pebble"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(kind, dir, Options{CacheBytes: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			for start := 0; start < n; start += 500 {
				var ks, vs [][]byte
				for k := start; k < start+500; k++ {
					v := make([]byte, valsz)
					keys.FillValue(v, valsz, int64(k))
					ks, vs = append(ks, keys.Key(valsz, int64(k))), append(vs, v)
				}
				if err := s.WriteBatch(ks, vs); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The separating engines must have put these values apart.
			if pattern := map[string]string{"pebble": "*.blob", "rocksdb-blob": "*.blob", "sett": "*.vlog", "sett-enc": "*.vlog"}[kind]; pattern != "" {
				if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) == 0 {
					entries, _ := os.ReadDir(dir)
					t.Fatalf("%s wrote no %s file: values were not separated (files: %v)", kind, pattern, entries)
				}
			}
			if s, err = Open(kind, dir, Options{CacheBytes: 8 << 20}); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, idle, desc, err := WaitIdle(s, 30*time.Second); err != nil || !idle {
				t.Fatalf("backlog did not end: idle=%v %s %v", idle, desc, err)
			}
			// A buffer too small for the value, then one large enough.
			for _, dst := range [][]byte{make([]byte, 0, 10), make([]byte, 0, valsz)} {
				v, err := s.Get(keys.Key(valsz, 1234), dst)
				if err != nil || !keys.FullCheckValue(v, valsz, 1234) {
					t.Fatalf("get with a %d-byte buffer: %v", cap(dst), err)
				}
			}
			if _, err := s.Get(keys.Key(valsz, n+5), nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing key: %v", err)
			}
			// A MultiGet of present and missing keys, with a repeat, answers each
			// in the order asked; one larger than the pooled buffers too.
			for _, size := range []int{5, 200} {
				var ks [][]byte
				var want []int64
				for i := 0; i < size; i++ {
					k := int64((i * 7919) % (n + n/4)) // a fifth past n: missing
					if i == 3 {
						k = want[1]
					}
					ks, want = append(ks, keys.Key(valsz, k)), append(want, k)
				}
				seen := 0
				if err := s.MultiGet(ks, func(i int, v []byte) {
					seen++
					if i != seen-1 {
						t.Fatalf("MultiGet answered key %d out of order (after %d)", i, seen-1)
					}
					if present := want[i] < n; present != (v != nil) || (present && !keys.FullCheckValue(v, valsz, want[i])) {
						t.Fatalf("MultiGet of key %d (present %v): wrong answer (%d bytes)", want[i], present, len(v))
					}
				}); err != nil || seen != size {
					t.Fatalf("MultiGet of %d keys: %d answers, %v", size, seen, err)
				}
			}
			h := crc64.New(crc64.MakeTable(crc64.ECMA))
			var prev []byte
			got, err := s.Iterate(false, 1<<30, func(k, v []byte) bool {
				if bytes.Compare(prev, k) >= 0 && prev != nil {
					t.Fatalf("keys out of order: %q after %q", k, prev)
				}
				prev = append(prev[:0], k...)
				ki, ok := keys.Index(k)
				if !ok || !keys.FullCheckValue(v, valsz, ki) {
					t.Fatalf("wrong value for %q", k)
				}
				h.Write(k)
				h.Write(v)
				return true
			})
			if err != nil || got != n {
				t.Fatalf("iterated %d of %d: %v", got, n, err)
			}
			digests[kind] = h.Sum64()
			seen := 0
			if got, err := s.Iterate(true, 100, func(k, _ []byte) bool { seen++; return true }); err != nil || got != 100 || seen != 100 {
				t.Fatalf("keys-only with limit 100: %d %d %v", got, seen, err)
			}
		})
	}
	for kind, d := range digests {
		if d != digests["sett"] {
			t.Fatalf("engines hold different data (%s differs from sett): %x", kind, digests)
		}
	}
	if len(digests) != 6 {
		t.Fatalf("only %d engines ran: %x", len(digests), digests)
	}
}

// sett-enc is sett with encryption at rest: none of its files holds a value
// in plaintext (sett's value log does), and only the benchmark key opens it.
func TestSettEncEncryptsEveryFileAndNeedsTheBenchmarkKey(t *testing.T) {
	const valsz = 1500
	v := make([]byte, valsz)
	keys.FillValue(v, valsz, 7)
	needle := v[valsz/2 : valsz/2+64]
	for _, kind := range []string{"sett", "sett-enc"} {
		dir := t.TempDir()
		s, err := Open(kind, dir, Options{CacheBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if s.Name() != kind {
			t.Fatalf("Open(%s) is named %s", kind, s.Name())
		}
		if err := s.WriteBatch([][]byte{keys.Key(valsz, 7)}, [][]byte{v}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		plain := false
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && bytes.Contains(b, needle) {
				plain = true
			}
		}
		if plain != (kind == "sett") {
			t.Fatalf("%s: a file holds the value in plaintext: %v (want %v)", kind, plain, kind == "sett")
		}
		other := map[string]string{"sett": "sett-enc", "sett-enc": "sett"}[kind]
		if _, err := Open(other, dir, Options{CacheBytes: 8 << 20}); err == nil {
			t.Fatalf("%s's data opened as %s", kind, other)
		}
		if s, err = Open(kind, dir, Options{CacheBytes: 8 << 20}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(keys.Key(valsz, 7), nil)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("%s: read back after the refused open: %v", kind, err)
		}
		_ = s.Close()
	}
}

// The reports name the versions measured: read from the linked library for
// RocksDB and sett, and for Badger and Pebble the version go.mod requires.
func TestVersionsAreReadFromWhatIsLinked(t *testing.T) {
	if v := RocksVersion(); !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("RocksDB version %q", v)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]string{"rocksdb": "RocksDB " + RocksVersion() + ", ", "badger": "Badger v4.", "pebble": "Pebble v2.", "sett": "sett 0.", "sett-enc": "sett 0."} {
		if v := Version(kind); !strings.HasPrefix(v, want) {
			t.Errorf("Version(%s) = %q, want it to start with %q", kind, v, want)
		}
	}
	for path, pinned := range map[string]string{"github.com/dgraph-io/badger/v4": BadgerVersion, "github.com/cockroachdb/pebble/v2": PebbleVersion} {
		if !strings.Contains(string(mod), "\t"+path+" "+pinned+"\n") {
			t.Errorf("go.mod does not require %s %s: update the pinned version", path, pinned)
		}
	}
}

// With a codec, sett and RocksDB shrink compressible values and read them back
// after a reopen; an unknown codec is refused by name.
func TestCompressionShrinksCompressibleValuesAndReadsThemBack(t *testing.T) {
	const valsz, n = 512, 4000
	value := func(k int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf(`{"id":%d,"kind":"event","ok":true}`, k)), valsz/32)[:valsz]
	}
	for _, kind := range []string{"sett", "rocksdb"} {
		size := map[string]int64{}
		for _, codec := range []string{"none", "lz4", "zstd"} {
			dir := t.TempDir()
			o := Options{CacheBytes: 8 << 20, Compression: codec, ValueThreshold: 4 * valsz}
			s, err := Open(kind, dir, o)
			if err != nil {
				t.Fatal(err)
			}
			var ks, vs [][]byte
			for k := 0; k < n; k++ {
				ks, vs = append(ks, keys.Key(valsz, int64(k))), append(vs, value(k))
			}
			if err := s.WriteBatch(ks, vs); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(kind, dir, o); err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{0, 1234, n - 1} {
				if v, err := s.Get(keys.Key(valsz, int64(k)), nil); err != nil || !bytes.Equal(v, value(k)) {
					t.Fatalf("%s %s: key %d: %v", kind, codec, k, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if size[codec], _, err = DiskUsage(dir); err != nil {
				t.Fatal(err)
			}
		}
		if size["lz4"]*2 > size["none"] || size["zstd"]*2 > size["none"] {
			t.Errorf("%s: sizes %v: a codec did not halve repetitive values", kind, size)
		}
		if _, err := Open(kind, t.TempDir(), Options{Compression: "snappy"}); err == nil || !strings.Contains(err.Error(), "snappy") {
			t.Errorf("%s: an unknown codec: %v", kind, err)
		}
	}
}

// SettOptions reaches sett.Open: a MaxValueSize laid over the suite's
// settings refuses a value the defaults take, and a field sett.Options does
// not have, or a value of the wrong type, fails the open by name.
func TestSettOptionsAreLaidOverTheSuitesSettings(t *testing.T) {
	v := make([]byte, 300)
	for _, tc := range []struct {
		overlay  string
		refused  bool
		openFail string
	}{
		{overlay: "", refused: false},
		{overlay: `{"MaxValueSize": 200}`, refused: true},
		{overlay: `{"NoSuchOption": 1}`, openFail: "NoSuchOption"},
		{overlay: `{"MaxValueSize": "big"}`, openFail: "MaxValueSize"},
	} {
		s, err := Open("sett", t.TempDir(), Options{CacheBytes: 8 << 20, SettOptions: tc.overlay})
		if tc.openFail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.openFail) {
				t.Fatalf("overlay %s: open error %v, want one naming %s", tc.overlay, err, tc.openFail)
			}
			continue
		}
		if err != nil {
			t.Fatalf("overlay %q: %v", tc.overlay, err)
		}
		err = s.WriteBatch([][]byte{[]byte("k")}, [][]byte{v})
		if (err != nil) != tc.refused {
			t.Fatalf("overlay %q: writing 300 bytes gave %v, refused want %v", tc.overlay, err, tc.refused)
		}
		if !strings.Contains(Settings("sett", Options{SettOptions: tc.overlay}), tc.overlay) {
			t.Fatalf("overlay %q: the settings line does not name it", tc.overlay)
		}
		_ = s.Close()
	}
}
