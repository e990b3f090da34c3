package worker

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// testReporter returns the logbook-reporter executable the tests' workers run restricted commands under (Config.Reporter)
// (sandboxtest.TestReporter).
func testReporter(t testing.TB) string {
	t.Helper()
	return sandboxtest.TestReporter(t)
}

// TestMain runs the tests with -test.parallel at four times GOMAXPROCS
// (twice under -race; sandboxtest.SetParallel) unless the command line
// sets it: each test has its own embedded server
// and directories, and mostly waits on its processes, heartbeats and
// timers (the package takes a tenth of a CPU on average), so GOMAXPROCS
// of them at a time leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(4)
	code := m.Run()
	sandboxtest.RemoveBuilt()
	os.Exit(code)
}
