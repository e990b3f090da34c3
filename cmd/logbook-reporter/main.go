// Command logbook-reporter is the reporter a restricted command runs
// under (see sandbox/reporter): bubblewrap starts it as the boundary's
// first process, bound read-only at /.logbook-reporter, and it runs the
// command and tells the worker how it ended, the signal that killed it
// included. It is a binary of its own, small enough to start in about a
// millisecond, because it lies on every restricted command's path; the
// worker finds it beside its own executable (`go install
// ./cmd/logbook-reporter` puts it beside logbook), and without it runs
// its own, larger executable as the reporter. Run anywhere but there, it
// says so and exits 2.
package main

import (
	"os"

	"github.com/logbook-dev/logbook/sandbox/reporter"
)

func main() {
	if !reporter.InBoundary() {
		_, _ = os.Stderr.WriteString("logbook-reporter: runs only as the first process of a restricted command's sandbox, started by a Logbook worker\n")
		os.Exit(2)
	}
	os.Exit(reporter.Run(os.Args[1:]))
}
