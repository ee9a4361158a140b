package keys

import (
	"testing"
)

func TestAppendKeyMatchesBadgerBenchFormat(t *testing.T) {
	// Keys as badger-bench's populate.go spells them (fmt "vsz=%05d-k=%010d"),
	// written out by hand so that the test does not share the code under test.
	for _, c := range []struct {
		valsz int
		k     int64
		want  string
	}{
		{16, 0, "vsz=00016-k=0000000000"},
		{128, 42, "vsz=00128-k=0000000042"},
		{16384, 9_999_999_999, "vsz=16384-k=9999999999"},
		{1024, 1234567, "vsz=01024-k=0001234567"},
	} {
		want := c.want
		if got := string(AppendKey([]byte("x"), c.valsz, c.k)); got != "x"+want {
			t.Fatalf("AppendKey(%d, %d) = %q, want %q", c.valsz, c.k, got, "x"+want)
		}
		if k, ok := Index([]byte(want)); !ok || k != c.k {
			t.Fatalf("Index(%q) = %d, %v", want, k, ok)
		}
	}
	if _, ok := Index([]byte("vsz=00016-x=000000000a")); ok {
		t.Fatal("Index accepted a foreign key")
	}
}

func TestValuesAreAFunctionOfTheKeyAndChecksCatchDamage(t *testing.T) {
	for _, valsz := range []int{5, 16, 128, 1023, 16384} {
		a, b := make([]byte, valsz), make([]byte, valsz)
		FillValue(a, valsz, 7)
		FillValue(b, valsz, 7)
		if string(a) != string(b) {
			t.Fatalf("valsz %d: two fills of key 7 differ", valsz)
		}
		if !QuickCheckValue(a, valsz, 7) || !FullCheckValue(a, valsz, 7) {
			t.Fatalf("valsz %d: a correct value fails its check", valsz)
		}
		FillValue(b, valsz, 8)
		if string(a) == string(b) || QuickCheckValue(b, valsz, 7) {
			t.Fatalf("valsz %d: key 8's value passes as key 7's", valsz)
		}
		for _, off := range []int{0, valsz / 2, valsz - 1} {
			c := append([]byte(nil), a...)
			c[off] ^= 1
			if FullCheckValue(c, valsz, 7) {
				t.Fatalf("valsz %d: flip at %d not caught", valsz, off)
			}
		}
		if QuickCheckValue(a[:valsz-1], valsz, 7) {
			t.Fatalf("valsz %d: a short value passes", valsz)
		}
	}
}

func TestReadIndexIsTheSameSequenceEveryTime(t *testing.T) {
	seen := map[int64]bool{}
	for i := uint64(0); i < 1000; i++ {
		k := ReadIndex(i, 500)
		if k < 0 || k >= 500 || k != ReadIndex(i, 500) {
			t.Fatalf("ReadIndex(%d) = %d", i, k)
		}
		seen[k] = true
	}
	if len(seen) < 400 {
		t.Fatalf("only %d distinct keys in 1000 reads of 500", len(seen))
	}
}
