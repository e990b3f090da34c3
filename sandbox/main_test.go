package sandbox

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// testReporter returns the logbook-reporter executable newSpec's restricted commands run under; a Spec without one runs under the test binary itself, as a worker without logbook-reporter beside it does
// (sandboxtest.TestReporter).
func testReporter(t testing.TB) string {
	t.Helper()
	return sandboxtest.TestReporter(t)
}

// TestMain runs the tests with -test.parallel at four times GOMAXPROCS
// (twice under -race; sandboxtest.SetParallel) unless the command line
// sets it: each parallel test starts its own processes, boundaries and
// cgroups and mostly waits on them, so GOMAXPROCS of them at a time
// leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(4)
	code := m.Run()
	sandboxtest.RemoveBuilt()
	os.Exit(code)
}
