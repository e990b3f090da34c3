package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A workspace_write command leaves no trace of the missing protected names
// it was kept from creating: the mount points are removed after the exit.
func TestBoundary_AbsentStaysAbsent(t *testing.T) {
	t.Parallel()
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `mkdir .claude/x 2>/dev/null && echo created; true`)
	res, r := run(t, s)
	if res.ExitCode != 0 || strings.Contains(r.text(Stdout), "created") {
		t.Errorf("exit %d, stdout %q, stderr %q", res.ExitCode, r.text(Stdout), r.text(Stderr))
	}
	des, err := os.ReadDir(s.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		t.Errorf("workspace has %s after the command", de.Name())
	}
}

// What cannot be protected is refused, with the reason, for
// workspace_write; read_only runs it.
func TestBoundary_Unprotectable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(t *testing.T, ws string)
		reason string
	}{
		{"SymlinkedGit", func(t *testing.T, ws string) {
			mustRun(t, "git", "init", "-q", filepath.Join(ws, "real"))
			must(t, os.Symlink("real/.git", filepath.Join(ws, ".git")))
		}, "symbolic link"},
		{"NestedSymlinkedClaude", func(t *testing.T, ws string) {
			must(t, os.MkdirAll(filepath.Join(ws, "a/b"), 0o755))
			must(t, os.Symlink("/nonexistent", filepath.Join(ws, "a/b/.claude")))
		}, "symbolic link"},
		// Hooks git would run from any top-level file.
		{"HooksPathIsTheWorkspace", func(t *testing.T, ws string) {
			mustRun(t, "git", "init", "-q", ws)
			mustRun(t, "git", "-C", ws, "config", "core.hooksPath", ".")
		}, "names the workspace itself"},
		// A hooks directory reached through a link the command could
		// replace.
		{"HooksPathThroughSymlink", func(t *testing.T, ws string) {
			mustRun(t, "git", "init", "-q", ws)
			must(t, os.MkdirAll(filepath.Join(ws, "tools/hooks"), 0o755))
			must(t, os.Symlink("tools", filepath.Join(ws, "t")))
			mustRun(t, "git", "-C", ws, "config", "core.hooksPath", "t/hooks")
		}, "passes through symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSpec(t, WorkspaceWrite, false, "true")
			tt.setup(t, s.Workspace)
			_, err := Start(t.Context(), s, nil)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Start in workspace_write = %v, want ErrRefused naming %q", err, tt.reason)
			}
			s.Mode = ReadOnly
			if res, _ := run(t, s); res.ExitCode != 0 {
				t.Errorf("read_only: exit %d", res.ExitCode)
			}
		})
	}
	// git's object store hard-links objects of local clones: not refused.
	t.Run("HardLinkedObjects", func(t *testing.T) {
		t.Parallel()
		s := newSpec(t, WorkspaceWrite, false, "true")
		src := filepath.Join(s.Workspace, "src")
		mustRun(t, "git", "init", "-q", src)
		must(t, os.WriteFile(filepath.Join(src, "f"), []byte("x\n"), 0o644))
		mustRun(t, "git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "add", "f")
		mustRun(t, "git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
		mustRun(t, "git", "clone", "-q", "--local", src, filepath.Join(s.Workspace, "clone"))
		if res, r := run(t, s); res.ExitCode != 0 {
			t.Errorf("exit %d, stderr %q", res.ExitCode, r.text(Stderr))
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}

// Where a memory cgroup can be made, a command that allocates past
// Limits.MemoryBytes is killed; elsewhere Result.Limits says there is no
// memory limit.
func TestLimits_Memory(t *testing.T) {
	t.Parallel()
	inEachMode(t, func(t *testing.T, m Mode) {
		s := newSpec(t, m, false, "perl", "-e", `my $x = "x" x (256<<20); print "allocated\n"`)
		s.Limits.MemoryBytes = 64 << 20
		res, r := run(t, s)
		t.Logf("limits: %v", res.Limits)
		if res.Limits.MemoryBytes == 0 {
			if m.restricted() && os.Geteuid() == 0 && res.Limits.Procs == 0 {
				t.Errorf("a root worker got no cgroup: %v", res.Limits)
			}
			return
		}
		if strings.Contains(r.text(Stdout), "allocated") || res.ExitCode == 0 {
			t.Errorf("allocated 256 MiB under a 64 MiB limit: %+v", res)
		}
	})
}

// The worker's own process count does not count against a command's
// limit, and a command's limit is its own.
func TestLimits_Procs(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := newSpec(t, m, false, "sh", "-c", `for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait; echo ok`)
			s.Limits.Procs = 16
			res, r := run(t, s)
			if r.text(Stdout) != "ok\n" || res.Limits.Procs != 16 {
				t.Errorf("stdout %q, stderr %q, limits %v", r.text(Stdout), r.text(Stderr), res.Limits)
			}
		})
	}
}

// Two workspace_write commands on one workspace: the second, asked for
// while the first runs, waits for it to end, and then keeps its own
// protection (creating a protected name fails); the mount points the
// first made are gone with it, and the second's with the second.
func TestBoundary_AbsentHeldAcrossCommands(t *testing.T) {
	t.Parallel()
	first := newSpec(t, WorkspaceWrite, false, "sh", "-c", `: > a-ready; while [ ! -e a-go ]; do sleep 0.02; done`)
	ws := first.Workspace
	second := first
	second.Argv = []string{"sh", "-c", `: > b-ready; while [ ! -e b-go ]; do sleep 0.02; done
		for n in .git .claude .codex .agents .logbook; do mkdir -p $n/x 2>/dev/null && echo created $n; done
		for n in .mcp.json .envrc; do echo x > $n 2>/dev/null && echo wrote $n; done; true`}
	a := start(t, first, newRecorder(""))
	waitFor(t, "the first command", func() bool { _, err := os.Stat(filepath.Join(ws, "a-ready")); return err == nil })
	rb := newRecorder("")
	bc := startAsync(second, rb.emit)
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(ws, "b-ready")); err == nil {
		t.Fatal("the second command runs while the first holds the workspace")
	}
	must(t, os.WriteFile(filepath.Join(ws, "a-go"), nil, 0o644))
	if _, err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	b := <-bc
	if b.err != nil {
		t.Fatal(b.err)
	}
	waitFor(t, "the second command", func() bool { _, err := os.Stat(filepath.Join(ws, "b-ready")); return err == nil })
	must(t, os.WriteFile(filepath.Join(ws, "b-go"), nil, 0o644))
	res, err := b.p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || rb.text(Stdout) != "" {
		t.Errorf("second command: exit %d, stdout %q, stderr %q", res.ExitCode, rb.text(Stdout), rb.text(Stderr))
	}
	des, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), "-ready") && !strings.HasSuffix(de.Name(), "-go") {
			t.Errorf("workspace has %s after both commands", de.Name())
		}
	}
}

