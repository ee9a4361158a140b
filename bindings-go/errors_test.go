package sett

import (
	"errors"
	"fmt"
	"testing"
)

func TestEveryStatusCodeHasASentinel(t *testing.T) {
	if len(sentinels) != lastStatusCode {
		t.Fatalf("%d sentinels for status codes 1..%d", len(sentinels), lastStatusCode)
	}
	seen := map[int]bool{}
	for _, s := range sentinels {
		if s.Code < 1 || s.Code > lastStatusCode || seen[s.Code] {
			t.Fatalf("sentinel %v: code out of range or repeated", s)
		}
		seen[s.Code] = true
		if s.Message == "" || s.Message == statusString(999) {
			t.Errorf("code %d: libsett has no description (%q)", s.Code, s.Message)
		}
	}
	if statusString(lastStatusCode+1) != statusString(999) {
		t.Errorf("libsett knows status code %d, which this package has no sentinel for", lastStatusCode+1)
	}
}

func TestErrorsIsMatchesByCodeAndAsGivesTheMessage(t *testing.T) {
	db := openTemp(t)
	err := db.Set(nil, []byte("v"))
	if !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrTooBig) {
		t.Fatalf("empty key: %v", err)
	}
	wrapped := fmt.Errorf("while storing: %w", err)
	var se *Error
	if !errors.As(wrapped, &se) || se.Code != ErrInvalidArgument.Code || se.Message == "" {
		t.Fatalf("errors.As: %#v", se)
	}
	if !errors.Is(wrapped, ErrInvalidArgument) {
		t.Fatal("errors.Is through a wrap")
	}
	if errors.Is(ErrNoRewrite, ErrNotFound) {
		t.Fatal("ErrNoRewrite matched a status sentinel")
	}
}
