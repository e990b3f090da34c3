package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The locks a start takes: shared on every directory above what it
// mounts by name, exclusive on a WorkspaceWrite workspace, in path order.
func TestLayout_Locks(t *testing.T) {
	l := layout{
		mode: WorkspaceWrite, ws: "/w/p",
		views:     []view{{"/w/p", viewRW}, {"/c/cache", viewRO}, {"/h", viewEmpty}},
		hideDirs:  []string{"/w/p/data"},
		hideFiles: []string{"/c/cache/x/token"},
	}
	got := l.locks()
	want := []lockReq{{"/", false}, {"/c", false}, {"/c/cache", false}, {"/c/cache/x", false}, {"/w", false}, {"/w/p", true}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(lockReq{})); diff != "" {
		t.Errorf("locks (-want +got):\n%s", diff)
	}
	l.mode = ReadOnly
	want[5].excl = false
	if diff := cmp.Diff(want, l.locks(), cmp.AllowUnexported(lockReq{})); diff != "" {
		t.Errorf("read_only locks (-want +got):\n%s", diff)
	}
}

// A running WorkspaceWrite command has its workspace to itself: another
// restricted command that would mount a path in it (a writer there, or in
// a directory below it; a reader of a directory below it, or one that
// hides a path in it) waits until it ends, and is refused when its
// context ends first; a reader of the workspace itself does not wait.
func TestStart_WaitsForWriter(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	release := startHeldWriter(t, Spec{Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace})
	defer release()

	start := func(s Spec, wait time.Duration) error {
		s.Argv, s.Env, s.Grace, s.Probed = []string{"true"}, testEnv(), testGrace, true
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		p, err := Start(ctx, s, nil)
		if err != nil {
			return err
		}
		_, err = p.Wait()
		return err
	}
	busy := func(s Spec) bool {
		s.Argv, s.Env = []string{"true"}, testEnv()
		return Busy(s)
	}
	if !busy(Spec{Workspace: ws, Mode: WorkspaceWrite}) || !busy(Spec{Workspace: filepath.Join(ws, "sub"), Mode: ReadOnly}) {
		t.Error("Busy: a writer or a reader below it not busy while a writer runs")
	}
	if busy(Spec{Workspace: ws, Mode: ReadOnly}) || busy(Spec{Workspace: ws, Mode: FullAccess}) {
		t.Error("Busy: a reader of the workspace or full_access busy while a writer runs")
	}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"writer in the workspace", Spec{Workspace: ws, Mode: WorkspaceWrite}},
		{"writer below it", Spec{Workspace: filepath.Join(ws, "sub"), Mode: WorkspaceWrite}},
		{"reader below it", Spec{Workspace: filepath.Join(ws, "sub"), Mode: ReadOnly}},
		{"reader hiding a path in it", Spec{Workspace: ws, Mode: ReadOnly, Hidden: []string{filepath.Join(ws, "sub")}}},
	} {
		err := start(tc.spec, time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: started while a writer runs: %v", tc.name, err)
		}
	}
	if err := start(Spec{Workspace: ws, Mode: ReadOnly}, 10*time.Second); err != nil {
		t.Errorf("reader of the workspace: %v", err)
	}
	release()
	if busy(Spec{Workspace: ws, Mode: WorkspaceWrite}) {
		t.Error("Busy: a writer busy once the first has ended")
	}
	if err := start(Spec{Workspace: ws, Mode: WorkspaceWrite}, 10*time.Second); err != nil {
		t.Errorf("writer after the first ended: %v", err)
	}
}