// A workspace_write command in a workspace that holds another's: the
// outer command waits for the inner one to end (it could swap the inner
// workspace's directories while they are mounted), then runs; neither
// can create a protected name, and both leave nothing.
func TestBoundary_NestedWorkspaces(t *testing.T) {
	t.Parallel()
	outer := newSpec(t, WorkspaceWrite, false, "sh", "-c", `: > ready; echo x > .envrc 2>/dev/null && echo created; true`)
	inner := filepath.Join(outer.Workspace, "sub")
	must(t, os.Mkdir(inner, 0o755))
	in := newSpec(t, WorkspaceWrite, false, "sh", "-c", `: > sub-ready; read x < sub-go; echo x > .envrc 2>/dev/null && echo created; true`)
	in.Workspace = inner
	must(t, unix.Mkfifo(filepath.Join(inner, "sub-go"), 0o666))
	ri := newRecorder("")
	pi := start(t, in, ri)
	waitFor(t, "the inner command", func() bool { _, err := os.Stat(filepath.Join(inner, "sub-ready")); return err == nil })
	ro := newRecorder("")
	oc := startAsync(outer, ro.emit)
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(outer.Workspace, "ready")); err == nil {
		t.Fatal("the outer command runs while the inner one holds its workspace")
	}
	must(t, os.WriteFile(filepath.Join(inner, "sub-go"), []byte("go\n"), 0o644))
	if res, err := pi.Wait(); err != nil || res.ExitCode != 0 || ri.text(Stdout) != "" {
		t.Errorf("inner: %+v, %v, stdout %q", res, err, ri.text(Stdout))
	}
	o := <-oc
	if o.err != nil {
		t.Fatal(o.err)
	}
	if res, err := o.p.Wait(); err != nil || res.ExitCode != 0 || ro.text(Stdout) != "" {
		t.Errorf("outer: %+v, %v, stdout %q, stderr %q", res, err, ro.text(Stdout), ro.text(Stderr))
	}
	for _, ws := range []string{outer.Workspace, inner} {
		des, _ := os.ReadDir(ws)
		for _, de := range des {
			if strings.HasPrefix(de.Name(), ".") {
				t.Errorf("%s holds %s after both commands", ws, de.Name())
			}
		}
	}
}

