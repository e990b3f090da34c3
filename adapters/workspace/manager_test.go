package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	projectpkg "github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// run runs a command in dir and returns its trimmed output; it fails the
// test on error.
func run(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in %s: %v\n%s", strings.Join(argv, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo makes a bare origin with one commit on main and a clone of it,
// the project; it returns the project's and the origin's paths.
func repo(t *testing.T) (string, string) {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	origin := filepath.Join(dir, "origin.git")
	proj := filepath.Join(dir, "proj")
	run(t, dir, "git", "init", "--quiet", "--bare", "--initial-branch=main", origin)
	run(t, dir, "git", "clone", "--quiet", origin, proj)
	run(t, proj, "git", "checkout", "--quiet", "-b", "main")
	write(t, filepath.Join(proj, "README"), "one\ntwo\n")
	write(t, filepath.Join(proj, ".gitignore"), ".env\nsecrets.json\n")
	run(t, proj, "git", "add", ".")
	run(t, proj, "git", "commit", "--quiet", "-m", "first")
	run(t, proj, "git", "push", "--quiet", "-u", "origin", "main")
	run(t, proj, "git", "remote", "set-head", "origin", "main")
	return proj, origin
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// harness is a manager on an embedded log.
type harness struct {
	log  *natslog.Log
	reg  *events.Registry
	root string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); srv.Shutdown() })
	root, _ := filepath.EvalSymlinks(t.TempDir())
	return &harness{log: l, reg: reg, root: root}
}

