package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/logbook-dev/logbook/sandbox/reporter"
)

// A restricted command does not run as bubblewrap's first process: bwrap
// reports a command killed by signal N as exit status 128+N, the same as
// one that called exit(128+N). The reporter runs there instead, bound
// read-only at reporterPath: it runs the command as its child and
// reports the child's wait status on reportFD, a pipe the worker reads
// and the command cannot reach (see package reporter). Its executable is
// Spec.Reporter, by default ReporterName beside the worker's own
// executable, else the worker's executable itself, whose init below runs
// the reporter in its place.

// ReporterName is the file name of the reporter's own small executable
// (cmd/logbook-reporter), looked for beside the worker's executable.
const ReporterName = "logbook-reporter"

// reporterTasks is how many tasks beyond Limits.Procs a restricted
// command's process limit allows, for the reporter's threads (the Go
// runtime's, 7 or 8 of them at most): the command keeps its own Procs.
// A reporter that cannot get a thread it needs dies, and the boundary
// with it.
const reporterTasks = 16

// reporterPath is where the reporter's executable is bound in the
// boundary, and the argv[0] it runs as.
const reporterPath = reporter.Path

// init runs the reporter when this process is one (reporter.InBoundary:
// the worker's own executable bound at reporterPath, for want of
// ReporterName beside it), and never returns then. It is the package's
// only init: the reporter must run in whatever executable imports the
// package (the worker, a test binary) before its main does.
func init() {
	if reporter.InBoundary() {
		os.Exit(reporter.Run(os.Args[1:]))
	}
}

// FindReporter returns the executable restricted commands run under as
// their reporter. A path that is not "" is that executable (made
// absolute), and an error if it is not an executable regular file. Else it is
// ReporterName beside the running executable (os.Executable's
// directory), else ReporterName on PATH (where `go install` puts it for
// a serve started with `go run`); when neither is an executable regular
// file, it is the running executable itself, which runs the reporter too (from
// this package's init) but starts the slower for its size, and the error
// says what is missing and how to install it. It returns "" only with an
// error, when the running executable is not known either.
func FindReporter(path string) (string, error) {
	if path != "" {
		abs, err := filepath.Abs(path)
		if err == nil {
			err = checkExecutable(abs)
		}
		if err != nil {
			return "", fmt.Errorf("sandbox: reporter %s: %w", path, err)
		}
		return abs, nil
	}
	d := defaultReporter()
	return d.path, d.err
}

// defaultReporter is FindReporter(""), looked for once a process.
var defaultReporter = sync.OnceValue(func() (d struct {
	path string
	err  error
}) {
	self, err := os.Executable()
	if err != nil {
		d.err = fmt.Errorf("sandbox: reporter: the running executable: %w", err)
		return d
	}
	if d.path, err = ReporterBeside(self); err != nil {
		// `go run` builds into a directory of its own: the installed
		// one, on PATH, reports as well.
		if p, perr := exec.LookPath(ReporterName); perr == nil {
			if abs, aerr := filepath.Abs(p); aerr == nil && checkExecutable(abs) == nil {
				d.path = abs
				return d
			}
		}
		d.path = self
		d.err = fmt.Errorf("sandbox: reporter: %w: restricted commands run under %s instead, which starts slower (go install ./cmd/%s from Logbook's clone puts it beside an installed %s, and on PATH once $(go env GOPATH)/bin is there, where a serve started with go run finds it; then start serve again)",
			err, self, ReporterName, filepath.Base(self))
	}
	return d
})

// ReporterBeside returns the path of ReporterName in the directory of
// the executable exe, or an error if that is not an executable regular
// file: the reporter FindReporter takes for a worker running exe.
func ReporterBeside(exe string) (string, error) {
	beside := filepath.Join(filepath.Dir(exe), ReporterName)
	if err := checkExecutable(beside); err != nil {
		return "", err
	}
	return beside, nil
}

// checkExecutable returns an error if path is not a regular file
// executable by someone.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s: not executable", path)
	}
	return nil
}