// startHeldWriter starts spec (its Workspace and Mode set) as a command
// that waits on a FIFO named "go" it makes in the workspace, and returns
// what lets it end and waits for it (once; later calls do nothing): a
// command holding its workspace's lock for as long as a test needs.
func startHeldWriter(t *testing.T, spec Spec) (release func()) {
	t.Helper()
	fifo := filepath.Join(spec.Workspace, "go")
	must(t, unix.Mkfifo(fifo, 0o666))
	spec.Argv, spec.Env = []string{"sh", "-c", "read x < go"}, testEnv()
	a, err := Start(context.Background(), spec, nil)
	must(t, err)
	released := false
	return func() {
		if !released {
			released = true
			must(t, os.WriteFile(fifo, []byte("go\n"), 0o644))
			if _, err := a.Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A command waiting for another's workspace, whose own workspace or
// allowlist entry lies in it: the running command swaps that directory
// for a symbolic link to a secret and ends. The waiting one is refused,
// naming the change; it never runs on the link's target.
func TestStart_SwappedWhileWaiting(t *testing.T) {
	requireBwrap(t)
	secret := outsideDir(t)
	must(t, os.WriteFile(filepath.Join(secret, "key"), []byte("s3cr3t\n"), 0o644))
	for _, tc := range []struct {
		name string
		spec func(ws string) Spec
	}{
		{"reader below it", func(ws string) Spec { return Spec{Workspace: filepath.Join(ws, "sub"), Mode: ReadOnly} }},
		{"writer below it", func(ws string) Spec { return Spec{Workspace: filepath.Join(ws, "sub"), Mode: WorkspaceWrite} }},
		{"allowlist entry in it", func(ws string) Spec {
			return Spec{Workspace: t.TempDir(), Mode: ReadOnly, Allow: []Allow{{Path: filepath.Join(ws, "sub")}},
				Hidden: []string{filepath.Join(ws, "sub", "x")}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			must(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
			must(t, unix.Mkfifo(filepath.Join(ws, "go"), 0o666))
			a, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "read x < go; mv sub sub.old && ln -s " + secret + " sub"},
				Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace}, nil)
			must(t, err)
			s := tc.spec(ws)
			s.Argv, s.Env, s.Grace = []string{"sh", "-c", "cat " + filepath.Join(ws, "sub", "key") + " key 2>/dev/null; true"}, testEnv(), testGrace
			r := newRecorder("")
			bc := startAsync(s, r.emit)
			time.Sleep(100 * time.Millisecond)
			must(t, os.WriteFile(filepath.Join(ws, "go"), []byte("go\n"), 0o644))
			if res, err := a.Wait(); err != nil || res.ExitCode != 0 {
				t.Fatalf("the swap: %+v, %v", res, err)
			}
			b := <-bc
			if b.err == nil {
				res, _ := b.p.Wait()
				t.Fatalf("started after the swap (exit %d, stdout %q)", res.ExitCode, r.text(Stdout))
			}
			if !errors.Is(b.err, ErrRefused) {
				t.Errorf("refusal %v does not wrap ErrRefused", b.err)
			}
		})
	}
}

// An allowlist entry swapped for a symbolic link between two commands
// (no wait involved) is left out: the link's target is not mounted.
func TestStart_AllowEntrySwappedForLink(t *testing.T) {
	requireBwrap(t)
	secret := outsideDir(t)
	must(t, os.WriteFile(filepath.Join(secret, "key"), []byte("s3cr3t\n"), 0o644))
	tools := filepath.Join(outsideDir(t), "tools")
	must(t, os.Mkdir(tools, 0o755))
	allow := ResolveAllow([]Allow{{Path: tools}})
	must(t, os.Remove(tools))
	must(t, os.Symlink(secret, tools))
	s := Spec{Argv: []string{"sh", "-c", "cat " + tools + "/key " + secret + "/key 2>/dev/null; true"}, Env: testEnv(),
		Workspace: t.TempDir(), Mode: ReadOnly, Grace: testGrace, Allow: allow}
	if _, r := run(t, s); r.text(Stdout) != "" {
		t.Errorf("read through the swapped allowlist entry: %q", r.text(Stdout))
	}
}

// A hidden path (the data dir, say) two levels into the workspace: a
// workspace_write command can neither move it nor the directory above
// it, so no later command finds it where the hidden list does not look.
func TestBoundary_HiddenParentNotRenamed(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	data := filepath.Join(ws, "x", "data")
	must(t, os.MkdirAll(data, 0o700))
	must(t, os.WriteFile(filepath.Join(data, "creds.json"), []byte("s3cr3t\n"), 0o600))
	for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
		s := Spec{Argv: []string{"sh", "-c", `mv x y 2>/dev/null && echo moved x; mv x/data d 2>/dev/null && echo moved data
			cat y/data/creds.json d/creds.json x/data/creds.json 2>/dev/null; true`},
			Env: testEnv(), Workspace: ws, Mode: m, Grace: testGrace, Hidden: []string{data}}
		if _, r := run(t, s); r.text(Stdout) != "" {
			t.Errorf("%s: %q", m, r.text(Stdout))
		}
	}
	if _, err := os.Stat(filepath.Join(data, "creds.json")); err != nil {
		t.Errorf("the hidden dir moved: %v", err)
	}
}

// A running workspace_write command makes its workspace unreadable
// (chmod 0300) so that another command's lock on it could not be taken:
// the other, whose workspace lies below, is refused (or, as root, who
// reads it anyway, waits); it never runs beside the first.
func TestStart_UnreadableLockDirectory(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	t.Cleanup(func() { os.Chmod(ws, 0o755) })
	must(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	must(t, unix.Mkfifo(filepath.Join(ws, "go"), 0o666))
	a, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "chmod 0300 . && : > sub/ready; read x < go"},
		Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace}, nil)
	must(t, err)
	waitFor(t, "the chmod", func() bool { _, err := os.Stat(filepath.Join(ws, "sub/ready")); return err == nil })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s := Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: filepath.Join(ws, "sub"), Mode: ReadOnly, Grace: testGrace, Probed: true}
	if Busy(s) && os.Geteuid() != 0 {
		t.Error("Busy: an unreadable directory above it reported busy, not refused")
	}
	p, err := Start(ctx, s, nil)
	if err == nil {
		p.Wait()
		t.Fatal("started beside a writer whose workspace it could not lock")
	}
	if os.Geteuid() != 0 && !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("refusal %v does not say why", err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "go"), []byte("go\n"), 0o644))
	if _, err := a.Wait(); err != nil {
		t.Fatal(err)
	}
}