// withProject returns a harness, a manager on it (its config changed by
// mod, if set) and a project it added from a fresh repository at proj
// whose origin is origin; a failure to add it fails the test.
func withProject(t *testing.T, mod func(*Config)) (h *harness, m *Manager, proj, origin string, p projectpkg.State) {
	t.Helper()
	h = newHarness(t)
	m = h.manager(t, mod)
	proj, origin = repo(t)
	p, err := m.AddProject(t.Context(), proj, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, m, proj, origin, p
}

func (h *harness) manager(t *testing.T, mod func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Log: h.log, Reg: h.reg, Host: "test-host", Actor: "tester", Root: h.root}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// types returns the event types of aggregate agg in order.
func (h *harness) types(t *testing.T, kind, id string) []string {
	t.Helper()
	recs, _, err := h.log.Load(t.Context(), events.Aggregate{Kind: kind, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// untouched returns what must not change in the project: its HEAD, its
// own branches (the workspaces' worktree/* branches aside) and its work
// tree's status.
func untouched(t *testing.T, proj string) string {
	return run(t, proj, "git", "rev-parse", "HEAD") + "\n" +
		ownBranches(run(t, proj, "git", "for-each-ref", "refs/heads")) + "\n" +
		run(t, proj, "git", "status", "--porcelain", "--ignored") + "\n" +
		run(t, proj, "git", "symbolic-ref", "HEAD")
}

// ownBranches drops the worktree/* branches from for-each-ref's lines.
func ownBranches(refs string) string {
	var keep []string
	for _, l := range strings.Split(refs, "\n") {
		if !strings.Contains(l, "refs/heads/worktree/") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func worktreeCount(t *testing.T, proj string) int {
	return strings.Count(run(t, proj, "git", "worktree", "list", "--porcelain"), "worktree ")
}

func TestAddProject_Refusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	m := h.manager(t, nil)
	proj, _ := repo(t)
	plain := t.TempDir()
	for _, tc := range []struct{ dir, want string }{
		{plain, "not a git repository"},
		{filepath.Join(proj, "sub"), "a subdirectory of the git repository " + proj},
		{filepath.Join(plain, "missing"), "no such file"},
	} {
		_ = os.MkdirAll(filepath.Join(proj, "sub"), 0o755)
		if _, err := m.AddProject(t.Context(), tc.dir, "", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddProject(%s) = %v, want %q", tc.dir, err, tc.want)
		}
	}
	p, err := m.AddProject(t.Context(), proj, "My Shop", nil)
	if err != nil || p.Key != "my-shop" || p.Trunk != "main" || p.Path != proj {
		t.Fatalf("AddProject = %+v, %v", p, err)
	}
	again, err := m.AddProject(t.Context(), proj, "other", nil)
	if err != nil || again.ID != p.ID || again.Name != "My Shop" {
		t.Errorf("adding again = %+v, %v", again, err)
	}
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "a"})
	if err != nil || ws.Status != workspace.StatusReady {
		t.Fatalf("create: %+v %v", ws, err)
	}
	// A linked worktree is no project.
	if _, err := m.AddProject(t.Context(), ws.Path, "", nil); err == nil || !strings.Contains(err.Error(), "linked worktree") {
		t.Errorf("AddProject(worktree) = %v", err)
	}
}

func TestCreate_FromOrigin(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	m := h.manager(t, nil)
	proj, origin := repo(t)
	// Origin moves on without the project knowing.
	other := filepath.Join(filepath.Dir(proj), "other")
	run(t, filepath.Dir(proj), "git", "clone", "--quiet", origin, other)
	write(t, filepath.Join(other, "NEW"), "new\n")
	run(t, other, "git", "add", ".")
	run(t, other, "git", "commit", "--quiet", "-m", "second")
	run(t, other, "git", "push", "--quiet")
	tip := run(t, other, "git", "rev-parse", "HEAD")
	// Sync files, one protected, one missing.
	write(t, filepath.Join(proj, ".env"), "TOKEN=x\n")
	write(t, filepath.Join(proj, "secrets.json"), "{}\n")
	write(t, filepath.Join(proj, ConfigFile), "sync = [\".env\", \".env.local\"]\nprotected_sync = [\"secrets.json\"]\n")
	before := untouched(t, proj)

	p, err := m.AddProject(t.Context(), proj, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "Fix login", ID: "w1", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	want := workspace.State{Status: workspace.StatusReady, Key: "fix-login", Branch: "worktree/fix-login", BaseRef: "origin/main", BaseCommit: tip,
		Path: filepath.Join(h.root, "proj", "fix-login"), OwnedBy: "s1", NamedBy: events.ByChat}
	if ws.Status != want.Status || ws.Key != want.Key || ws.Branch != want.Branch || ws.BaseRef != want.BaseRef || ws.BaseCommit != want.BaseCommit || ws.Path != want.Path || ws.OwnedBy != "s1" {
		t.Fatalf("workspace = %+v\nwant like %+v", ws, want)
	}
	if got := run(t, ws.Path, "git", "rev-parse", "HEAD"); got != tip {
		t.Errorf("worktree HEAD %s, want origin's tip %s", got, tip)
	}
	if got := untouched(t, proj); got != before {
		t.Errorf("the project changed:\n%s\nwant\n%s", got, before)
	}
	if !slices.Equal(ws.Synced, []string{".env"}) || !slices.Equal(ws.Protected, []string{"secrets.json"}) {
		t.Errorf("synced %v protected %v", ws.Synced, ws.Protected)
	}
	if fi, err := os.Stat(filepath.Join(ws.Path, "secrets.json")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("protected copy: %v %v", fi, err)
	}
	if got := ProtectedIn(filepath.Join(ws.Path, "sub", "dir")); !slices.Equal(got, []string{filepath.Join(ws.Path, "secrets.json")}) {
		t.Errorf("ProtectedIn = %v", got)
	}
	if got := ProtectedIn(proj); got != nil {
		t.Errorf("ProtectedIn(project) = %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Path, ".env")); string(b) != "TOKEN=x\n" {
		t.Errorf(".env copy = %q", b)
	}
	wantTypes := []string{"workspace.reserved", "workspace.base_resolved", "workspace.worktree_added", "workspace.synced", "workspace.ready"}
	if got := h.types(t, events.KindWorkspace, "w1"); !slices.Equal(got, wantTypes) {
		t.Errorf("events %v, want %v", got, wantTypes)
	}

	// The same create again answers the same workspace.
	again, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "Fix login", ID: "w1", Session: "s1"})
	if err != nil || again.ID != "w1" || again.Ver != ws.Ver {
		t.Errorf("create again = %+v, %v", again, err)
	}

	// Changes against the merge base: an edit, a new file, a binary.
	write(t, filepath.Join(ws.Path, "README"), "one\n2\nthree\n")
	write(t, filepath.Join(ws.Path, "notes.txt"), "a\nb")
	write(t, filepath.Join(ws.Path, "blob.bin"), "\x00\x01\x02")
	ch, err := m.Changes(t.Context(), ws)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, c := range ch.Files {
		got[c.Path] = c
	}
	if ch.Against != "origin/main" || ch.MergeBase != tip || got["README"].Added != 2 || got["README"].Removed != 1 ||
		got["notes.txt"].Added != 2 || !got["notes.txt"].New || !got["blob.bin"].Binary || len(ch.Files) != 3 || ch.Added != 4 || ch.Removed != 1 {
		t.Errorf("changes = %+v", ch)
	}
}

func TestCreate_NoOrigin(t *testing.T) {
	t.Parallel()
	h, m, proj, origin, p := withProject(t, nil)
	// Origin unreachable: its last known trunk.
	if err := os.Rename(origin, origin+".gone"); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "a"})
	if err != nil || ws.Status != workspace.StatusReady || ws.BaseRef != "origin/main" || !strings.HasPrefix(ws.Fallback, "origin unreachable") {
		t.Errorf("unreachable origin: %+v %v", ws, err)
	}
	// The folders made for it are its owner's only (README: the data
	// dir's directories are 0700).
	for _, d := range []string{filepath.Dir(ws.Path), filepath.Dir(filepath.Dir(ws.Path))} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 && d != h.root {
			t.Errorf("%s: mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	// No origin at all: the local trunk.
	run(t, proj, "git", "remote", "remove", "origin")
	ws, err = m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "b"})
	if err != nil || ws.Status != workspace.StatusReady || ws.BaseRef != "main" || ws.Fallback != "no origin remote" {
		t.Errorf("no origin: %+v %v", ws, err)
	}
	ch, err := m.Changes(t.Context(), ws)
	if err != nil || ch.Against != "main" {
		t.Errorf("changes without origin: %+v %v", ch, err)
	}
}

func TestCreate_Refusals(t *testing.T) {
	t.Parallel()
	h, m, proj, _, p := withProject(t, nil)
	last, _ := h.log.LastSeq(t.Context())
	for _, tc := range []struct {
		req  CreateRequest
		want string
	}{
		{CreateRequest{Project: p.ID, Name: "x", Base: "no-such-ref"}, `unknown base ref "no-such-ref"`},
		{CreateRequest{Project: p.ID, Name: "x", Base: "--upload-pack=evil"}, "unknown base ref"},
		{CreateRequest{Project: p.ID, Name: "---"}, "no letter or digit"},
		{CreateRequest{Project: p.ID, Name: "— ·"}, "no letter or digit"},
		{CreateRequest{Project: p.ID, Name: "fix \x1b[2Jit"}, "holds U+001B at byte 4"},
		{CreateRequest{Project: p.ID, Name: "fix\u202egol"}, "holds U+202E at byte 3"},
		{CreateRequest{Project: p.ID, Name: "fix\xff"}, "not valid UTF-8"},
		{CreateRequest{Project: p.ID, Name: strings.Repeat("n", 201)}, "name of 201 bytes, over the limit of 200"},
		{CreateRequest{Project: "p-none", Name: "x"}, "not found"},
		{CreateRequest{Project: p.ID, Name: "x", ID: "a.b"}, "not [A-Za-z0-9_-]"},
	} {
		if _, err := m.Create(t.Context(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v, want %q", tc.req, err, tc.want)
		}
	}
	if now, _ := h.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused creates appended %d events", now-last)
	}
	// An explicit ref is used exactly.
	first := run(t, proj, "git", "rev-parse", "HEAD")
	write(t, filepath.Join(proj, "x"), "x")
	run(t, proj, "git", "add", "x")
	run(t, proj, "git", "commit", "--quiet", "-m", "local only")
	run(t, proj, "git", "tag", "v1", first)
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "tagged", Base: "v1"})
	if err != nil || ws.BaseRef != "v1" || ws.BaseCommit != first {
		t.Errorf("base v1: %+v %v", ws, err)
	}
	// A project that stopped being a repository.
	if err := os.Rename(filepath.Join(proj, ".git"), filepath.Join(proj, "git.moved")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "y"}); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("create in a folder that is no repository: %v", err)
	}
}

