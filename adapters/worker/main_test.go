package worker

import (
	"os"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// reporterDir is where testReporter built logbook-reporter, removed
// when the tests end; "" if it built none.
var reporterDir string

// builtReporter builds logbook-reporter once a test binary, on first
// use: a test binary run again as a helper builds none unless it runs
// a worker.
var builtReporter = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "worker-reporter-")
	if err != nil {
		return "", err
	}
	reporterDir = dir
	return sandboxtest.Reporter(dir)
})

// testReporter returns the logbook-reporter executable the tests'
// workers run restricted commands under (Config.Reporter).
func testReporter(t testing.TB) string {
	t.Helper()
	p, err := builtReporter()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if reporterDir != "" {
		os.RemoveAll(reporterDir)
	}
	os.Exit(code)
}
