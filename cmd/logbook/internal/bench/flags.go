package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Check returns why c, as its flags gave it, cannot run: a group of Only
// that is not one of Groups, or ScaleSessions not 1 or more in
// increasing order. Its message names the flag.
func (c Config) Check() error {
	for _, o := range c.Only {
		if !slices.Contains(Groups, o) {
			return fmt.Errorf("--only %q: no such group (want append, read, import, hook, command, signing, scale, audit or cluster)", o)
		}
	}
	// A size given is 1 or more (0 is the default's value, so one given
	// as 0 is a mistake, not a request for the default).
	for i, n := range c.ScaleSessions {
		if n < 1 || i > 0 && n <= c.ScaleSessions[i-1] {
			return fmt.Errorf("--scale-sessions %s: want sizes of 1 or more in increasing order, such as 1000,10000", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.ScaleSessions)), ","), "[]"))
		}
	}
	return nil
}

// ParseFsync returns the durability modes names ("always", "interval")
// name, in order; an error names the first that is neither.
func ParseFsync(names []string) ([]natslog.Fsync, error) {
	var out []natslog.Fsync
	for _, f := range names {
		switch f {
		case "always":
			out = append(out, natslog.FsyncAlways)
		case "interval":
			out = append(out, natslog.FsyncInterval)
		default:
			return nil, fmt.Errorf("--fsync %q: want always or interval", f)
		}
	}
	return out, nil
}

// HookExe finds the logbook-hook binary the hook row starts: beside exe,
// else on $PATH; "" when there is none.
func HookExe(exe string) string { return besideExe(exe, "logbook-hook") }

// ExecExe finds the logbook-exec binary the command rows start: beside
// exe, else on $PATH; "" when there is none.
func ExecExe(exe string) string { return besideExe(exe, "logbook-exec") }

// besideExe finds the binary name beside exe, else on $PATH; "" when
// there is none.
func besideExe(exe, name string) string {
	if p := filepath.Join(filepath.Dir(exe), name); p != exe {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	p, _ := exec.LookPath(name)
	return p
}
