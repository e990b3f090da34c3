package sandbox

import (
	"strings"
	"testing"
)

// How a command ended is recorded the same in every mode: a command
// killed by a signal inside the boundary is recorded as killed by it,
// not as exit status 128+N, which a command can give itself.
func TestResult_SignalOrExit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script string
		code         int
		signal       string
	}{
		{"kill -9 $$", "kill -9 $$", 137, "SIGKILL"},
		{"kill -SEGV $$", "kill -SEGV $$", 139, "SIGSEGV"},
		{"kill -TERM $$", "kill -TERM $$", 143, "SIGTERM"},
		{"exit 137", "exit 137", 137, ""},
		{"exit 139", "exit 139", 139, ""},
		{"exit 0", "exit 0", 0, ""},
	}
	inEachModeTTY(t, func(t *testing.T, m Mode, tty bool) {
		for _, c := range cases {
			res, r := run(t, newSpec(t, m, tty, "sh", "-c", c.script))
			if res.ExitCode != c.code || res.Signal != c.signal || res.Stopped {
				t.Errorf("%s: result = %+v, want code %d signal %q (output %q)", c.name, res, c.code, c.signal, r.text(Stdout)+r.text(PTY)+r.text(Stderr))
			}
		}
	})
}

// A command Stop ends with SIGTERM is recorded as killed by SIGTERM.
func TestResult_StoppedByTerm(t *testing.T) {
	t.Parallel()
	inEachModeTTY(t, func(t *testing.T, m Mode, tty bool) {
		r := newRecorder("ready")
		p := start(t, newSpec(t, m, tty, "sh", "-c", "echo ready; exec sleep "+uniqueSleep()), r)
		r.awaitOutput(t, "ready")
		p.Stop()
		res, err := p.Wait()
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if !res.Stopped || res.Signal != "SIGTERM" || res.ExitCode != 128+15 {
			t.Errorf("result = %+v, want Stopped by SIGTERM", res)
		}
	})
}

// A command cannot forge how it ended: it holds no descriptor but 0–2,
// cannot reach its parent's, the reporter's, through /proc, and a
// reporter it kills leaves a command killed by SIGKILL, not the exit it
// then asks for.
func TestResult_NotForged(t *testing.T) {
	t.Parallel()
	forge := `(for fd in 3 4 5 6 7 8 9; do echo "status 0" >&$fd; done
for f in /proc/$PPID/fd/[3-9]; do echo "status 0" >"$f"; done) >/dev/null 2>&1
echo fds: $(ls /proc/self/fd)
`
	for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			res, r := run(t, newSpec(t, m, false, "sh", "-c", forge+"kill -9 $$"))
			if res.ExitCode != 137 || res.Signal != "SIGKILL" {
				t.Errorf("forged status: result = %+v, want killed by SIGKILL (stderr %q)", res, r.text(Stderr))
			}
			// ls's own directory descriptor is 3.
			if out := r.text(Stdout); !strings.Contains(out, "fds: 0 1 2 3\n") {
				t.Errorf("stdout = %q, want only descriptors 0-2 open in the command", out)
			}
			// The reporter is the command's parent: a forged report
			// followed by its death must not be read as the report.
			res, r = run(t, newSpec(t, m, false, "sh", "-c", forge+"kill -9 $PPID; sleep 1; exit 7"))
			if res.ExitCode != 137 || res.Signal != "SIGKILL" {
				t.Errorf("reporter killed: result = %+v, want killed by SIGKILL (stderr %q)", res, r.text(Stderr))
			}
		})
	}
}
