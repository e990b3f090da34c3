package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testGrace is a short Grace so that stop tests stay quick.
const testGrace = 300 * time.Millisecond

var allModes = []Mode{FullAccess, WorkspaceWrite, ReadOnly}

// inEachMode runs f as a parallel subtest, named after the mode, in each
// of allModes.
func inEachMode(t *testing.T, f func(t *testing.T, m Mode)) {
	for _, m := range allModes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

// eachTTY runs f as a parallel subtest without a terminal and with one,
// named "tty=<false|true>".
func eachTTY(t *testing.T, f func(t *testing.T, tty bool)) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			t.Parallel()
			f(t, tty)
		})
	}
}

// inEachModeTTY runs f as a parallel subtest in each of allModes, without
// a terminal and with one, named "<mode>/tty=<false|true>".
func inEachModeTTY(t *testing.T, f func(t *testing.T, m Mode, tty bool)) {
	for _, m := range allModes {
		for _, tty := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tty=%v", m, tty), func(t *testing.T) {
				t.Parallel()
				f(t, m, tty)
			})
		}
	}
}

// requireBwrap skips restricted-mode tests on machines without bubblewrap.
// CI installs it, so there they always run.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed, so restricted modes cannot be tested: apt-get install bubblewrap")
	}
}

func testEnv() []string { return []string{"PATH=/usr/bin:/bin", "LC_ALL=C"} }

// newSpec returns a Spec for argv in a fresh workspace; a restricted
// one runs under the logbook-reporter testReporter built.
func newSpec(t *testing.T, mode Mode, tty bool, argv ...string) Spec {
	t.Helper()
	rep := ""
	if mode.restricted() {
		requireBwrap(t)
		rep = testReporter(t)
	}
	return Spec{Argv: argv, Env: testEnv(), Workspace: t.TempDir(), Mode: mode, TTY: tty, Grace: testGrace, Reporter: rep}
}

// recorder collects what emit receives. emit runs on the Process's emit
// goroutine; the test reads the fields only after Wait has returned, or
// through seen.
type recorder struct {
	chunks  []Chunk
	waitFor string        // if set, seen is closed once the output contains it
	seen    chan struct{} // see waitFor
	all     []byte        // every byte, all streams, while waitFor is pending
}

func newRecorder(waitFor string) *recorder {
	return &recorder{waitFor: waitFor, seen: make(chan struct{})}
}

func (r *recorder) emit(c Chunk) {
	r.chunks = append(r.chunks, c)
	if r.waitFor != "" {
		r.all = append(r.all, c.Data...)
		if bytes.Contains(r.all, []byte(r.waitFor)) {
			r.waitFor, r.all = "", nil
			close(r.seen)
		}
	}
}

// awaitOutput waits until the output contains r.waitFor.
func (r *recorder) awaitOutput(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("no %q in the output after 20s", what)
	}
}

func (r *recorder) text(s Stream) string {
	var b strings.Builder
	for _, c := range r.chunks {
		if c.Stream == s {
			b.Write(c.Data)
		}
	}
	return b.String()
}

// start starts s and stops the process when the test ends.
func start(t *testing.T, s Spec, r *recorder) *Process {
	t.Helper()
	p, err := Start(t.Context(), s, r.emit)
	if err != nil {
		t.Fatalf("Start(%q): %v", s.Argv, err)
	}
	t.Cleanup(func() {
		p.Stop()
		p.Wait()
	})
	return p
}

// run starts s and waits for it.
func run(t *testing.T, s Spec) (Result, *recorder) {
	t.Helper()
	r := newRecorder("")
	res, err := start(t, s, r).Wait()
	if err != nil {
		t.Fatalf("Wait(%q): %v", s.Argv, err)
	}
	return res, r
}

// uniqueSleep returns a sleep duration argument no other process uses, so
// that the process can be found in /proc.
func uniqueSleep() string {
	return fmt.Sprintf("%d.%09d", 600+rand.IntN(300), rand.IntN(1e9))
}