func TestCreate_Keys(t *testing.T) {
	t.Parallel()
	_, m, _, _, p := withProject(t, nil)
	long := strings.Repeat("Refactor the payment module ", 3) // 84 characters
	var keys []string
	for _, name := range []string{"Fix bug", "fix-bug", "FIX BUG!", long, long} {
		ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: name})
		if err != nil || ws.Status != workspace.StatusReady {
			t.Fatalf("create %q: %+v %v", name, ws, err)
		}
		if len(ws.Key) > 48 || filepath.Base(ws.Path) != ws.Key || ws.Name != name {
			t.Errorf("workspace %q: key %q path %s", name, ws.Key, ws.Path)
		}
		keys = append(keys, ws.Key)
	}
	want := []string{"fix-bug", "fix-bug-2", "fix-bug-3", "refactor-the-payment-module-refactor-the-payment", "refactor-the-payment-module-refactor-the-2"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}

func TestCreate_SameIDAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	proj, _ := repo(t)
	a, b := h.manager(t, nil), h.manager(t, nil) // two processes
	p, err := a.AddProject(t.Context(), proj, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]workspace.State, 2)
	errs := make([]error, 2)
	for i, m := range []*Manager{a, b} {
		wg.Go(func() {
			got[i], errs[i] = m.Create(context.Background(), CreateRequest{Project: p.ID, Name: "same", ID: "w-same"})
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || got[i].ID != "w-same" || got[i].Key != "same" || got[i].Status != workspace.StatusReady {
			t.Errorf("create %d: %+v %v", i, got[i], errs[i])
		}
	}
	if n := worktreeCount(t, proj); n != 2 {
		t.Errorf("%d worktrees, want the project's and one", n)
	}
	if n := strings.Count(strings.Join(h.types(t, events.KindWorkspace, "w-same"), " "), "workspace.reserved"); n != 1 {
		t.Errorf("%d reservations", n)
	}
	ps, _ := a.Project(t.Context(), p.ID)
	if len(ps.Keys) != 1 {
		t.Errorf("keys %v", ps.Keys)
	}
}

func TestCreate_HalfWay(t *testing.T) {
	t.Parallel()
	h, m, proj, _, p := withProject(t, nil)
	// A folder is where the workspace would go.
	write(t, filepath.Join(h.root, "proj", "taken", "keep.txt"), "mine")
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "taken"})
	if err != nil || ws.Status != workspace.StatusFailed || ws.FailStep != "worktree" || !strings.Contains(ws.FailReason, "exists already and is no worktree") {
		t.Errorf("folder exists: %+v %v", ws, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "proj", "taken", "keep.txt")); string(b) != "mine" {
		t.Errorf("the folder that was there was touched")
	}
	// The branch exists already.
	run(t, proj, "git", "branch", "worktree/branchy")
	before := untouched(t, proj)
	ws, err = m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "branchy"})
	if err != nil || ws.Status != workspace.StatusFailed || ws.FailStep != "worktree" || !strings.Contains(ws.FailReason, "branch worktree/branchy exists already") {
		t.Errorf("branch exists: %+v %v", ws, err)
	}
	if untouched(t, proj) != before || worktreeCount(t, proj) != 1 {
		t.Errorf("a failed create changed the project")
	}
	if err := ws.CanWork(); err == nil || !strings.Contains(err.Error(), "failed at worktree") {
		t.Errorf("CanWork on failed: %v", err)
	}
}

