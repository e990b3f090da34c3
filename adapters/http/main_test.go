package httpapi

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: the parallel tests (each with its own server,
// log and, for the board's, browser context) mostly wait on the browser's
// page, timers and their servers, so GOMAXPROCS of them at a time leaves
// the CPUs idle. It stops the tests' shared Chromium once they are done.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(2)
	code := m.Run()
	chromium.close()
	os.Exit(code)
}