func TestParseMode(t *testing.T) {
	for _, m := range allModes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, nil", m, got, err, m)
		}
	}
	for _, s := range []string{"", "auto", "READ_ONLY", "full-access"} {
		if _, err := ParseMode(s); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseMode(%q) error = %v, want ErrInvalidSpec", s, err)
		}
	}
}

func TestStart_Echo(t *testing.T) {
	t.Parallel()
	for _, m := range allModes {
		t.Run(string(m)+"/tty", func(t *testing.T) {
			t.Parallel()
			res, r := run(t, newSpec(t, m, true, "echo", "hello"))
			if got, want := r.text(PTY), "hello\r\n"; got != want {
				t.Errorf("pty output = %q, want %q", got, want)
			}
			if res.ExitCode != 0 || res.Signal != "" || res.Stopped || res.Lingering {
				t.Errorf("result = %+v, want a plain exit 0", res)
			}
		})
		t.Run(string(m)+"/pipes", func(t *testing.T) {
			t.Parallel()
			res, r := run(t, newSpec(t, m, false, "sh", "-c", "echo out; echo err >&2"))
			if got, want := r.text(Stdout), "out\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			if got, want := r.text(Stderr), "err\n"; got != want {
				t.Errorf("stderr = %q, want %q", got, want)
			}
			if res.ExitCode != 0 {
				t.Errorf("ExitCode = %d, want 0", res.ExitCode)
			}
		})
	}
}

func TestStart_TerminalSize(t *testing.T) {
	t.Parallel()
	inEachMode(t, func(t *testing.T, m Mode) {
		_, r := run(t, newSpec(t, m, true, "sh", "-c", `stty size; echo "TERM=$TERM"`))
		if got, want := r.text(PTY), "24 80\r\nTERM=dumb\r\n"; got != want {
			t.Errorf("output = %q, want %q", got, want)
		}
	})
}