// needBwrap skips a test of setup commands where bubblewrap is missing:
// they never run unconfined.
func needBwrap(t *testing.T) SandboxSetup {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("setup commands run under bubblewrap, which is missing")
	}
	return SandboxSetup{Env: []string{"PATH=/usr/bin:/bin"}}
}

func TestSetup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	proj, _ := repo(t)
	sb := needBwrap(t)
	m := h.manager(t, func(c *Config) { c.Setup = sb })
	none := h.manager(t, nil)
	write(t, filepath.Join(proj, ConfigFile), "setup_commands = [\"echo made > made.txt\", \"exit 3\"]\n")
	p, _ := m.AddProject(t.Context(), proj, "", nil)
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "s"})
	if err != nil || ws.Status != workspace.StatusFailed || ws.FailStep != "setup" || !strings.Contains(ws.FailReason, "setup command 2 (exit 3) exited with status 3; its output is in "+SetupLog(ws, 1)) || ws.SetupRan != 2 {
		t.Errorf("failing setup: %+v %v", ws, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "made.txt")); err != nil {
		t.Errorf("the first setup command did not run in the worktree: %v", err)
	}
	ws, err = none.Create(t.Context(), CreateRequest{Project: p.ID, Name: "n"})
	if err != nil || ws.Status != workspace.StatusFailed || !strings.Contains(ws.FailReason, "need bubblewrap's sandbox") {
		t.Errorf("setup without a runner: %+v %v", ws, err)
	}
	// protected_sync files are read-only to setup commands; the output
	// goes to the log file.
	write(t, filepath.Join(proj, "secrets.json"), "{}\n")
	write(t, filepath.Join(proj, ConfigFile), "protected_sync = [\"secrets.json\"]\nsetup_commands = [\"echo hello from setup; echo x > secrets.json\"]\n")
	ws, _ = m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "prot"})
	if ws.Status != workspace.StatusFailed || ws.FailStep != "setup" {
		t.Errorf("a setup command wrote a protected_sync file: %+v", ws)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Path, "secrets.json")); string(b) != "{}\n" {
		t.Errorf("secrets.json = %q", b)
	}
	if b, _ := os.ReadFile(SetupLog(ws, 0)); !strings.Contains(string(b), "hello from setup") {
		t.Errorf("setup log = %q", b)
	}
	// A bad configuration file fails the workspace at sync, naming the file.
	write(t, filepath.Join(proj, ConfigFile), "sync = [\"../outside\"]\n")
	ws, _ = m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "bad"})
	if ws.Status != workspace.StatusFailed || ws.FailStep != "sync" || !strings.Contains(ws.FailReason, "workspace.toml") {
		t.Errorf("bad config: %+v", ws)
	}
}

