package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	must(t, unix.Mkfifo(filepath.Join(ws, "go"), 0o666))
	a, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "read x < go"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace}, nil)
	must(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			must(t, os.WriteFile(filepath.Join(ws, "go"), []byte("go\n"), 0o644))
			if _, err := a.Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
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
