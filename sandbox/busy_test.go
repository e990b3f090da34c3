package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/reporter"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// A program open for writing when Start runs it is refused by the
// kernel as "text file busy" (ETXTBSY). What holds a script just written
// is most often a child its writer forked meanwhile, until that child's
// exec: a moment. Start tries again and runs it, with a "#!" or without
// (then under /bin/sh). Here the test holds the script open itself and
// lets go of it once the first try was refused, so the refusal is
// certain, not a matter of timing.
func TestStart_TextFileBusy(t *testing.T) {
	// Not parallel: it watches Start's tries through startTry.
	for _, tc := range []struct{ name, body string }{
		{"Shebang", "#!/bin/sh\necho busy-ran \"$1\"; exit 7\n"},
		{"NoShebang", "echo busy-ran \"$1\"; exit 7\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpec(t, FullAccess, false, "lb-plain-script", "arg")
			script := filepath.Join(plainScriptInPath(t, &s, tc.body), "lb-plain-script")
			w, err := os.OpenFile(script, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var tries []error
			startTry = func(cmd *exec.Cmd) error {
				err := startUnlocked(cmd)
				tries = append(tries, err)
				w.Close() // the forked child reached its exec
				return err
			}
			defer func() { startTry = startUnlocked }()
			res, r := run(t, s)
			if len(tries) < 2 || !errors.Is(tries[0], syscall.ETXTBSY) {
				t.Errorf("Start's tries: %v; want the first refused as text file busy", tries)
			}
			if out := r.text(Stdout) + r.text(Stderr); res.ExitCode != 7 || !strings.Contains(out, "busy-ran arg") {
				t.Errorf("Start: exit %d, %q; want the script run, exit 7", res.ExitCode, out)
			}
		})
	}
}

// A program held open for writing longer than reporter.BusyWait is
// refused with the kernel's error, once Start has tried for that long.
func TestStart_TextFileBusyTooLong(t *testing.T) {
	t.Parallel()
	s := newSpec(t, FullAccess, false, "lb-plain-script")
	script := filepath.Join(plainScriptInPath(t, &s, "#!/bin/sh\necho ran\n"), "lb-plain-script")
	w, err := os.OpenFile(script, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	began := time.Now()
	p, err := Start(t.Context(), s, nil)
	if err == nil {
		p.Wait()
	}
	if took := time.Since(began); !errors.Is(err, syscall.ETXTBSY) || took < reporter.BusyWait {
		t.Errorf("Start of a script held open for writing: %v after %s; want text file busy after %s", err, took, reporter.BusyWait)
	}
}

// The package's parallel tests in small: scripts this process writes
// (os.WriteFile: open, write, close) and runs at once, while other
// goroutines fork. A fork while a script is open for writing gives the
// child its descriptor until the child's exec; each script still runs.
func TestStart_ScriptWrittenWhileForking(t *testing.T) {
	t.Parallel()
	sandboxtest.ForkAlongside(t, 4)
	dir := t.TempDir()
	for i := range 100 {
		script := filepath.Join(dir, fmt.Sprintf("script-%d", i))
		body := fmt.Sprintf("echo ran-%d\n", i)
		if i%2 == 0 {
			body = "#!/bin/sh\n" + body
		}
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		res, r := run(t, newSpec(t, FullAccess, false, script))
		if want := fmt.Sprintf("ran-%d\n", i); res.ExitCode != 0 || r.text(Stdout) != want {
			t.Fatalf("script %d: exit %d, stdout %q, stderr %q; want %q", i, res.ExitCode, r.text(Stdout), r.text(Stderr), want)
		}
	}
}
