package main

import (
	"strconv"
	"strings"
	"testing"

	"settbench/stores"
)

// The header gives the one budget and, for every store run, a row with its
// cache setting and Flush meaning as package stores has them; absent stores
// are named with why.
func TestTheHeaderDescribesEveryStoreRun(t *testing.T) {
	text := settingsTable(stores.KVKinds, 64)
	if !strings.Contains(text, "64 MiB for every store") {
		t.Fatalf("no budget in the header:\n%s", text)
	}
	o := stores.KVOptions{CacheBytes: 64 << 20}
	for _, s := range stores.KVKinds {
		row := ""
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "| "+s+" |") {
				row = line
			}
		}
		if row == "" {
			t.Fatalf("no row for %s:\n%s", s, text)
		}
		for _, want := range []string{stores.KVCacheSetting(s, o), stores.FlushMeaning(s)} {
			if !strings.Contains(row, strings.ReplaceAll(want, "|", `\|`)) {
				t.Errorf("%s: row %q lacks %q", s, row, want)
			}
		}
		if strings.Count(row, " | ") != 4 {
			t.Errorf("%s: row is not five cells: %q", s, row)
		}
	}
	for _, kind := range []string{"sett", "rocksdb", "pebble", "goleveldb"} {
		if !strings.Contains(stores.KVCacheSetting(kind, o), "64 MiB") {
			t.Errorf("%s: its cache cell does not give the budget", kind)
		}
	}

	stores.AbsentKV["gone"] = "go: module example.com/gone: not found"
	defer delete(stores.AbsentKV, "gone")
	if text := settingsTable([]string{"sett"}, 64); !strings.Contains(text, "gone is absent: go: module example.com/gone: not found") {
		t.Errorf("an absent store is not named:\n%s", text)
	}
	if err := checkStores([]string{"sett", "gone"}); err == nil || !strings.Contains(err.Error(), "absent: go: module") {
		t.Errorf("an absent store was let through: %v", err)
	}
}

func TestUnknownStoresAreRefusedBeforeAnyRun(t *testing.T) {
	if err := checkStores(stores.KVKinds); err != nil {
		t.Fatal(err)
	}
	if err := checkStores([]string{"sett", "leveldb"}); err == nil || !strings.Contains(err.Error(), `"leveldb"`) {
		t.Fatalf("unknown store: %v", err)
	}
}

// rowsOf makes one CSV row per run of a store, with the same figure in
// every ranked column (the disk columns left out for the in-memory baselines).
func rowsOf(store string, vals ...float64) []map[string]string {
	var rows []map[string]string
	for i, v := range vals {
		r := map[string]string{"store": store, "fsync": "false", "run": strconv.Itoa(i + 1)}
		for _, m := range metrics {
			r[m.col] = strconv.FormatFloat(v, 'f', -1, 64)
		}
		r["disk_apparent"] = r["disk_allocated"]
		if !stores.Persistent(store) {
			r["disk_apparent"], r["disk_allocated"] = "0", "0"
		}
		rows = append(rows, r)
	}
	return rows
}

// Each column compares sett with the best other persistent store by median:
// ranges apart are first or behind, overlapping ranges a tie, and the
// in-memory baselines are not in it.
func TestTheStandingCallsOverlappingRangesATieAndLeavesOutTheInMemoryBaselines(t *testing.T) {
	var rows []map[string]string
	rows = append(rows, rowsOf("sett", 100, 104, 110)...)
	rows = append(rows, rowsOf("pebble", 90, 101, 102)...)
	rows = append(rows, rowsOf("map", 1000, 1000, 1000)...)
	cs := group(rows)
	if len(cs) != 3 || len(cs[0].rows) != 3 {
		t.Fatalf("grouped into %d cells, the first with %d rows", len(cs), len(cs[0].rows))
	}
	text := standing(cs, "false")
	if !strings.Contains(lineWith(text, "| Set |"), "| pebble | 101 [90–102] | tied for first |") {
		t.Errorf("overlapping ranges:\n%s", text)
	}
	// Lower is better for BatchWrite: sett's 100-110 s against pebble's 90-102 overlap too.
	if !strings.Contains(lineWith(text, "| BatchWrite |"), "tied for first") {
		t.Errorf("BatchWrite:\n%s", text)
	}
	if strings.Contains(text, "map") {
		t.Errorf("an in-memory baseline is in the standing:\n%s", text)
	}

	rows = append(rowsOf("sett", 100, 104, 110), rowsOf("pebble", 80, 85, 99)...)
	text = standing(group(rows), "false")
	if !strings.Contains(lineWith(text, "| Set |"), "| first |") || !strings.Contains(lineWith(text, "| BatchWrite |"), "| behind |") {
		t.Errorf("ranges apart:\n%s", text)
	}
	if got := table(group(rows), "false"); !strings.Contains(got, "| sett | 104.000 [100.000–110.000] |") {
		t.Errorf("the table does not give the median and range:\n%s", got)
	}
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
