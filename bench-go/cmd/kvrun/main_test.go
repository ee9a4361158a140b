package main

import (
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
