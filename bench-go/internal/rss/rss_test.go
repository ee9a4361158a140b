package rss

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// touched is n bytes of heap with every page written, so resident.
func touched(n int) []byte {
	buf := make([]byte, n)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	return buf
}

func TestSamplerChargesAnAllocationMadeDuringThePhase(t *testing.T) {
	s := Start(10 * time.Millisecond)
	buf := touched(64 << 20)
	time.Sleep(50 * time.Millisecond)
	p := s.Stop()
	if p.Engine() < 60<<20 {
		t.Fatalf("64 MiB touched during the phase, charged %d bytes (%+v)", p.Engine(), p)
	}
	if p.PeakAnon < 60<<20 || p.Baseline <= 0 {
		t.Fatalf("readings look wrong: %+v", p)
	}
	if buf[4096] != 1 {
		t.Fatal("unreachable")
	}
	if MemAvailable() <= 0 {
		t.Fatal("MemAvailable unreadable")
	}
}

func TestRestartLeavesAPeakFromBeforeItOutOfThePhase(t *testing.T) {
	s := Start(10 * time.Millisecond)
	buf := touched(64 << 20)
	time.Sleep(50 * time.Millisecond)
	runtime.KeepAlive(buf)
	debug.FreeOSMemory()
	before := s.Restart()
	time.Sleep(50 * time.Millisecond)
	after := s.Stop()
	if before.EngineAnon() < 60<<20 {
		t.Fatalf("the settling part lost its peak: %+v", before)
	}
	if after.EngineAnon() > 32<<20 || after.Engine() > 32<<20 {
		t.Fatalf("64 MiB freed before Restart still charged to the phase: anon %d, rss %d (%+v)",
			after.EngineAnon(), after.Engine(), after)
	}
	if after.Baseline != before.Baseline || after.BaseAnon != before.BaseAnon {
		t.Fatalf("baselines moved: %+v then %+v", before, after)
	}
}
