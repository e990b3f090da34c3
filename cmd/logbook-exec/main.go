// Command logbook-exec runs a command for a session as `logbook exec`
// does, in a binary small enough to start in a millisecond or two: an
// agent runs hundreds of commands a session. `logbook-exec ARGS…` takes
// exec's arguments (`logbook-exec --session S -- make test`) and has the
// data dir's running serve run them on its exec socket; cases it does
// not handle itself it hands to `logbook exec`, found beside it or on
// $PATH (see cmd/internal/execfast).
package main

import (
	"os"

	"github.com/logbook-dev/logbook/cmd/internal/execfast"
)

func main() {
	os.Exit(execfast.Main(os.Args[1:], os.Stdout, os.Stderr, ""))
}