func TestArchive(t *testing.T) {
	t.Parallel()
	sb := needBwrap(t)
	h, m, proj, _, p := withProject(t, func(c *Config) { c.Setup, c.Poll = sb, 20*time.Millisecond })
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "mine", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	// A second session may not archive it.
	if _, err := m.Archive(t.Context(), ws.ID, "s2", events.ByChat); !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "owned by session s1") {
		t.Errorf("archive by s2: %v", err)
	}
	got, err := m.Archive(t.Context(), ws.ID, "s1", events.ByChat)
	if err != nil || got.Status != workspace.StatusArchived || got.ArchivedBy != "s1" {
		t.Fatalf("archive by owner: %+v %v", got, err)
	}
	if _, err := os.Stat(ws.Path); err != nil {
		t.Errorf("the folder went before the cleanup: %v", err)
	}
	if err := m.Cleanup(t.Context(), ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws.Path); !os.IsNotExist(err) || worktreeCount(t, proj) != 1 {
		t.Errorf("cleanup left the folder (%v) or the worktree", err)
	}
	if !strings.Contains(run(t, proj, "git", "branch", "--list", ws.Branch), ws.Branch) {
		t.Errorf("cleanup removed the branch")
	}
	got, _ = m.Workspace(t.Context(), ws.ID)
	if got.Cleanup != workspace.CleanupDone {
		t.Errorf("cleanup = %q", got.Cleanup)
	}

	// Archiving while setup runs: the setup command is stopped and the
	// workspace never becomes ready.
	write(t, filepath.Join(proj, ConfigFile), "setup_commands = [\"echo started; sleep 60\"]\n")
	done := make(chan workspace.State)
	go func() {
		st, _ := m.Create(context.Background(), CreateRequest{Project: p.ID, Name: "slow", ID: "w-slow"})
		done <- st
	}()
	for b, _ := os.ReadFile(filepath.Join(h.root, "proj", ".slow.setup-1.log")); !strings.Contains(string(b), "started"); b, _ = os.ReadFile(filepath.Join(h.root, "proj", ".slow.setup-1.log")) {
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := m.Workspace(t.Context(), "w-slow"); err != nil || st.Status != workspace.StatusInitializing || st.CanWork() == nil {
		t.Errorf("during setup: %+v %v", st, err)
	}
	got, err = m.Archive(t.Context(), "w-slow", "", events.ByPerson)
	if err != nil || got.Status != workspace.StatusArchived || got.ArchivedAs != events.ByPerson {
		t.Errorf("archive during setup: %+v %v", got, err)
	}
	if st := <-done; !st.Gone() {
		t.Errorf("create ended with %+v", st)
	}
	if slices.Contains(h.types(t, events.KindWorkspace, "w-slow"), "workspace.ready") {
		t.Errorf("ready after archive: %v", h.types(t, events.KindWorkspace, "w-slow"))
	}
	if err := m.Cleanup(t.Context(), "w-slow"); err != nil {
		t.Fatal(err)
	}
}

