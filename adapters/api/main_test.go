package api

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestMain runs the tests with -test.parallel at twice GOMAXPROCS unless
// the command line sets it: the parallel tests here (answers past the
// size caps, heartbeats, a client gone, the intake's journal) each have
// their own server and mostly wait, on timers and fsyncs, so GOMAXPROCS
// of them at a time leaves the CPUs idle.
func TestMain(m *testing.M) {
	sandboxtest.SetParallel(2)
	os.Exit(m.Run())
}