func TestStart_Env(t *testing.T) {
	t.Parallel()
	inEachModeTTY(t, func(t *testing.T, m Mode, tty bool) {
		s := newSpec(t, m, tty, "env")
		s.Env = []string{"PATH=/usr/bin:/bin", "FOO=bar baz", "EMPTY=", "PWD=/somewhere/else", "TERM=xterm-256color"}
		ws, err := filepath.EvalSymlinks(s.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		res, r := run(t, s)
		if res.ExitCode != 0 {
			t.Fatalf("env exited %d", res.ExitCode)
		}
		out := r.text(Stdout)
		if tty {
			out = strings.ReplaceAll(r.text(PTY), "\r\n", "\n")
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		want := []string{"PATH=/usr/bin:/bin", "FOO=bar baz", "EMPTY=", "PWD=" + ws}
		if tty {
			want = append(want, TTYEnv()...)
		} else {
			want = append(want, "TERM=xterm-256color")
		}
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("environment (-want +got):\n%s", diff)
		}
	})
}

func TestStart_Dir(t *testing.T) {
	t.Parallel()
	inEachMode(t, func(t *testing.T, m Mode) {
		s := newSpec(t, m, false, "pwd", "-P")
		if err := os.Mkdir(filepath.Join(s.Workspace, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		s.Dir = "sub"
		ws, _ := filepath.EvalSymlinks(s.Workspace)
		_, r := run(t, s)
		if got, want := r.text(Stdout), filepath.Join(ws, "sub")+"\n"; got != want {
			t.Errorf("pwd = %q, want %q", got, want)
		}
	})
}

func TestStart_ExitCode(t *testing.T) {
	t.Parallel()
	inEachModeTTY(t, func(t *testing.T, m Mode, tty bool) {
		res, _ := run(t, newSpec(t, m, tty, "sh", "-c", "exit 3"))
		if res.ExitCode != 3 || res.Signal != "" || res.Stopped {
			t.Errorf("result = %+v, want ExitCode 3", res)
		}
	})
}

func TestStart_NotFound(t *testing.T) {
	t.Parallel()
	for _, m := range allModes {
		for _, name := range []string{"no-such-command-7d1c", "./no-such-file", "/usr/bin/no-such-command-7d1c"} {
			t.Run(string(m)+"/"+name, func(t *testing.T) {
				t.Parallel()
				p, err := Start(t.Context(), newSpec(t, m, false, name, "arg"), nil)
				if !errors.Is(err, ErrNotFound) {
					if p != nil {
						p.Wait()
					}
					t.Fatalf("Start error = %v, want ErrNotFound", err)
				}
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name the command %q", err, name)
				}
			})
		}
	}
	t.Run("HiddenInsideBoundary", func(t *testing.T) {
		t.Parallel()
		requireBwrap(t)
		// An executable in the host's /tmp, outside the workspace, does not
		// exist inside the boundary's private /tmp.
		dir, err := os.MkdirTemp("/tmp", "sandbox-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		script := filepath.Join(dir, "script")
		if err := sandboxtest.WriteExecutable(script, []byte("#!/bin/sh\necho ran\n")); err != nil {
			t.Fatal(err)
		}
		s := newSpec(t, WorkspaceWrite, false, script)
		if _, err := Start(t.Context(), s, nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "inside the boundary, which hides it") {
			t.Errorf("Start(%s) in workspace_write = %v, want ErrNotFound saying the boundary hides it", script, err)
		}
		// Found through PATH: the file is named, and that the boundary
		// hides it, not only that it is not in PATH.
		named := filepath.Join(dir, "lb-hidden-tool")
		if err := os.Link(script, named); err != nil {
			t.Fatal(err)
		}
		byName := newSpec(t, WorkspaceWrite, false, "lb-hidden-tool")
		byName.Env = append(slices.DeleteFunc(slices.Clone(byName.Env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }), "PATH="+dir+":/usr/bin:/bin")
		if _, err := Start(t.Context(), byName, nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), strconv.Quote(named)+" is, but the boundary hides it") {
			t.Errorf("Start(lb-hidden-tool) through PATH in workspace_write = %v, want ErrNotFound naming %s hidden", err, named)
		}
		s.Mode = FullAccess
		if _, r := run(t, s); r.text(Stdout) != "ran\n" {
			t.Errorf("Start(%s) in full_access: stdout %q, want %q", script, r.text(Stdout), "ran\n")
		}
	})
	t.Run("NotInCommandPATH", func(t *testing.T) {
		t.Parallel()
		s := newSpec(t, FullAccess, false, "sh", "-c", "true")
		s.Env = []string{"PATH=" + t.TempDir()}
		if _, err := Start(t.Context(), s, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Start error = %v, want ErrNotFound: the worker's PATH must not be used", err)
		}
	})
}

func TestStart_InvalidSpec(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	outside := t.TempDir()
	tests := []struct {
		name   string
		modify func(s *Spec)
	}{
		{"EmptyArgv", func(s *Spec) { s.Argv = nil }},
		{"EmptyArgv0", func(s *Spec) { s.Argv[0] = "" }},
		{"RelativeWorkspace", func(s *Spec) { s.Workspace = "ws" }},
		{"MissingWorkspace", func(s *Spec) { s.Workspace = filepath.Join(s.Workspace, "missing") }},
		{"UnknownMode", func(s *Spec) { s.Mode = "auto" }},
		{"ZeroMode", func(s *Spec) { s.Mode = "" }},
		{"NegativeGrace", func(s *Spec) { s.Grace = -time.Second }},
		{"DirOutsideWorkspace", func(s *Spec) { s.Dir = outside }},
		{"DirDotDot", func(s *Spec) {
			rel, err := filepath.Rel(s.Workspace, outside)
			if err != nil || !strings.HasPrefix(rel, "..") {
				t.Fatalf("Rel(%s, %s) = %q, %v", s.Workspace, outside, rel, err)
			}
			s.Dir = rel
		}},
		{"DirSymlinkOutside", func(s *Spec) {
			if err := os.Symlink(outside, filepath.Join(s.Workspace, "link")); err != nil {
				t.Fatal(err)
			}
			s.Dir = "link"
		}},
		{"DirMissing", func(s *Spec) { s.Dir = "missing" }},
		{"WorkspaceRoot", func(s *Spec) { s.Workspace = "/" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(outside, tt.name)
			s := newSpec(t, WorkspaceWrite, false, "touch", marker)
			s.Dir = s.Workspace
			tt.modify(&s)
			p, err := Start(t.Context(), s, nil)
			if p != nil {
				p.Wait()
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("Start error = %v, want ErrInvalidSpec", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran despite the invalid spec")
			}
		})
	}
}

func TestStart_RefusedWithoutBwrap(t *testing.T) {
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			s := Spec{Argv: []string{"touch", marker}, Env: testEnv(), Workspace: t.TempDir(), Mode: m, Bwrap: "/nonexistent/bwrap"}
			p, err := Start(t.Context(), s, nil)
			if p != nil {
				p.Wait()
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Start error = %v, want ErrRefused", err)
			}
			if !strings.Contains(err.Error(), "full_access") {
				t.Errorf("error %q does not say what to do", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran without a boundary")
			}
		})
	}
	t.Run("NotInPATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		s := Spec{Argv: []string{"/bin/true"}, Env: testEnv(), Workspace: t.TempDir(), Mode: ReadOnly}
		_, err := Start(t.Context(), s, nil)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("Start error = %v, want ErrRefused", err)
		}
		want := "bubblewrap not found in PATH: install the bubblewrap package, or run with mode full_access"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q, want it to contain %q", err, want)
		}
	})
}

