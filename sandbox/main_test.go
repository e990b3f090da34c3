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

func TestMain(m *testing.M) {
	code := m.Run()
	sandboxtest.RemoveBuilt()
	os.Exit(code)
}
