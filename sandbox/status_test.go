package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
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

// A command cannot forge how it ended, under either reporter (the small
// one, or the worker's own executable in its place): it holds no
// descriptor but 0–2, cannot reach its parent's, the reporter's, through
// /proc, nor does bubblewrap's process hold the report pipe; and a
// reporter it kills or stops leaves a command killed by SIGKILL, not the
// exit it then asks for.
func TestResult_NotForged(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Each write in a subshell of its own: a pipe with no reader ends
	// only that one (SIGPIPE).
	forge := `for fd in 3 4 5 6 7 8 9; do (echo "status 0" >&$fd) >/dev/null 2>&1; done
for f in /proc/$PPID/fd/* /proc/1/fd/*; do case $f in */[012]) continue; esac; (echo "status 0" >"$f") >/dev/null 2>&1; done
echo fds: $(ls /proc/self/fd)
echo "reach: [$(readlink /proc/$PPID/fd/6 2>/dev/null)]"
`
	for _, rep := range []struct{ name, path string }{{"logbook-reporter", testReporter(t)}, {"own executable", self}} {
		for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
			t.Run(rep.name+"/"+string(m), func(t *testing.T) {
				t.Parallel()
				spec := func(script string) Spec {
					s := newSpec(t, m, false, "sh", "-c", forge+script)
					s.Reporter = rep.path
					return s
				}
				res, r := run(t, spec("kill -9 $$"))
				if res.ExitCode != 137 || res.Signal != "SIGKILL" {
					t.Errorf("forged status: result = %+v, want killed by SIGKILL (stderr %q)", res, r.text(Stderr))
				}
				// ls's own directory descriptor is 3.
				if out := r.text(Stdout); !strings.Contains(out, "fds: 0 1 2 3\n") || !strings.Contains(out, "reach: []\n") {
					t.Errorf("stdout = %q, want only descriptors 0-2 open in the command, and none of its parent's", out)
				}
				// The reporter is the command's parent: a forged report
				// followed by its death must not be read as the report.
				res, r = run(t, spec("kill -9 $PPID; sleep 1; exit 7"))
				if res.ExitCode != 137 || res.Signal != "SIGKILL" {
					t.Errorf("reporter killed: result = %+v, want killed by SIGKILL (stderr %q)", res, r.text(Stderr))
				}
				// Signals a stop or a terminal sends the group are
				// ignored by the reporter; the command's own exit is
				// reported.
				res, r = run(t, spec("kill -TERM $PPID; kill -INT $PPID; kill -HUP $PPID; kill -QUIT $PPID; exit 7"))
				if res.ExitCode != 7 || res.Signal != "" {
					t.Errorf("reporter signalled: result = %+v, want exit 7 (stderr %q)", res, r.text(Stderr))
				}
			})
		}
	}
}

// The worker's own executable reports as the small reporter does, when
// no logbook-reporter is beside it: this test binary, which imports the
// package, stands in for it.
func TestResult_OwnExecutableReports(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
		for _, c := range []struct {
			script string
			code   int
			signal string
		}{{"kill -9 $$", 137, "SIGKILL"}, {"exit 137", 137, ""}, {"exit 3", 3, ""}} {
			s := newSpec(t, m, false, "sh", "-c", c.script)
			s.Reporter = self
			res, r := run(t, s)
			if res.ExitCode != c.code || res.Signal != c.signal {
				t.Errorf("%s: %q: result = %+v, want code %d signal %q (stderr %q)", m, c.script, res, c.code, c.signal, r.text(Stderr))
			}
		}
	}
}

// FindReporter takes a named reporter only if it is an executable file;
// else Start fails before running anything. With none named it finds
// logbook-reporter beside the running executable, or falls back on that
// executable and says what is missing.
func TestFindReporter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "absent"), dir, plain} {
		if p, err := FindReporter(bad); err == nil || p != "" {
			t.Errorf("FindReporter(%q) = %q, %v; want an error", bad, p, err)
		}
	}
	if p, err := FindReporter(testReporter(t)); err != nil || p != testReporter(t) {
		t.Errorf("FindReporter(%q) = %q, %v; want it", testReporter(t), p, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	beside := filepath.Join(filepath.Dir(self), ReporterName)
	p, err := FindReporter("")
	if _, serr := os.Stat(beside); serr == nil {
		if p != beside || err != nil {
			t.Errorf(`FindReporter("") = %q, %v; want %s`, p, err, beside)
		}
	} else if onPath, lerr := exec.LookPath(ReporterName); lerr == nil {
		// Installed where a serve started with go run finds it.
		if abs, _ := filepath.Abs(onPath); p != abs || err != nil {
			t.Errorf(`FindReporter("") = %q, %v; want %s, on PATH`, p, err, abs)
		}
	} else if p != self || err == nil || !strings.Contains(err.Error(), "go install ./cmd/logbook-reporter") {
		t.Errorf(`FindReporter("") = %q, %v; want %s and an error saying how to install logbook-reporter`, p, err, self)
	}
	s := newSpec(t, WorkspaceWrite, false, "true")
	s.Reporter = plain
	if p, err := Start(t.Context(), s, nil); err == nil {
		p.Stop()
		_, _ = p.Wait()
		t.Errorf("Start with Reporter %s: no error", plain)
	}
}