func TestArchive_FolderGoneAndFailedCleanup(t *testing.T) {
	t.Parallel()
	_, m, proj, _, p := withProject(t, nil)
	a, _ := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "a"})
	b, _ := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "b"})
	// A worktree folder deleted by hand.
	if err := os.RemoveAll(a.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Changes(t.Context(), a); err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Errorf("changes of a deleted folder: %v", err)
	}
	if _, err := m.Archive(t.Context(), a.ID, "", events.ByPerson); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(t.Context(), a.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Workspace(t.Context(), a.ID); st.Cleanup != workspace.CleanupDone || worktreeCount(t, proj) != 2 {
		t.Errorf("after deleting by hand: cleanup %q, %d worktrees", st.Cleanup, worktreeCount(t, proj))
	}
	// A cleanup that fails is recorded and the workspace stays archived.
	if _, err := m.Archive(t.Context(), b.ID, "", events.ByPerson); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(proj, proj+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(t.Context(), b.ID); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Workspace(t.Context(), b.ID)
	if st.Status != workspace.StatusArchived || st.Cleanup != workspace.CleanupFailed || !strings.HasPrefix(st.CleanupErr, "worktree: ") {
		t.Errorf("failed cleanup: %+v", st)
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	h, m, proj, _, p := withProject(t, nil)
	dead := "test-host/999999999/1/dead"
	// crash reserves w and stops, as a process killed after the
	// reservation would; upTo says how far it got.
	crash := func(id, name string, worktree bool) workspace.State {
		t.Helper()
		c := h.manager(t, nil)
		c.runner = dead
		agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
		_, ps, err := c.projects.Execute(t.Context(), p.Agg(), func(s projectState) (events.Decision, error) {
			return decideProject(s, id, name)
		})
		if err != nil {
			t.Fatal(err)
		}
		key := ps.Workspaces[id]
		res := workspace.Reserve{Project: p.ID, Name: name, Key: key, Path: filepath.Join(h.root, p.Key, key), Branch: "worktree/" + key,
			NamedBy: events.ByPerson, Runner: dead, At: c.now(), Cause: c.cause("workspace create", id)}
		_, st, err := c.workspaces.Execute(t.Context(), agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, res) })
		if err != nil {
			t.Fatal(err)
		}
		if worktree {
			run(t, proj, "git", "worktree", "add", "--quiet", "-b", st.Branch, st.Path, "HEAD")
		}
		return st
	}
	a := crash("w-a", "after reserve", false)
	b := crash("w-b", "after git", true)
	live := crash("w-live", "live runner", false)
	live.Runner = m.Runner() // this process: alive, left alone
	n, err := m.Recover(t.Context(), []workspace.State{a, b, live})
	if err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	for _, id := range []string{"w-a", "w-b"} {
		st, _ := m.Workspace(t.Context(), id)
		if st.Status != workspace.StatusReady || st.Runner != m.Runner() {
			t.Errorf("%s after recovery: %+v", id, st)
		}
		types := h.types(t, events.KindWorkspace, id)
		if types[1] != "workspace.resumed" || slices.Contains(types[:1], "workspace.resumed") {
			t.Errorf("%s events %v", id, types)
		}
	}
	recs, _, _ := h.log.Load(t.Context(), events.Aggregate{Kind: events.KindWorkspace, ID: "w-b"})
	for _, r := range recs {
		if wa, ok := r.Data.(events.WorkspaceWorktreeAdded); ok && !wa.Adopted {
			t.Errorf("w-b's worktree was made again instead of adopted")
		}
	}
	if n := worktreeCount(t, proj); n != 3 {
		t.Errorf("%d worktrees, want the project's and two", n)
	}
	// The dead runner's late step is refused.
	late := workspace.Step{Runner: dead, Event: events.WorkspaceReady{Runner: dead}}
	st, _ := m.Workspace(t.Context(), "w-a")
	if _, err := workspace.Decide(st, late); !errors.Is(err, events.ErrRejected) {
		t.Errorf("late step of the dead runner: %v", err)
	}
}