func TestAvailable(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	if err := Available(t.Context(), ""); err != nil {
		t.Errorf("Available(\"\") = %v, want nil", err)
	}
	if err := Available(t.Context(), "/nonexistent/bwrap"); !errors.Is(err, ErrRefused) {
		t.Errorf("Available(/nonexistent/bwrap) = %v, want ErrRefused", err)
	}
	notBwrap := "/bin/false" // runs, but builds no boundary
	if err := Available(t.Context(), notBwrap); !errors.Is(err, ErrRefused) {
		t.Errorf("Available(%s) = %v, want ErrRefused", notBwrap, err)
	}
}

// A script whose interpreter does not exist passes the lookup of argv[0]
// but cannot be executed: FullAccess fails at Start, and in a restricted
// mode bubblewrap exits before running anything, which Wait reports.
func TestStart_ExecFails(t *testing.T) {
	t.Parallel()
	inEachMode(t, func(t *testing.T, m Mode) {
		s := newSpec(t, m, false, "./script")
		if err := os.WriteFile(filepath.Join(s.Workspace, "script"), []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		r := newRecorder("")
		p, err := Start(t.Context(), s, r.emit)
		if !m.restricted() {
			if err == nil {
				p.Wait()
				t.Fatal("Start succeeded, want an exec error")
			}
			return
		}
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		res, err := p.Wait()
		if !errors.Is(err, ErrRefused) {
			t.Errorf("Wait = %+v, %v; want ErrRefused", res, err)
		}
		if out := r.text(Stderr); !strings.Contains(out, "bwrap") {
			t.Errorf("stderr = %q, want bubblewrap's message", out)
		}
	})
}

func TestOutput_LargeWithoutNewline(t *testing.T) {
	t.Parallel()
	const size = 10 << 20
	for _, m := range []Mode{FullAccess, WorkspaceWrite} {
		for _, tty := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tty=%v", m, tty), func(t *testing.T) {
				t.Parallel()
				res, r := run(t, newSpec(t, m, tty, "sh", "-c", `head -c 10485760 /dev/zero | tr '\0' a`))
				if res.ExitCode != 0 {
					t.Fatalf("exit code %d", res.ExitCode)
				}
				stream := Stdout
				if tty {
					stream = PTY
				}
				var next int64
				for i, c := range r.chunks {
					if c.Stream != stream {
						t.Fatalf("chunk %d on stream %q, want only %q", i, c.Stream, stream)
					}
					if len(c.Data) == 0 || len(c.Data) > MaxChunk {
						t.Fatalf("chunk %d has %d bytes, want 1 to %d", i, len(c.Data), MaxChunk)
					}
					if c.Offset != next {
						t.Fatalf("chunk %d at offset %d, want %d", i, c.Offset, next)
					}
					if j := bytes.IndexFunc(c.Data, func(r rune) bool { return r != 'a' }); j >= 0 {
						t.Fatalf("chunk %d byte %d = %q, want 'a'", i, j, c.Data[j])
					}
					next += int64(len(c.Data))
				}
				if next != size {
					t.Errorf("got %d bytes, want %d", next, size)
				}
				t.Logf("%d chunks", len(r.chunks))
			})
		}
	}
}