// A long read_only command below a workspace holds up no workspace_write
// command there once it runs: its locks guard only its own setup.
func TestStart_ReaderHoldsUpNoWriter(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	sub := filepath.Join(ws, "sub")
	must(t, os.Mkdir(sub, 0o755))
	must(t, unix.Mkfifo(filepath.Join(sub, "go"), 0o666))
	r := newRecorder("up")
	reader, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "echo up; read x < go"}, Env: testEnv(),
		Workspace: sub, Mode: ReadOnly, Grace: testGrace}, r.emit)
	must(t, err)
	defer func() {
		must(t, os.WriteFile(filepath.Join(sub, "go"), []byte("go\n"), 0o644))
		reader.Wait()
	}()
	r.awaitOutput(t, "the reader's up")
	s := Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace, Probed: true}
	waitFor(t, "the reader's locks to go", func() bool { return !Busy(s) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := Start(ctx, s, nil)
	if err != nil {
		t.Fatalf("a writer beside a running reader: %v", err)
	}
	if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("writer: %+v, %v", res, err)
	}
}

// A workspace inside a hidden path (the data dir, a credential
// directory) is refused, and an allowlist entry inside one is left out:
// covering the hidden path hides nothing from within. HideAround lets
// Logbook's own workspaces root, inside the data dir, be used while the
// rest of the data dir stays hidden.
func TestStart_InsideHidden(t *testing.T) {
	requireBwrap(t)
	data := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(data, "jetstream"), 0o700))
	must(t, os.WriteFile(filepath.Join(data, "creds.json"), []byte("s3cr3t\n"), 0o600))
	must(t, os.MkdirAll(filepath.Join(data, "workspaces", "w1"), 0o700))
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		for _, ws := range []string{data, filepath.Join(data, "jetstream")} {
			_, err := Start(context.Background(), Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: m,
				Grace: testGrace, Hidden: []string{data}}, nil)
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%s in %s, inside the hidden %s: %v", m, ws, data, err)
			}
		}
	}
	s := Spec{Argv: []string{"sh", "-c", "cat " + data + "/creds.json 2>/dev/null; true"}, Env: testEnv(), Workspace: t.TempDir(),
		Mode: ReadOnly, Grace: testGrace, Hidden: []string{data}, Allow: []Allow{{Path: filepath.Join(data, "jetstream")}}}
	if _, r := run(t, s); r.text(Stdout) != "" {
		t.Errorf("read through an allowlist entry inside a hidden path: %q", r.text(Stdout))
	}
	hidden := HideAround([]string{data}, []string{filepath.Join(data, "workspaces")})
	s = Spec{Argv: []string{"sh", "-c", "cat ../../creds.json 2>/dev/null; ls ../../jetstream >/dev/null 2>&1 && echo listed; echo ok"}, Env: testEnv(),
		Workspace: filepath.Join(data, "workspaces", "w1"), Mode: WorkspaceWrite, Grace: testGrace, Hidden: hidden}
	if _, r := run(t, s); r.text(Stdout) != "ok\n" {
		t.Errorf("a workspace in the kept root: %q, %q (hidden %q)", r.text(Stdout), r.text(Stderr), hidden)
	}
	for _, ws := range []string{data, filepath.Join(data, "jetstream")} {
		_, err := Start(context.Background(), Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: ReadOnly, Grace: testGrace, Hidden: hidden}, nil)
		if ws != data && !errors.Is(err, ErrRefused) {
			t.Errorf("%s with the data dir hidden around its workspaces: %v", ws, err)
		}
	}
}

