package sandboxtest

import (
	"flag"
	"testing"
)

// TestSetParallel_KeepsTheCommandLines: a -test.parallel given on the
// command line (here, by go test's -parallel, or the default it set) is
// what a second SetParallel leaves alone.
func TestSetParallel_KeepsTheCommandLines(t *testing.T) {
	f := flag.Lookup("test.parallel")
	if f == nil {
		t.Fatal("no test.parallel flag")
	}
	was := f.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.parallel", was) })
	_ = flag.Set("test.parallel", "3") // as the command line would have: Visit sees it set
	SetParallel(4)
	if got := f.Value.String(); got != "3" {
		t.Fatalf("test.parallel = %s after SetParallel(4) with it set to 3 before; want 3 kept", got)
	}
}

func TestSetParallel_RefusesUnderOne(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("SetParallel(0) did not panic")
		}
	}()
	SetParallel(0)
}
