// Package sandboxtest holds helpers that tests of several packages use to
// look at real processes. It is imported by tests only.
package sandboxtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessesWith returns the pids of this host's live processes whose
// command line (arguments joined by spaces, from /proc/<pid>/cmdline)
// contains token. A process that ends while it is read is left out; an
// unreadable /proc gives none.
func ProcessesWith(token string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(token)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(n))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
