// Command logbook-hook records one Claude Code hook payload read from
// stdin, as `logbook hook claude` does, in a binary small enough to start
// in a few milliseconds: Claude Code runs it for every hook event, in the
// agent's path. Wire it as `logbook-hook claude` (optionally `--data DIR
// claude`); cases it does not handle itself it hands to `logbook hook
// claude`, found beside it or on $PATH.
package main

import (
	"os"

	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
)

func main() {
	os.Exit(hookfast.Main(os.Args[1:], os.Stdin, os.Stderr, ""))
}