// A repository a workspace_write command creates below the top level is
// the command's to write, its configuration included (README: what is
// not contained); from the next command on, what that configuration
// names in the work tree is kept read-only, and a missing top-level
// path the configuration names is kept missing, leaving nothing behind.
func TestBoundary_GitNamedFromTheNextCommand(t *testing.T) {
	t.Parallel()
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `git init -q sub && git -C sub config core.hooksPath .githooks &&
		mkdir sub/.githooks`)
	mustRun(t, "git", "init", "-q", s.Workspace)
	mustRun(t, "git", "-C", s.Workspace, "config", "core.hooksPath", "hooks")
	if res, r := run(t, s); res.ExitCode != 0 {
		t.Fatalf("first command: exit %d, stderr %q", res.ExitCode, r.text(Stderr))
	}
	if b, err := os.ReadFile(filepath.Join(s.Workspace, "sub/.git/config")); err != nil || !strings.Contains(string(b), "hooksPath") {
		t.Fatalf("the first command could not configure the repository it made: %v %q", err, b)
	}
	s2 := s
	s2.Argv = []string{"sh", "-c", `echo x > sub/.githooks/pre-commit && echo wrote nested; mkdir hooks && echo made top; true`}
	res, r := run(t, s2)
	if res.ExitCode != 0 || strings.Contains(r.text(Stdout), "wrote") || strings.Contains(r.text(Stdout), "made") {
		t.Errorf("second command: exit %d, stdout %q, stderr %q", res.ExitCode, r.text(Stdout), r.text(Stderr))
	}
	if _, err := os.Lstat(filepath.Join(s.Workspace, "hooks")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hooks after the second command: %v, want it missing", err)
	}
}

// A workspace that is a linked worktree (Logbook's workspaces are) sees
// its git directory and its project's common one read-only, in both
// restricted modes: git reads the repository, and writes nothing there.
func TestBoundary_WorktreeGitDirReadOnly(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := newSpec(t, m, false, "sh", "-c", `set -e
				git status --short
				git log --oneline
				for d in "$(git rev-parse --git-dir)" "$(git rev-parse --git-common-dir)"; do
					touch "$d/written" 2>/dev/null && echo "wrote $d"
				done
				git -c user.name=x -c user.email=x@x commit -q --allow-empty -m y 2>/dev/null && echo committed
				cat "$(git rev-parse --git-common-dir)/hidden/creds" 2>/dev/null && echo leaked
				true`)
			proj := filepath.Join(t.TempDir(), "proj")
			mustRun(t, "git", "init", "-q", proj)
			mustRun(t, "git", "-C", proj, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "first")
			mustRun(t, "git", "-C", proj, "worktree", "add", "-q", "-b", "wt", s.Workspace)
			must(t, os.WriteFile(filepath.Join(s.Workspace, "new.txt"), nil, 0o644))
			// A hidden path in the project's git directory stays covered.
			must(t, os.Mkdir(filepath.Join(proj, ".git/hidden"), 0o755))
			must(t, os.WriteFile(filepath.Join(proj, ".git/hidden/creds"), []byte("secret\n"), 0o644))
			s.Hidden = []string{filepath.Join(proj, ".git/hidden")}
			s.Env = append(s.Env, "HOME="+s.Workspace, "GIT_CONFIG_NOSYSTEM=1")
			res, r := run(t, s)
			out := r.text(Stdout)
			if res.ExitCode != 0 || !strings.Contains(out, "?? new.txt") || !strings.Contains(out, "first") ||
				strings.Contains(out, "wrote") || strings.Contains(out, "committed") || strings.Contains(out, "leaked") {
				t.Errorf("exit %d, stdout %q, stderr %q", res.ExitCode, out, r.text(Stderr))
			}
		})
	}
}

// A workspace inside another repository's work tree: what that
// repository's configuration names in the workspace is kept read-only
// too (git on the host, run in the repository, reads it).
func TestBoundary_GitNamedByEnclosingRepo(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	mustRun(t, "git", "init", "-q", proj)
	mustRun(t, "git", "-C", proj, "config", "core.hooksPath", "ws/hooks")
	must(t, os.MkdirAll(filepath.Join(proj, "ws/hooks"), 0o755))
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `echo x > hooks/pre-commit && echo wrote; echo x > other && echo other`)
	s.Workspace = filepath.Join(proj, "ws")
	res, r := run(t, s)
	if res.ExitCode != 0 || strings.Contains(r.text(Stdout), "wrote") || !strings.Contains(r.text(Stdout), "other") {
		t.Errorf("exit %d, stdout %q, stderr %q", res.ExitCode, r.text(Stdout), r.text(Stderr))
	}
}