// Spec.Keep hides around at each start: a workspace that holds the data
// dir (a home, say) sees nothing the data dir gained after the worker
// started, while a workspace in the kept root still works.
func TestStart_KeepHidesWhatCameLater(t *testing.T) {
	requireBwrap(t)
	home := t.TempDir()
	data := filepath.Join(home, "data")
	root := filepath.Join(data, "workspaces")
	must(t, os.MkdirAll(filepath.Join(root, "w1"), 0o700))
	must(t, os.WriteFile(filepath.Join(data, "creds.json"), []byte("s3cr3t\n"), 0o600))
	spec := func(ws, script string, m Mode) Spec {
		return Spec{Argv: []string{"sh", "-c", script}, Env: testEnv(), Workspace: ws, Mode: m, Grace: testGrace,
			Hidden: []string{data}, Keep: []string{root}}
	}
	// Made after the worker's Spec was: a key, and a directory of them.
	must(t, os.WriteFile(filepath.Join(data, "late.key"), []byte("s3cr3t\n"), 0o600))
	must(t, os.MkdirAll(filepath.Join(data, "keys"), 0o700))
	must(t, os.WriteFile(filepath.Join(data, "keys", "admin.key"), []byte("s3cr3t\n"), 0o600))
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		if _, r := run(t, spec(home, "cat data/creds.json data/late.key data/keys/admin.key 2>/dev/null; echo ok", m)); r.text(Stdout) != "ok\n" {
			t.Errorf("%s in %s: the data dir's entries: %q, %q", m, home, r.text(Stdout), r.text(Stderr))
		}
		if _, r := run(t, spec(filepath.Join(root, "w1"), "echo ok", m)); r.text(Stdout) != "ok\n" {
			t.Errorf("%s in the kept root: %q, %q", m, r.text(Stdout), r.text(Stderr))
		}
	}
}

