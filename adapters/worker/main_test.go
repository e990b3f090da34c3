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

func TestMain(m *testing.M) {
	code := m.Run()
	sandboxtest.RemoveBuilt()
	os.Exit(code)
}
