package spread

import (
	"fmt"
	"testing"
)

func f0(x float64) string { return fmt.Sprintf("%.0f", x) }

// A median over fewer runs than the cell had says so.
func TestASpreadOverFewerRunsSaysSo(t *testing.T) {
	if got := Of([]float64{3, 0, 5}).Format(f0); got != "4 [3–5] (2 of 3 runs)" {
		t.Fatalf("got %q", got)
	}
	if got := Of([]float64{5, 3, 4}).Format(f0); got != "4 [3–5]" {
		t.Fatalf("got %q", got)
	}
	if got := Of([]float64{0, 0}).Format(f0); got != "—" {
		t.Fatalf("got %q", got)
	}
}

// Ahead or behind only where the ranges are apart; overlapping ranges are a
// tie however far apart the medians are, in either direction of better.
func TestOverlappingRangesAreATieAndOnlyRangesApartAreAheadOrBehind(t *testing.T) {
	for _, c := range []struct {
		s, o  []float64
		lower bool
		want  string
	}{
		{[]float64{10, 11, 12}, []float64{7, 8, 9}, false, "ahead"},
		{[]float64{10, 11, 12}, []float64{7, 8, 10}, false, "tie"},
		{[]float64{10, 11, 20}, []float64{9, 10.5, 10.6}, false, "tie"},
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, false, "behind"},
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, true, "ahead"},
		{[]float64{10}, []float64{7.9}, false, "ahead"},
		{[]float64{10}, []float64{8.1}, false, "tie"},
		{[]float64{0, 0}, []float64{1, 2}, false, "—"},
	} {
		if got := Verdict(Of(c.s), Of(c.o), c.lower); got != c.want {
			t.Errorf("%v against %v (lower better %v): %s, want %s", c.s, c.o, c.lower, got, c.want)
		}
	}
}
