package workspace

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: each test has its own directories and git
// repositories, and mostly waits on git processes and fsyncs, so
// GOMAXPROCS of them at a time leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(2)
	os.Exit(m.Run())
}
