package main

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// gogc reads the collector's current target (GOGC) from runtime/metrics.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The audit's collector runs at firstGCPercent until its first
// collection, at liveHeapGCPercent after it, and as before once restored.
func TestLiveHeapGC_LowersAfterFirstCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("$GOGC is set: liveHeapGC leaves the target alone")
	}
	was := gogc()
	restore := liveHeapGC()
	if got := gogc(); got != firstGCPercent {
		t.Fatalf("target before the first collection: %d, want %d", got, firstGCPercent)
	}
	runtime.GC()
	for deadline := time.Now().Add(30 * time.Second); gogc() != liveHeapGCPercent; {
		if time.Now().After(deadline) {
			t.Fatalf("target after a collection: %d, want %d", gogc(), liveHeapGCPercent)
		}
		runtime.GC() // the sentinel's finalizer runs after the cycle that freed it
		time.Sleep(time.Millisecond)
	}
	restore()
	if got := gogc(); got != was {
		t.Fatalf("target after restore: %d, want %d", got, was)
	}
	runtime.GC() // a finalizer left over must not undo the restore
	runtime.GC()
	if got := gogc(); got != was {
		t.Fatalf("target after restore and collections: %d, want %d", got, was)
	}
}
