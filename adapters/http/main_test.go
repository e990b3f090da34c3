package httpapi

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: the parallel tests (each with its own server,
// log and, for the board's, browser) mostly wait on the browser's page,
// timers and their servers, so GOMAXPROCS of them at a time leaves the
// CPUs idle.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	os.Exit(m.Run())
}
