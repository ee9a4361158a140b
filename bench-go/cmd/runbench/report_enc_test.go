package main

import (
	"strings"
	"testing"
)

// sett-enc is compared with sett as every engine is, in the comparison table,
// but a loss of plain sett to it is the noise of a variant of sett, not a
// place where sett is behind another engine. A loss to rocksdb still is.
func TestSettEncIsARowOfTheComparisonButNotWhereSettIsBehind(t *testing.T) {
	// factor 0.5: the other engine takes half sett's time on everything.
	cells := append(cellsFor(1024, "sett-enc", 0.5), cellsFor(128, "rocksdb", 0.5)...)
	tb := tabulate(cells, false)
	if !strings.Contains(tb.comparison, "| 1024 B | sett-enc |") {
		t.Fatalf("no sett-enc row in the comparison:\n%s", tb.comparison)
	}
	if !strings.Contains(tb.results, "| 1024 B | sett-enc |") {
		t.Fatalf("no sett-enc row in the results:\n%s", tb.results)
	}
	var rocks int
	for _, l := range tb.behind {
		if strings.Contains(l, "sett-enc") {
			t.Fatalf("a loss to sett-enc counted where sett is behind: %s", l)
		}
		if strings.Contains(l, "behind rocksdb") {
			rocks++
		}
	}
	if rocks == 0 {
		t.Fatalf("the losses to rocksdb are not listed: %v", tb.behind)
	}
}

// sett-enc sorts right after sett, before the other engines.
func TestSettEncRanksRightAfterSett(t *testing.T) {
	if !(engineRank("sett") < engineRank("sett-enc") && engineRank("sett-enc") < engineRank("rocksdb")) {
		t.Fatalf("ranks: sett %d, sett-enc %d, rocksdb %d", engineRank("sett"), engineRank("sett-enc"), engineRank("rocksdb"))
	}
}
