package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

func TestAdmission(t *testing.T) {
	t.Parallel()
	sess := func(mode, cwd string) session.State {
		return session.State{ID: "s1", Ver: 3, Mode: mode, ModeRevision: 2, Cwd: cwd}
	}
	const home = "/home/u"
	tests := []struct {
		name    string
		sess    session.State
		by      string
		mode    string
		ws      string
		cwdHere bool
		says    string // "" means admitted
	}{
		{"SameMode", sess(events.ModeWorkspaceWrite, ""), "claude-code", events.ModeWorkspaceWrite, "/home/u/p", false, ""},
		{"Narrower", sess(events.ModeWorkspaceWrite, ""), "claude-code", events.ModeReadOnly, "/home/u/p", false, ""},
		{"WiderThanWorkspaceWrite", sess(events.ModeWorkspaceWrite, ""), "claude-code", events.ModeFullAccess, "/home/u/p", false, "wider than session s1's permission mode workspace_write (revision 2)"},
		{"WiderThanReadOnly", sess(events.ModeReadOnly, ""), "claude-code", events.ModeWorkspaceWrite, "/home/u/p", false, "wider"},
		{"AutoIsWorkspaceWrite", sess(events.ModeAuto, ""), "claude-code", events.ModeFullAccess, "/home/u/p", false, "wider"},
		{"UnknownIsWorkspaceWrite", sess("", ""), "claude-code", events.ModeFullAccess, "/home/u/p", false, "unknown (workspace_write at most)"},
		{"UnknownAllowsWorkspaceWrite", sess("", ""), "claude-code", events.ModeWorkspaceWrite, "/home/u/p", false, ""},
		{"FullAccessSession", sess(events.ModeFullAccess, ""), "claude-code", events.ModeFullAccess, "/home/u/p", false, ""},
		{"NoSession", session.State{ID: "s9"}, "claude-code", events.ModeReadOnly, "/home/u/p", false, "session s9 does not exist"},
		{"Root", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/", false, "system directory"},
		{"Etc", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/etc", false, "system directory"},
		{"InsideUsr", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/usr/local/src", false, "system directory"},
		{"Tmp", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/tmp", false, "system directory"},
		{"Home", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/home/u", false, "home directory"},
		{"AboveHome", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/home", false, "system directory"},
		{"UnderTmp", sess(events.ModeFullAccess, ""), "claude-code", events.ModeReadOnly, "/tmp/x", false, ""},
		{"SessionDir", sess(events.ModeFullAccess, "/home/u/p"), "claude-code", events.ModeReadOnly, "/home/u/p", true, ""},
		{"InsideSessionDir", sess(events.ModeFullAccess, "/home/u/p"), "claude-code", events.ModeReadOnly, "/home/u/p/sub", true, ""},
		{"OtherSessionsDir", sess(events.ModeFullAccess, "/home/u/p"), "claude-code", events.ModeReadOnly, "/home/u/q", true, "outside session s1's directory /home/u/p"},
		{"AboveSessionDir", sess(events.ModeFullAccess, "/home/u/p/sub"), "claude-code", events.ModeReadOnly, "/home/u/p", true, "outside"},
		{"PersonMayElevate", sess(events.ModeWorkspaceWrite, ""), "person:alice@build-3", events.ModeFullAccess, "/home/u/p", false, ""},
		{"PersonStillNotInEtc", sess(events.ModeWorkspaceWrite, ""), "person:alice@build-3", events.ModeFullAccess, "/etc", false, "system directory"},
		{"PersonLookalikeHeld", sess(events.ModeWorkspaceWrite, ""), "personal-harness", events.ModeFullAccess, "/home/u/p", false, "wider"},
		{"InsideRootSessionDir", sess(events.ModeFullAccess, "/"), "claude-code", events.ModeReadOnly, "/tmp/x", true, ""},
		{"RootSessionDirStillNotRoot", sess(events.ModeFullAccess, "/"), "claude-code", events.ModeReadOnly, "/", true, "system directory"},
		{"SessionDirElsewhere", sess(events.ModeFullAccess, "/home/u/p"), "claude-code", events.ModeReadOnly, "/home/u/q", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := admission(tt.sess, tt.by, tt.mode, "", tt.ws, home, tt.cwdHere)
			if tt.says == "" && got != "" || tt.says != "" && !strings.Contains(got, tt.says) {
				t.Errorf("admission = %q, want %q", got, tt.says)
			}
		})
	}
}

// A request wider than its session's mode is refused before anything
// starts, with the reason in command.refused.
func TestWorker_RefusesWiderThanSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	ro := "s-ro-" + strings.ToLower(ulid.Make().String())
	ev := e.reg.New(events.SessionStarted{Agent: "cli", Cwd: e.ws, Mode: events.ModeReadOnly})
	ev.ID, ev.Agg, ev.Ver = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: ro}, 1
	ev.At = time.Now().UTC().Truncate(time.Microsecond)
	ev.Cause = &events.Cause{Kind: "cli", Event: "test", Ref: "t"}
	if _, err := e.log.Append(t.Context(), events.Batch{Agg: ev.Agg, Events: []events.Envelope{ev}}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{events.ModeWorkspaceWrite, events.ModeFullAccess} {
		req := e.request(mode, "sh", "-c", "touch ran")
		req.Session = ro
		st, _ := e.follow(e.submit(req), 10*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "wider than session") {
			t.Errorf("%s: status %s reason %q; want refused as wider than the session", mode, st.Status, st.EndReason)
		}
	}
	req := e.request(events.ModeReadOnly, "true")
	req.Session = ro
	if st, _ := e.follow(e.submit(req), 10*time.Second); st.Status != command.StatusExited {
		t.Errorf("read_only: status %s reason %q; want exited", st.Status, st.EndReason)
	}
}

// TestAdmission_Elevation: a command elevated by the gate runs full_access
// only with an allow verdict granting it, in auto mode, at the mode
// revision the review was asked at.
func TestAdmission_Elevation(t *testing.T) {
	t.Parallel()
	granted := func(verdict, grant string, rev, now int, mode string) session.State {
		return session.State{ID: "s1", Ver: 9, Mode: mode, ModeRevision: now, Decided: []session.DecidedReview{
			{ID: "elev-1", Verdict: verdict, Outcome: "approved", Grant: grant, Revision: rev},
		}}
	}
	by := "elevation:person:alice@h"
	tests := []struct {
		name string
		sess session.State
		says string
	}{
		{"Granted", granted("allow", "full_access", 3, 3, events.ModeAuto), ""},
		{"Denied", granted("deny", "full_access", 3, 3, events.ModeAuto), "not an allow"},
		{"NoGrant", granted("allow", "", 3, 3, events.ModeAuto), "not an allow"},
		{"ModeChangedSince", granted("allow", "full_access", 3, 4, events.ModeAuto), "revision 3; session s1 is at revision 4"},
		{"NoLongerAuto", granted("allow", "full_access", 3, 3, events.ModeWorkspaceWrite), "needs session s1 in auto"},
		{"UnknownReview", session.State{ID: "s1", Ver: 9, Mode: events.ModeAuto}, "not among"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := admission(tt.sess, by, events.ModeFullAccess, "elev-1", "/home/u/p", "/home/u", false)
			if tt.says == "" && got != "" || tt.says != "" && !strings.Contains(got, tt.says) {
				t.Errorf("admission = %q, want %q", got, tt.says)
			}
		})
	}
	// Without an elevation, an agent in auto stays held to its mode.
	if got := admission(granted("allow", "full_access", 3, 3, events.ModeAuto), by, events.ModeFullAccess, "", "/home/u/p", "/home/u", false); !strings.Contains(got, "wider") {
		t.Errorf("no elevation: %q", got)
	}
}

// A session's directory moved away and another made at its path is not
// the directory first found: a command of the session is refused there,
// nothing of it run; a pin made before identities were kept (the path
// alone) still admits the directory at its path.
func TestWorker_SessionDirectoryReplacedAtItsPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.Pins = filepath.Join(t.TempDir(), "pins")
	e.startWorker(cfg)
	first := e.submit(e.request(events.ModeFullAccess, "true"))
	if st, _ := e.follow(first, 10*time.Second); st.Status != command.StatusExited {
		t.Fatalf("first: %s", st.Status)
	}
	if err := os.Rename(e.ws, e.ws+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	id := e.submit(e.request(events.ModeFullAccess, "touch", "ran"))
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "is no longer the directory a worker of this host first ran a command of it in: it was moved or replaced") {
		t.Errorf("status %s (%s), want refused: the directory was replaced", st.Status, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("a command ran in the directory made in the session's directory's place")
	}

	// A pin of the path alone, as made before: the path still admits.
	old := newEnv(t, false)
	ocfg := old.workerConfig()
	ocfg.Pins = cfg.Pins
	sum := sha256.Sum256([]byte(old.session))
	if err := os.WriteFile(filepath.Join(cfg.Pins, hex.EncodeToString(sum[:16])), []byte(filepath.Clean(mustEval(t, old.ws))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old.startWorker(ocfg)
	if st, _ := old.follow(old.submit(old.request(events.ModeFullAccess, "true")), 10*time.Second); st.Status != command.StatusExited {
		t.Errorf("under a pin of the path alone: %s (%s)", st.Status, st.EndReason)
	}
}

// mustEval returns p with its symbolic links resolved.
func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A session's directory that another command moves away, or swaps for a
// link, after this worker first ran a command of the session, does not
// widen the bound: a later command outside it is refused.
func TestWorker_SessionDirectoryPinned(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	first := e.submit(e.request(events.ModeFullAccess, "true"))
	if st, _ := e.follow(first, 10*time.Second); st.Status != command.StatusExited {
		t.Fatalf("first: %s", st.Status)
	}
	elsewhere := t.TempDir()
	if err := os.Rename(e.ws, e.ws+".gone"); err != nil {
		t.Fatal(err)
	}
	for _, swap := range []func() error{
		func() error { return nil },                                       // gone
		func() error { return os.Symlink(filepath.Dir(elsewhere), e.ws) }, // a link above elsewhere
	} {
		if err := swap(); err != nil {
			t.Fatal(err)
		}
		req := e.request(events.ModeFullAccess, "touch", "ran")
		req.Workspace = elsewhere
		id := e.submit(req)
		st, _ := e.follow(id, 10*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "no longer resolves") {
			t.Errorf("status %s (%s), want refused: the session's directory moved", st.Status, st.EndReason)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "ran")); err == nil {
		t.Error("a command ran outside the session's directory")
	}
}

// TestWorker_SessionDirectoryPinnedForEveryWorker: the pin is the
// host's, not one worker's. A worker that never ran a command of the
// session, started after another pinned its directory and the directory
// was swapped for a link, refuses the session's command as the first
// worker would; it used to take the link for the directory as first
// found. The pins are files in Config.Pins, one per session, whole.
func TestWorker_SessionDirectoryPinnedForEveryWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	pins := t.TempDir()
	cfg := e.workerConfig()
	cfg.Pins = pins
	_, stopFirst := e.startWorker(cfg)
	first := e.submit(e.request(events.ModeFullAccess, "true"))
	if st, _ := e.follow(first, 10*time.Second); st.Status != command.StatusExited {
		t.Fatalf("first: %s", st.Status)
	}
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(pins)
	if err != nil || len(des) != 1 {
		t.Fatalf("pins: %v, %v; want one file", des, err)
	}
	id, err := dirIdentity(real)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(pins, des[0].Name())); err != nil || string(b) != real+pinSep+id+"\n" {
		t.Fatalf("the pin holds %q (%v), want %q", b, err, real+pinSep+id+"\n")
	}
	elsewhere := t.TempDir()
	if err := os.Rename(e.ws, e.ws+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, e.ws); err != nil {
		t.Fatal(err)
	}
	e.startWorker(cfg) // a second worker of the host: never saw the session
	req := e.request(events.ModeFullAccess, "touch", "ran")
	req.Workspace = elsewhere
	st, _ := e.follow(e.submit(req), 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "no longer resolves to "+real) {
		t.Errorf("status %s (%s), want refused: the session's directory was swapped for a link", st.Status, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "ran")); err == nil {
		t.Error("a command ran outside the session's directory")
	}
}

// TestPinFile_FirstWins: of pins made from different resolutions, the
// first stays; a reader without a resolution reads it; a torn pin is an
// error, never a pin.
func TestPinFile_FirstWins(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pins")
	if pin, ok, err := pinFile(dir, "s1", ""); ok || err != nil || pin != "" {
		t.Fatalf("no pin yet: %q %v %v", pin, ok, err)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			pin, ok, err := pinFile(dir, "s1", fmt.Sprintf("/r/%d", i))
			if !ok || err != nil {
				t.Errorf("pin %d: %q %v %v", i, pin, ok, err)
			}
			got[i] = pin
		})
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatalf("pins made at once disagree: %q", got)
		}
	}
	if pin, ok, err := pinFile(dir, "s1", "/other"); !ok || err != nil || pin != got[0] {
		t.Errorf("a later pin: %q %v %v, want %q", pin, ok, err, got[0])
	}
	des, _ := os.ReadDir(dir)
	if len(des) != 1 {
		t.Errorf("%d files in the pins directory, want 1 (no temporary file left)", len(des))
	}
	if err := os.WriteFile(filepath.Join(dir, des[0].Name()), []byte("/r/tor"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := pinFile(dir, "s1", ""); ok || err == nil {
		t.Errorf("a torn pin: ok %v, err %v; want an error", ok, err)
	}
}

// A request whose workspace is, or lies in, a hidden path (the data dir,
// a credential directory) is refused by the worker in every mode,
// full_access included, before anything runs; one in a kept directory
// there (a workspace root) runs.
func TestWorker_RefusesHiddenWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	sub := filepath.Join(e.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := e.workerConfig()
	cfg.Hidden = []string{e.ws}
	e.startWorker(cfg)
	for _, ws := range []string{e.ws, sub} {
		req := e.request(events.ModeFullAccess, "sh", "-c", "touch ran")
		req.Workspace = ws
		st, _ := e.follow(e.submit(req), 10*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "workspace "+ws+" lies in "+e.ws) {
			t.Errorf("%s: status %s reason %q; want refused as lying in %s", ws, st.Status, st.EndReason, e.ws)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
			t.Errorf("%s: the refused command ran", ws)
		}
	}
}

// TestCheckHidden: the workspace itself, one inside and one reached by a
// symbolic link are refused; a kept directory inside, and a parent, are
// not.
func TestCheckHidden(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dd := filepath.Join(root, "data")
	kept := filepath.Join(dd, "workspaces")
	for _, d := range []string{filepath.Join(dd, "sub"), filepath.Join(kept, "w1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dd, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ws     string
		refuse bool
	}{
		{dd, true}, {filepath.Join(dd, "sub"), true}, {link, true}, {dd + "/sub/..", true},
		{kept, false}, {filepath.Join(kept, "w1"), false}, {root, false}, {dd + "x", false},
	} {
		err := CheckHidden(tt.ws, []string{dd}, []string{kept})
		if (err != nil) != tt.refuse {
			t.Errorf("CheckHidden(%s) = %v; want refused: %v", tt.ws, err, tt.refuse)
		}
		if err != nil && !strings.Contains(err.Error(), " lies in "+dd) {
			t.Errorf("CheckHidden(%s) = %v; want it to name %s", tt.ws, err, dd)
		}
	}
}

// Admission takes the hidden-path check made while the command was
// claimed only for the workspace it checked: one made of another
// resolution (a link swapped meanwhile) is made again, and a workspace
// that lies in a hidden path is refused whatever that check found.
func TestAdmit_HiddenCheckOfAnotherWorkspace(t *testing.T) {
	t.Parallel()
	dir := mustEval(t, t.TempDir())
	ws := filepath.Join(dir, "data", "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &Worker{cfg: Config{Hidden: []string{filepath.Join(dir, "data")}}}
	st := command.State{ID: "c1", Session: "s1", Workspace: ws, Mode: events.ModeReadOnly, RequestedBy: "claude-code"}
	pre := &sessionRead{id: "s1", st: session.State{ID: "s1", Ver: 3, Mode: events.ModeFullAccess}}
	hide, keep := w.hidden()
	for _, hc := range []*hiddenCheck{nil, {ws: filepath.Join(dir, "elsewhere")}, checkHidden(ws, resolveHidden(hide), keep)} {
		why, err := w.admit(t.Context(), st, pre, hc)
		if err != nil || !strings.Contains(why, "lies in "+filepath.Join(dir, "data")) {
			t.Errorf("admit with the check %+v = %q, %v; want refused as lying in the data dir", hc, why, err)
		}
	}
	// The check of this very workspace is taken as it is.
	clear := &hiddenCheck{ws: ws}
	if why, err := w.admit(t.Context(), st, pre, clear); err != nil || why != "" {
		t.Errorf("admit with a clear check of %s = %q, %v; want it taken", ws, why, err)
	}
}
