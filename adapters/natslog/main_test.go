package natslog

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: the parallel tests here (the roles' refused
// requests, each waiting out its 500 ms; the full-disk stores, waiting
// out failed appends; the contended group commit, waiting on fsyncs)
// mostly wait, so GOMAXPROCS of them at a time leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(2)
	os.Exit(m.Run())
}
