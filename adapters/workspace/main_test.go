package workspace

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: each test has its own directories and git
// repositories, and mostly waits on git processes and fsyncs, so
// GOMAXPROCS of them at a time leaves the CPUs idle.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	os.Exit(m.Run())
}
