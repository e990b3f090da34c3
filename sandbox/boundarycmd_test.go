package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// BoundaryCommand runs the command in the boundary Start builds, without
// Start's own parts: what it writes in the workspace is there, what it
// writes elsewhere (read_only: the workspace too) is not, and it sees no
// host but the boundary's views. FullAccess has no boundary.
func TestBoundaryCommand(t *testing.T) {
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			s := newSpec(t, m, false, "sh", "-c", `echo in > inside; echo out > /.outside; cat /proc/1/cmdline | tr '\0' ' '; pwd`)
			outside := t.TempDir() // a host directory the boundary does not show
			if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("lb-host-secret"), 0o644); err != nil {
				t.Fatal(err)
			}
			s.Argv[2] += "; cat " + filepath.Join(outside, "secret") + ""
			c, err := BoundaryCommand(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := c.CombinedOutput()
			got := string(out)
			if !strings.Contains(got, "bwrap") || strings.Contains(got, reporterPath) || !strings.Contains(got, s.Workspace) || strings.Contains(got, "lb-host-secret") {
				t.Errorf("BoundaryCommand's command said %q: want bwrap as pid 1 and no reporter, the workspace as its directory, the host's %s unseen", got, outside)
			}
			_, err = os.Stat(filepath.Join(s.Workspace, "inside"))
			if wrote := err == nil; wrote != (m == WorkspaceWrite) {
				t.Errorf("in %s the command wrote its workspace: %v", m, wrote)
			}
			if m == WorkspaceWrite && !strings.Contains(got, "--tmpfs "+filepath.Join(s.Workspace, ".git")) {
				t.Errorf("in %s the boundary keeps no .git missing: %s", m, got)
			}
			if _, err := os.Stat("/.outside"); err == nil {
				t.Errorf("in %s the command wrote the host's /", m)
			}
		})
	}
	if _, err := BoundaryCommand(t.Context(), newSpec(t, FullAccess, false, "true")); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("BoundaryCommand in full_access = %v, want ErrInvalidSpec", err)
	}
}

// A command Start runs under the reporter runs as it runs in bubblewrap
// alone (BoundaryCommand): a script without "#!", found in PATH, runs
// under /bin/sh in both, as execvp(3) runs it.
func TestStart_ScriptWithoutShebangAsBoundary(t *testing.T) {
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			s := newSpec(t, m, false, "lb-plain-script", "arg")
			plainScriptInPath(t, &s, "echo plain-ran \"$1\"\n")
			c, err := BoundaryCommand(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := c.CombinedOutput()
			if err != nil || !strings.Contains(string(alone), "plain-ran arg") {
				t.Fatalf("bubblewrap alone: %v, %q: want the script run", err, alone)
			}
			res, r := run(t, s)
			if out := r.text(Stdout) + r.text(Stderr); res.ExitCode != 0 || !strings.Contains(out, "plain-ran arg") {
				t.Errorf("Start: exit %d, %q; bubblewrap alone ran it (%q)", res.ExitCode, out, alone)
			}
		})
	}
}

// In full_access too a script without "#!" runs under /bin/sh, as
// execvp(3) and the restricted modes run it, with or without a terminal,
// its arguments and exit status its own.
func TestStart_ScriptWithoutShebangFullAccess(t *testing.T) {
	eachTTY(t, func(t *testing.T, tty bool) {
		s := newSpec(t, FullAccess, tty, "lb-plain-script", "arg")
		bin := plainScriptInPath(t, &s, "echo plain-ran \"$0\" \"$1\"; exit 7\n")
		res, r := run(t, s)
		if out := r.text(Stdout) + r.text(Stderr) + r.text(PTY); res.ExitCode != 7 || !strings.Contains(out, "plain-ran "+filepath.Join(bin, "lb-plain-script")+" arg") {
			t.Errorf("Start: exit %d, %q; want the script run under /bin/sh, exit 7", res.ExitCode, out)
		}
	})
}

// plainScriptInPath writes body, a script without "#!", as
// lb-plain-script in a directory of s's workspace put first in s's PATH,
// and returns that directory.
func plainScriptInPath(t *testing.T, s *Spec, body string) string {
	t.Helper()
	bin := filepath.Join(s.Workspace, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sandboxtest.WriteExecutable(filepath.Join(bin, "lb-plain-script"), []byte(body)); err != nil {
		t.Fatal(err)
	}
	for i, kv := range s.Env {
		if strings.HasPrefix(kv, "PATH=") {
			s.Env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return bin
}