func TestNameFromSessions(t *testing.T) {
	t.Parallel()
	_, m, _, _, p := withProject(t, nil)
	ws, _ := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "new task", Placeholder: true})
	named := []Named{
		{Session: "s2", Title: "Second", Started: testNow().Add(time.Minute)},
		{Session: "s0", Title: "", Started: testNow().Add(-time.Minute)},
		{Session: "s1", Title: "Add dark mode", Started: testNow()},
	}
	got, err := m.NameFromSessions(t.Context(), ws, named)
	if err != nil || got.Name != "Add dark mode" || got.Branch != "worktree/add-dark-mode" || got.NamedBy != events.ByChat || got.Placeholder {
		t.Fatalf("named: %+v %v", got, err)
	}
	again, _ := m.NameFromSessions(t.Context(), got, []Named{{Session: "s9", Title: "Other", Started: testNow().Add(-time.Hour)}})
	if again.Name != "Add dark mode" {
		t.Errorf("a named workspace was renamed again: %+v", again)
	}
}

func TestRename(t *testing.T) {
	t.Parallel()
	_, m, _, _, p := withProject(t, nil)
	ws, _ := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "new workspace", Session: "s1", Placeholder: true})
	got, err := m.Rename(t.Context(), ws.ID, "Login form", "s1", events.ByChat)
	if err != nil || got.Name != "Login form" || got.Branch != "worktree/login-form" || got.Path != ws.Path || got.Key != ws.Key {
		t.Fatalf("rename: %+v %v", got, err)
	}
	if b := run(t, ws.Path, "git", "symbolic-ref", "--short", "HEAD"); b != "worktree/login-form" {
		t.Errorf("worktree on %s", b)
	}
	got, _ = m.Rename(t.Context(), ws.ID, "Chat again", "s2", events.ByChat)
	if got.Name != "Login form" {
		t.Errorf("a second session renamed it: %+v", got)
	}
	got, _ = m.NameFromSessions(t.Context(), got, []Named{{Session: "s3", Title: "Later title", Started: testNow()}})
	if got.Name != "Login form" {
		t.Errorf("a second session renamed it: %+v", got)
	}
	got, err = m.Rename(t.Context(), ws.ID, "Person's name", "", events.ByPerson)
	if err != nil || got.Name != "Person's name" || got.Branch != "worktree/person-s-name" || got.NamedBy != events.ByPerson {
		t.Errorf("person rename: %+v %v", got, err)
	}
}

