package sandbox

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestStart_ArgvPastBubblewrapsLimit runs, in every mode, commands whose
// argv bubblewrap would refuse on its command line (it takes at most
// 9000 arguments, its own options included) or that is long in bytes:
// each runs, sees every argument as given (an empty one, spaces and
// newlines included), and holds only its standard descriptors (not the
// one its argv came on).
func TestStart_ArgvPastBubblewrapsLimit(t *testing.T) {
	many := make([]string, 12000)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	many[5] = ""
	many[6] = "two words\nand a line"
	long := []string{strings.Repeat("x", 100<<10), strings.Repeat("y", 60<<10)}
	// The script prints its argument count, a digest of its arguments
	// (each with its length, so that none can move into another) and
	// its shell's descriptors (ls in a process of its own, with no
	// pipeline whose descriptors the shell would hold meanwhile).
	const script = `n=0; for a in "$@"; do printf '%s:%s\n' "${#a}" "$a"; n=$((n+1)); done | sha256sum; echo "$#"; ls /proc/$$/fd`
	want := func(args []string) string {
		var b strings.Builder
		for _, a := range args {
			fmt.Fprintf(&b, "%d:%s\n", len(a), a)
		}
		return b.String()
	}
	for _, mode := range allModes {
		for _, tc := range []struct {
			name string
			args []string
		}{{"Many", many}, {"Long", long}} {
			t.Run(fmt.Sprintf("%s/%s", mode, tc.name), func(t *testing.T) {
				if mode != FullAccess {
					requireBwrap(t)
				}
				t.Parallel()
				argv := append([]string{"sh", "-c", script, "sh"}, tc.args...)
				r := newRecorder("")
				res, err := start(t, newSpec(t, mode, false, argv...), r).Wait()
				if err != nil {
					t.Fatalf("Wait (%d arguments): %v", len(argv), err)
				}
				if res.ExitCode != 0 {
					t.Fatalf("exit %d, stderr %q", res.ExitCode, r.text(Stderr))
				}
				lines := strings.Split(strings.TrimSpace(r.text(Stdout)), "\n")
				if len(lines) < 3 {
					t.Fatalf("stdout %q, stderr %q", r.text(Stdout), r.text(Stderr))
				}
				if got, w := lines[0], fmt.Sprintf("%x  -", sha256.Sum256([]byte(want(tc.args)))); got != w {
					t.Errorf("the arguments' digest: %q, want %q", got, w)
				}
				if lines[1] != strconv.Itoa(len(tc.args)) {
					t.Errorf("the command saw %s arguments, want %d", lines[1], len(tc.args))
				}
				if got := strings.Join(lines[2:], " "); got != "0 1 2" {
					t.Errorf("the command's descriptors: %q, want 0 1 2", got)
				}
			})
		}
	}
}