func TestOutput_Binary(t *testing.T) {
	t.Parallel()
	want := make([]byte, 0, 3*256)
	for range 3 {
		for b := range 256 {
			want = append(want, byte(b))
		}
	}
	inEachMode(t, func(t *testing.T, m Mode) {
		s := newSpec(t, m, false, "cat", "bytes")
		if err := os.WriteFile(filepath.Join(s.Workspace, "bytes"), want, 0o644); err != nil {
			t.Fatal(err)
		}
		_, r := run(t, s)
		if got := []byte(r.text(Stdout)); !bytes.Equal(got, want) {
			t.Errorf("stdout differs from the file: got %d bytes %q…", len(got), got[:min(len(got), 32)])
		}
	})
}

// A slow trickle must arrive while the command still runs, not only at its
// exit: buffered output is flushed within FlushInterval.
func TestOutput_FlushedWhileRunning(t *testing.T) {
	t.Parallel()
	eachTTY(t, func(t *testing.T, tty bool) {
		r := newRecorder("first")
		p := start(t, newSpec(t, FullAccess, tty, "sh", "-c", "echo first; exec sleep 30"), r)
		r.awaitOutput(t, "first")
		p.Stop()
		if res, err := p.Wait(); err != nil || !res.Stopped {
			t.Errorf("Wait = %+v, %v; want Stopped", res, err)
		}
	})
}

func TestStdin(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{FullAccess, ReadOnly} {
		t.Run(string(m)+"/head", func(t *testing.T) {
			t.Parallel()
			r := newRecorder("")
			p := start(t, newSpec(t, m, false, "head", "-n1"), r)
			if _, err := p.WriteStdin([]byte("hello\nworld\n")); err != nil {
				t.Fatalf("WriteStdin: %v", err)
			}
			res, err := p.Wait()
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Wait = %+v, %v", res, err)
			}
			if got, want := r.text(Stdout), "hello\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			_, err = p.WriteStdin([]byte("late\n"))
			if !errors.Is(err, ErrExited) {
				t.Errorf("WriteStdin after exit = %v, want ErrExited", err)
			}
			if err := p.CloseStdin(); err != nil {
				t.Errorf("CloseStdin after exit = %v, want nil", err)
			}
		})
		t.Run(string(m)+"/cat", func(t *testing.T) {
			t.Parallel()
			r := newRecorder("")
			// The shell outlives cat's end of input, so the write after
			// CloseStdin meets a live process: os.ErrClosed, not ErrExited.
			p := start(t, newSpec(t, m, false, "sh", "-c", "cat; sleep 2"), r)
			for _, s := range []string{"one ", "two ", "three"} {
				if _, err := p.WriteStdin([]byte(s)); err != nil {
					t.Fatalf("WriteStdin: %v", err)
				}
			}
			if err := p.CloseStdin(); err != nil {
				t.Fatalf("CloseStdin: %v", err)
			}
			if err := p.CloseStdin(); err != nil {
				t.Errorf("second CloseStdin = %v, want nil", err)
			}
			if _, err := p.WriteStdin([]byte("x")); !errors.Is(err, os.ErrClosed) {
				t.Errorf("WriteStdin after CloseStdin = %v, want os.ErrClosed", err)
			}
			if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
				t.Fatalf("Wait = %+v, %v", res, err)
			}
			if got, want := r.text(Stdout), "one two three"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
		})
		t.Run(string(m)+"/tty", func(t *testing.T) {
			t.Parallel()
			r := newRecorder("")
			p := start(t, newSpec(t, m, true, "sh", "-c", `read line; echo "got $line"; cat; echo eof`), r)
			if _, err := p.WriteStdin([]byte("hello\n")); err != nil {
				t.Fatalf("WriteStdin: %v", err)
			}
			if err := p.CloseStdin(); err != nil {
				t.Fatalf("CloseStdin: %v", err)
			}
			if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
				t.Fatalf("Wait = %+v, %v", res, err)
			}
			if out := r.text(PTY); !strings.Contains(out, "got hello\r\n") || !strings.HasSuffix(out, "eof\r\n") {
				t.Errorf("pty output = %q, want the line back and end of input", out)
			}
			if _, err := p.WriteStdin([]byte("late\n")); !errors.Is(err, ErrExited) {
				t.Errorf("WriteStdin after exit = %v, want ErrExited", err)
			}
		})
	}
}