// started is the outcome of a Start that startAsync runs.
type started struct {
	p   *Process
	err error
}

// startAsync runs Start(s, emit) on a goroutine of its own, for a start
// that is to wait for another command's lock, and returns the channel its
// outcome arrives on.
func startAsync(s Spec, emit func(Chunk)) <-chan started {
	c := make(chan started, 1)
	go func() { p, err := Start(context.Background(), s, emit); c <- started{p, err} }()
	return c
}

// A WorkspaceWrite command's exit is known (WaitExit) once its
// placeholders are gone from the workspace (a full_access command or a
// host tool run once it is finds the workspace as it was); its record and
// its locks go right after, on their own, and Busy for the same
// workspace in this process waits for that rather than answering busy.
// Wait returns the same result once they are gone.
func TestWaitExit_TeardownAfter(t *testing.T) {
	s := newSpec(t, WorkspaceWrite, false, "true")
	s.Ledger = filepath.Join(t.TempDir(), "ledger")
	for i := range 3 {
		p, err := Start(t.Context(), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.WaitExit()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: WaitExit = %+v, %v", i, res, err)
		}
		if left, _ := os.ReadDir(s.Workspace); len(left) != 0 {
			t.Fatalf("run %d: once the exit is known the workspace holds %v; want it empty", i, left)
		}
		if Busy(s) {
			t.Fatalf("run %d: the workspace is busy once the command has exited", i)
		}
		again, err := p.Wait()
		if err != nil || again != res {
			t.Fatalf("run %d: Wait = %+v, %v; WaitExit gave %+v", i, again, err, res)
		}
		left, _ := os.ReadDir(s.Workspace)
		recs := ledgerRecords(t, s.Ledger)
		if len(left) != 0 || len(recs) != 0 {
			t.Fatalf("run %d: after Wait the workspace holds %v, the ledger %+v; want both empty", i, left, recs)
		}
	}
}

// A spec (*Spec).Busy planned is started on that plan once; a directory
// swapped for a symbolic link between Busy and Start is still seen (the
// plan made under the locks differs) and the start refused; a second
// Start of the same spec plans afresh.
func TestStart_BusyPlanTakenOnce(t *testing.T) {
	requireBwrap(t)
	secret := outsideDir(t)
	must(t, os.WriteFile(filepath.Join(secret, "key"), []byte("s3cr3t\n"), 0o644))
	ws := t.TempDir()
	sub := filepath.Join(ws, "sub")
	must(t, os.Mkdir(sub, 0o755))
	s := Spec{Argv: []string{"sh", "-c", "cat key 2>/dev/null; true"}, Env: testEnv(), Workspace: sub, Mode: WorkspaceWrite, Grace: testGrace}
	if s.Busy() {
		t.Fatal("Busy: nothing runs")
	}
	if s.planned == nil {
		t.Fatal("Busy kept no plan")
	}
	held := s // a copy holds the same plan
	p, err := Start(context.Background(), held, nil)
	must(t, err)
	if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("on Busy's plan: %+v, %v", res, err)
	}
	if _, _, ok := s.planned.take(); ok {
		t.Error("the plan was left for a second Start")
	}
	p, err = Start(context.Background(), s, nil) // plans afresh
	must(t, err)
	if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("planned afresh: %+v, %v", res, err)
	}

	if s.Busy() {
		t.Fatal("Busy: nothing runs")
	}
	must(t, os.Rename(sub, sub+".old"))
	must(t, os.Symlink(secret, sub))
	r := newRecorder("")
	p, err = Start(context.Background(), s, r.emit)
	if err == nil {
		res, _ := p.Wait()
		t.Fatalf("started on a plan made before the swap (exit %d, stdout %q)", res.ExitCode, r.text(Stdout))
	}
	if !errors.Is(err, ErrRefused) {
		t.Errorf("refusal %v does not wrap ErrRefused", err)
	}
}
