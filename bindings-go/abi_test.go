package sett

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// notCalled lists the functions of sett.h this package does not call, each
// with the reason. Every other function must be called from the package.
var notCalled = map[string]string{
	"sett_iter_valid": "Iterator walks with sett_iter_next_view (many entries per cgo call); " +
		"the one-entry-per-call stepping functions would cost a crossing per item",
	"sett_iter_key":   "as sett_iter_valid: keys come from sett_iter_next_view",
	"sett_iter_value": "as sett_iter_valid: values come from sett_iter_next_view",
	"sett_iter_next":  "as sett_iter_valid: Next moves within a batch, sett_iter_next_view moves the C iterator",
	"sett_iter_next_batch": "Iterator lends entries with sett_iter_next_view, which hands out the C iterator's " +
		"buffers instead of copying each key and value into a Go buffer",
	"sett_error_code": "the status returned by every call is the code; status() reads only the message from sett_error_t",
	"sett_stats":      "Stats calls sett_stats_ex, whose extensible struct has every field of sett_stats_t and the GC counts",
	"sett_multi_get": "MultiGet calls sett_multi_get_into: the values in one Go buffer, not a C allocation " +
		"and a copy each",
	"sett_keyspace_multi_get": "as sett_multi_get: Keyspace.MultiGet calls sett_keyspace_multi_get_into",
}

// headerPath is the sett.h this package is built against: pkg-config's
// includedir, else the repository's include/sett.h.
func headerPath(t *testing.T) string {
	if out, err := exec.Command("pkg-config", "--variable=includedir", "sett").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "sett.h")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p := filepath.Join("..", "include", "sett.h")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("sett.h not found through pkg-config nor at %s", p)
	}
	return p
}

// headerFunctions parses the function declarations of sett.h.
func headerFunctions(t *testing.T) []string {
	src, err := os.ReadFile(headerPath(t))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^(?:const |struct )?[a-z_0-9]+(?: ?\*)? ?\*?(sett_[a-z0-9_]+)\(`)
	var fns []string
	for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
		fns = append(fns, m[1])
	}
	return fns
}

// packageCalls are the C functions called from the package's non-test files:
// from Go (C.sett_x(...)), or from C helpers in a file's cgo preamble, which
// make several calls in one crossing (those helpers, sett_go_*, are not
// sett.h's).
func packageCalls(t *testing.T) map[string]bool {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\bC\.(sett_[a-z0-9_]+)\(`)
	preamble := regexp.MustCompile(`(?s)/\*(.*?)\*/\s*import "C"`)
	cCall := regexp.MustCompile(`[^a-z0-9_](sett_[a-z0-9_]+)\(`)
	calls := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			if !strings.HasPrefix(m[1], "sett_go_") {
				calls[m[1]] = true
			}
		}
		if m := preamble.FindSubmatch(src); m != nil {
			for _, c := range cCall.FindAllSubmatch(m[1], -1) {
				// sett_go_*: the package's own helpers, not sett.h's.
				if name := string(c[1]); !strings.HasPrefix(name, "sett_go_") {
					calls[name] = true
				}
			}
		}
	}
	return calls
}

func TestEveryFunctionOfTheHeaderIsReachableFromGo(t *testing.T) {
	fns := headerFunctions(t)
	// A parser that found nothing would pass everything: sett.h has ~90
	// functions, among them these.
	declared := map[string]bool{}
	for _, f := range fns {
		declared[f] = true
	}
	for _, f := range []string{"sett_open", "sett_version_string", "sett_batch_new", "sett_iter_options_new", "sett_txn_free"} {
		if !declared[f] {
			t.Fatalf("the header parser missed %s (found %d functions)", f, len(fns))
		}
	}
	if len(fns) < 80 {
		t.Fatalf("only %d functions parsed from sett.h", len(fns))
	}
	calls := packageCalls(t)
	var missing []string
	for _, f := range fns {
		_, excused := notCalled[f]
		switch {
		case calls[f] && excused:
			t.Errorf("%s is called but listed in notCalled: remove it from the list", f)
		case !calls[f] && !excused:
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("functions of sett.h the Go package never calls (call them or add them to notCalled with a reason): %s",
			strings.Join(missing, ", "))
	}
	for f := range notCalled {
		if !declared[f] {
			t.Errorf("notCalled lists %s, which sett.h does not declare", f)
		}
	}
	for f := range calls {
		if !declared[f] {
			t.Errorf("the package calls %s, which the parsed header does not declare", f)
		}
	}
	t.Logf("%d functions in sett.h, %d called, %d excused", len(fns), len(calls), len(notCalled))
}