// ignoreTerm prints ready and then ignores SIGTERM; it dies only by SIGKILL.
const ignoreTerm = `trap "" TERM; echo ready; while :; do sleep 0.05; done`

func TestStop_IgnoredTermIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	inEachModeTTY(t, func(t *testing.T, m Mode, tty bool) {
		r := newRecorder("ready")
		p := start(t, newSpec(t, m, tty, "sh", "-c", ignoreTerm), r)
		r.awaitOutput(t, "ready")
		stopped := time.Now()
		p.Stop()
		res, err := p.Wait()
		elapsed := time.Since(stopped)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if !res.Stopped || res.Signal != "SIGKILL" || res.ExitCode != 128+9 {
			t.Errorf("result = %+v, want Stopped by SIGKILL", res)
		}
		if elapsed < testGrace {
			t.Errorf("killed %v after Stop, before the %v grace", elapsed, testGrace)
		}
		t.Logf("killed %v after Stop (grace %v)", elapsed, testGrace)
	})
}

// A command that handles SIGTERM gets to finish, also inside bubblewrap
// (which itself would die of SIGTERM at once).
func TestStop_TermHandled(t *testing.T) {
	t.Parallel()
	inEachMode(t, func(t *testing.T, m Mode) {
		r := newRecorder("ready")
		s := newSpec(t, m, false, "sh", "-c", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
		s.Grace = time.Minute
		p := start(t, s, r)
		r.awaitOutput(t, "ready")
		p.Stop()
		res, err := p.Wait()
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if res.ExitCode != 0 || res.Signal != "" || !res.Stopped {
			t.Errorf("result = %+v, want Stopped with exit 0", res)
		}
		if got, want := r.text(Stdout), "ready\nbye\n"; got != want {
			t.Errorf("stdout = %q, want %q", got, want)
		}
	})
}

func TestStop_Idempotent(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{FullAccess, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			p := start(t, newSpec(t, m, true, "sleep", "60"), newRecorder(""))
			var wg sync.WaitGroup
			for range 5 {
				wg.Go(p.Stop)
			}
			wg.Wait()
			p.Stop()
			res, err := p.Wait()
			if err != nil || !res.Stopped {
				t.Fatalf("Wait = %+v, %v; want Stopped", res, err)
			}
			p.Stop()
			res2, err2 := p.Wait()
			if res2 != res || err2 != err {
				t.Errorf("second Wait = %+v, %v; want %+v, %v", res2, err2, res, err)
			}
		})
	}
}

func TestStop_ContextCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	p, err := Start(ctx, newSpec(t, FullAccess, false, "sleep", "60"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := p.Wait()
	if err != nil || !res.Stopped || res.Signal != "SIGTERM" {
		t.Errorf("Wait = %+v, %v; want Stopped by SIGTERM", res, err)
	}
	if _, err := Start(ctx, newSpec(t, FullAccess, false, "true"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a done ctx = %v, want context.Canceled", err)
	}
}

// A grandchild that leaves the process group with setsid still dies with the
// command in the restricted modes: it is in bubblewrap's PID namespace.
func TestStop_SetsidGrandchildDies(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		for _, tty := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tty=%v", m, tty), func(t *testing.T) {
				t.Parallel()
				token := uniqueSleep()
				r := newRecorder("ready")
				s := newSpec(t, m, tty, "sh", "-c", `setsid sleep "$0" >/dev/null 2>&1 </dev/null & echo ready; exec sleep 60`, token)
				p := start(t, s, r)
				r.awaitOutput(t, "ready")
				waitFor(t, "the setsid grandchild to run", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) > 0 })
				p.Stop()
				if _, err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				waitFor(t, "the setsid grandchild to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
			})
		}
	}
}

