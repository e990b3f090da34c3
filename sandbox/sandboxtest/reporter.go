package sandboxtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// the module), else one it builds into dir with `go build` (run inside
// the module: a test's own directory). It sets $LOGBOOK_TEST_REPORTER to
// the path. A failed build's error carries go's output.
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
		out, err := exec.Command("go", "build", "-o", path, "github.com/logbook-dev/logbook/cmd/logbook-reporter").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build cmd/logbook-reporter into %s: %v: %s", dir, err, bytes.TrimSpace(out))
		}
	}
	if err := os.Setenv(ReporterEnv, path); err != nil {
		return "", fmt.Errorf("reporter %s: %w", path, err)
	}
	return path, nil
}