type projectState = projectpkg.State

func decideProject(s projectState, id, name string) (events.Decision, error) {
	return projectpkg.Decide(s, projectpkg.ReserveKey{Workspace: id, Name: name, At: testNow(), Cause: events.Cause{Kind: "cli", Event: "test", Ref: "r"}})
}

func testNow() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }

// TestArchived_TakesNoNewWork: an archived workspace takes no task (task
// delegate is refused), its id cannot be created again (an error, not
// the archived workspace as if made), and a task delegated before the
// archiving does not become running for a session seen after it, nor
// for one seen before its delegation. A name given in the request is a
// person's, with or without a session; a placeholder a session asked
// for is its chat's to name.
func TestArchived_TakesNoNewWork(t *testing.T) {
	t.Parallel()
	sb := needBwrap(t)
	_, m, _, _, p := withProject(t, func(c *Config) { c.Setup, c.Poll = sb, 20*time.Millisecond })
	ws, err := m.Create(t.Context(), CreateRequest{ID: "w-named", Project: p.ID, Name: "mine", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.NamedBy != events.ByPerson {
		t.Errorf("a name given with --session is named by %q, want %q", ws.NamedBy, events.ByPerson)
	}
	ph, err := m.Create(t.Context(), CreateRequest{ID: "w-ph", Project: p.ID, Name: "untitled-1", Session: "s1", Placeholder: true})
	if err != nil {
		t.Fatal(err)
	}
	if ph.NamedBy != events.ByChat {
		t.Errorf("a placeholder a session asked for is named by %q, want %q", ph.NamedBy, events.ByChat)
	}
	tk, err := m.Delegate(t.Context(), "t-before", ws.ID, "s1", "fix it")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Archive(t.Context(), ws.ID, "s1", events.ByChat); err != nil {
		t.Fatal(err)
	}
	ws, _ = m.Workspace(t.Context(), ws.ID)
	if _, err := m.Delegate(t.Context(), "t-after", ws.ID, "s1", "more"); !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "archived") {
		t.Errorf("delegate to an archived workspace: %v", err)
	}
	if got, err := m.Create(t.Context(), CreateRequest{ID: ws.ID, Project: p.ID, Name: "again"}); !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "archived") {
		t.Errorf("create --id of an archived workspace: %+v, %v", got.Status, err)
	}
	got, err := m.Progress(t.Context(), tk, []Seen{
		{Session: "c1", At: tk.DelegatedAt.Add(-time.Minute), Ref: "r1"},
		{Session: "c2", At: ws.ArchivedAt.Add(time.Second), Ref: "r2"},
	})
	if err != nil || got.Status != task.StatusDelegated {
		t.Errorf("progress: %s, %v; want it still delegated", got.Status, err)
	}
}