// When the command exits by itself, a setsid grandchild dies with it too.
func TestExit_SetsidGrandchildDies(t *testing.T) {
	t.Parallel()
	token := uniqueSleep()
	res, _ := run(t, newSpec(t, WorkspaceWrite, false, "sh", "-c", `mkfifo f; setsid sh -c 'echo >f; exec sleep "$0"' "$0" >/dev/null 2>&1 </dev/null & read x <f`, token))
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d", res.ExitCode)
	}
	waitFor(t, "the setsid grandchild to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
}

// In FullAccess a setsid grandchild that keeps the terminal open escapes
// the process group; Wait must still return, and say so. Where a cgroup
// holds the command's tree, the grandchild is killed with the rest.
func TestWait_LingeringHolder(t *testing.T) {
	t.Parallel()
	eachTTY(t, func(t *testing.T, tty bool) {
		token := uniqueSleep()
		t.Cleanup(func() {
			for _, pid := range sandboxtest.ProcessesWith(token) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		// The fifo makes sh wait until the grandchild has left the group.
		res, r := run(t, newSpec(t, FullAccess, tty, "sh", "-c", `mkfifo f; setsid sh -c 'echo >f; exec sleep "$0"' "$0" & read x <f; echo started`, token))
		if res.Limits.Killable {
			// A cgroup holds the whole tree: the escaped grandchild dies.
			if res.Lingering || res.ExitCode != 0 {
				t.Errorf("result = %+v, want exit 0, not Lingering", res)
			}
			waitFor(t, "the escaped grandchild to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
		} else if !res.Lingering || res.ExitCode != 0 {
			t.Errorf("result = %+v, want exit 0 and Lingering", res)
		}
		if out := r.text(Stdout) + r.text(PTY); !strings.Contains(out, "started") {
			t.Errorf("output = %q, want it to contain the output before the exit", out)
		}
	})
}

// After the leader exits, what is left of its group is killed.
func TestExit_GroupKilled(t *testing.T) {
	t.Parallel()
	token := uniqueSleep()
	res, _ := run(t, newSpec(t, FullAccess, false, "sh", "-c", `nohup sleep "$0" >/dev/null 2>&1 & echo started`, token))
	if res.ExitCode != 0 || res.Lingering {
		t.Errorf("result = %+v, want exit 0", res)
	}
	waitFor(t, "the background job to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
}

// After the leader exits, a job of its session in a process group of
// its own (a job-control shell's) is killed too: the exit's search of
// the tree finds it by its session.
func TestExit_SessionJobKilled(t *testing.T) {
	t.Parallel()
	token := uniqueSleep()
	t.Cleanup(func() { killAll(token) })
	res, _ := run(t, newSpec(t, FullAccess, false, "bash", "-c", `set -m; sleep "$0" >/dev/null 2>&1 & echo started`, token))
	if res.ExitCode != 0 || res.Lingering {
		t.Errorf("result = %+v, want exit 0", res)
	}
	waitFor(t, "the job to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
}

// Spec.Trace is told of each step, in order, once.
func TestStart_Trace(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{FullAccess, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var steps []Step
			var last time.Time
			s := newSpec(t, m, false, "true")
			s.Trace = func(st Step, at time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if at.Before(last) {
					t.Errorf("step %d at %v, before the one before it", st, at)
				}
				steps, last = append(steps, st), at
			}
			run(t, s)
			mu.Lock()
			defer mu.Unlock()
			if want := []Step{StepPrepared, StepForked, StepExitSeen, StepReaped}; !slices.Equal(steps, want) {
				t.Errorf("steps %v, want %v", steps, want)
			}
		})
	}
}

func TestBoundary_WorkspaceWrite(t *testing.T) {
	t.Parallel()
	host := filepath.Join("/etc", "logbook-sandbox-test-"+strconv.Itoa(rand.IntN(1e9)))
	t.Cleanup(func() { os.Remove(host) })
	other := filepath.Join(t.TempDir(), "other") // another workspace, say
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `
		touch inside && echo inside-ok
		touch "$0" 2>/dev/null && echo etc-written
		touch "$1" 2>/dev/null && echo other-written
		echo tmp > /tmp/t && echo tmp-ok
		true`, host, other)
	_, r := run(t, s)
	if got, want := r.text(Stdout), "inside-ok\ntmp-ok\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "inside")); err != nil {
		t.Errorf("file written inside the workspace is missing: %v", err)
	}
	for _, p := range []string{host, other} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written from inside the boundary", p)
		}
	}
}

