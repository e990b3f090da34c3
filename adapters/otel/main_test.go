package otel_test

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: each test has its own log and receiver, and
// the slow ones mostly wait (the exporter's on its retries' backoff, the
// usage tests on their log's appends), so GOMAXPROCS of them at a time
// leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(2)
	os.Exit(m.Run())
}
