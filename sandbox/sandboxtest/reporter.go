package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// ReporterEnv names the variable through which a test binary hands the
// reporter Reporter found or built to the processes it starts (a test
// binary run again as a helper), which then take that one rather than
// build their own.
const ReporterEnv = "LOGBOOK_TEST_REPORTER"

// Reporter returns the path of a logbook-reporter executable
// (cmd/logbook-reporter) for restricted commands' Spec.Reporter: the one
// $LOGBOOK_TEST_REPORTER names, else one beside the running test binary
// (where CI builds it for a test binary it runs as another user, outside
// the module), else one it builds into dir with Build (run inside the
// module: a test's own directory). It sets $LOGBOOK_TEST_REPORTER to the
// path. A failed build's error carries go's output.
func Reporter(dir string) (string, error) {
	if p := os.Getenv(ReporterEnv); p != "" {
		return p, nil
	}
	path := ""
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "logbook-reporter")
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			path = beside
		}
	}
	if path == "" {
		path = filepath.Join(dir, "logbook-reporter")
		if err := Build(context.Background(), "github.com/logbook-dev/logbook/cmd/logbook-reporter", path); err != nil {
			return "", err
		}
	}
	if err := os.Setenv(ReporterEnv, path); err != nil {
		return "", fmt.Errorf("reporter %s: %w", path, err)
	}
	return path, nil
}

// built is Reporter's answer for the test binary, asked once, on first
// use (a test binary run again as a helper builds none unless it runs a
// restricted command); builtDir is the directory it may have built into,
// which RemoveBuilt removes.
var (
	builtDir string
	built    = sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "logbook-test-reporter-")
		if err != nil {
			return "", err
		}
		builtDir = dir
		return Reporter(dir)
	})
)

// TestReporter returns the logbook-reporter executable a test's
// restricted commands run under (Spec.Reporter, worker Config.Reporter),
// found or built once per test binary (Reporter); it fails t if there is
// none. Call RemoveBuilt from TestMain once the tests have run.
func TestReporter(t testing.TB) string {
	t.Helper()
	p, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// RemoveBuilt removes what TestReporter built, if anything.
func RemoveBuilt() {
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}