func TestBoundary_ReadOnly(t *testing.T) {
	t.Parallel()
	name := "logbook-sandbox-test-" + strconv.Itoa(rand.IntN(1e9))
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", name)) })
	s := newSpec(t, ReadOnly, false, "sh", "-c", `
		cat existing
		touch new 2>/dev/null && echo workspace-written
		echo tmp > "/tmp/$0" && cat "/tmp/$0"
		true`, name)
	if err := os.WriteFile(filepath.Join(s.Workspace, "existing"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, r := run(t, s)
	if got, want := r.text(Stdout), "readable\ntmp\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "new")); err == nil {
		t.Errorf("the read-only workspace was written")
	}
	if _, err := os.Stat(filepath.Join("/tmp", name)); err == nil {
		t.Errorf("the sandbox's /tmp is the host's /tmp")
	}
}

// hostListener listens on a loopback port of the host, accepting and
// closing every connection, until the test ends, and returns the port: a
// process that reaches it has the host's network.
func hostListener(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestBoundary_Network(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(hostListener(t))
	inEachMode(t, func(t *testing.T, m Mode) {
		res, r := run(t, newSpec(t, m, false, "bash", "-c", `echo hi > /dev/tcp/127.0.0.1/$0`, port))
		if connected := res.ExitCode == 0; connected != (m == FullAccess) {
			t.Errorf("connect to 127.0.0.1:%s: exit %d (stderr %q); want a connection only in full_access",
				port, res.ExitCode, r.text(Stderr))
		}
	})
}

func TestBoundary_Protected(t *testing.T) {
	t.Parallel()
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `
		for f in .git/config .git/hooks/pre-commit .git/HEAD secrets/key; do
			echo x >> "$f" 2>/dev/null && echo "wrote $f"
		done
		mv .git .git-moved 2>/dev/null && echo "moved .git"
		mv secrets secrets-moved 2>/dev/null && echo "moved secrets"
		git status --short >/dev/null 2>&1 && echo status-ok
		echo x > file && echo file-ok`)
	s.Protected = []string{"secrets", "does-not-exist", "/etc"}
	ws := s.Workspace
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.Mkdir(filepath.Join(ws, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secrets", "key"), []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	s.Env = append(s.Env, "HOME="+ws, "GIT_CONFIG_NOSYSTEM=1")
	_, r := run(t, s)
	if got, want := r.text(Stdout), "status-ok\nfile-ok\n"; got != want {
		t.Errorf("stdout = %q, want %q (stderr %q)", got, want, r.text(Stderr))
	}
	if after, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); !bytes.Equal(after, config) {
		t.Errorf(".git/config changed:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("a hook was created")
	}
}

func TestProtectedPaths(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"gitdirs/wt", "secrets", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A linked worktree: .git is a file naming the git directory.
	if err := os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: gitdirs/wt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secrets", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	got := protectedPaths(ws, []string{"src", "link", "missing", "/etc", "../elsewhere", ws + "/secrets"})
	want := []string{
		filepath.Join(ws, ".git"),
		filepath.Join(ws, "gitdirs/wt"),
		filepath.Join(ws, "secrets"),
		filepath.Join(ws, "src"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("protectedPaths (-want +got):\n%s", diff)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Stop that lands while bubblewrap is still setting the boundary up
// ends the run as stopped, never as refused.
func TestStop_DuringSetup(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			for i := range 15 {
				p := start(t, newSpec(t, m, true, "sleep", "60"), newRecorder(""))
				p.Stop()
				res, err := p.Wait()
				if err != nil || !res.Stopped {
					t.Fatalf("run %d: Wait = %+v, %v; want Stopped and no error", i, res, err)
				}
			}
		})
	}
}
