package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/workspace"
	"github.com/logbook-dev/logbook/sandbox"
)

func TestParseConfig_Check(t *testing.T) {
	t.Parallel()
	// Each fault names the file and the line of the key at fault.
	for _, tc := range []struct{ toml, want string }{
		{"check = \"  \"\n", "workspace.toml:1: check is blank"},
		{"# none\ncheck = \"\"\n", "workspace.toml:2: check is empty; remove the key to have no check"},
		{"sync = []\n'check' = ''\n", "workspace.toml:2: check is empty"},
		{"check_timeout = \"1m\"\n", "workspace.toml:1: check_timeout without a check"},
		{"\ncheck_mode = \"read_only\"\n", "workspace.toml:2: check_mode without a check"},
		{"check = \"x\"\ncheck_timeout = \"0s\"\n", `workspace.toml:2: check_timeout "0s"`},
		{"check = \"x\"\n\ncheck_timeout = \"soon\"\n", `workspace.toml:3: check_timeout "soon"`},
		{"check = \"x\"\ncheck_timeout = \"25h\"\n", `workspace.toml:2: check_timeout "25h"`},
		{"check = \"x\"\n# mode\n  check_mode = \"full_access\"\n", `workspace.toml:3: check_mode "full_access": want workspace_write or read_only (a check never runs unconfined)`},
		{"check = 3\n", "workspace.toml:1"},
		{"check = \"x\"\nchek_mode = \"read_only\"\n", "workspace.toml:2:1: unknown key chek_mode"},
		{"sync = [\".env\"]\nprotected_sync = [\"../up\"]\n", "workspace.toml:2: protected_sync: sync path \"../up\""},
		{"check = \"x\"\nsetup_commands = [\"make\", \" \"]\n", "workspace.toml:2: setup_commands[1] is empty"},
	} {
		_, err := ParseConfig("/p/.logbook/workspace.toml", []byte(tc.toml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/p/.logbook/workspace.toml") {
			t.Errorf("%q: %v, want an error naming the file and saying %q", tc.toml, err, tc.want)
		}
	}
	c, err := ParseConfig("w.toml", []byte("check = \"make check\"\ncheck_timeout = \"90s\"\n"))
	if err != nil || c.CheckLimit() != 90*time.Second || c.CheckSandbox() != events.ModeWorkspaceWrite {
		t.Errorf("%+v %v", c, err)
	}
	if c, _ := ParseConfig("w.toml", nil); c.CheckLimit() != DefaultCheckTimeout || c.Check != "" {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParsePushRefs(t *testing.T) {
	t.Parallel()
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	refs, err := ParsePushRefs(strings.NewReader("\nrefs/heads/x " + a + " refs/heads/y " + z + "\n"))
	if err != nil || len(refs) != 1 || refs[0].LocalSHA != a || refs[0].RemoteRef != "refs/heads/y" {
		t.Errorf("%+v %v", refs, err)
	}
	if _, err := ParsePushRefs(strings.NewReader("refs/heads/x " + a + "\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("short line: %v", err)
	}
}

// checkHarness is a ready workspace whose project's check is set by
// setCheck.
type checkHarness struct {
	h  *harness
	m  *Manager
	ws workspace.State
	p  string
}

func newCheckHarness(t *testing.T) *checkHarness {
	sb := needBwrap(t)
	h, m, proj, _, p := withProject(t, func(c *Config) { c.Setup, c.Poll = sb, 20*time.Millisecond })
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "checked"})
	if err != nil || ws.Status != workspace.StatusReady {
		t.Fatalf("create: %+v %v", ws, err)
	}
	return &checkHarness{h: h, m: m, ws: ws, p: proj}
}

func (c *checkHarness) setCheck(t *testing.T, toml string) {
	write(t, filepath.Join(c.p, ConfigFile), toml)
}

func (c *checkHarness) run(t *testing.T, ctx context.Context, req CheckRequest) CheckResult {
	t.Helper()
	req.Workspace, req.By = c.ws.ID, "person:alice@test-host"
	res, err := c.m.Check(ctx, req)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return res
}

// started counts the check runs started on the log.
func (c *checkHarness) started(t *testing.T) []string {
	var ids []string
	for r, err := range c.h.log.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Type == "check.started" {
			ids = append(ids, r.Agg.ID)
		}
	}
	return ids
}

// sleepy returns a sleep duration, in seconds, that names this test
// process's sleep k: no other run of these tests (another -count, another
// package's binary beside it) has a sleep of that length, so alive finds only
// this run's processes.
func sleepy(k int) string { return strconv.Itoa(10_000_000 + os.Getpid()*10 + k) }

// alive reports whether a process whose command line holds word runs.
func alive(word string) bool {
	ms, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range ms {
		b, _ := os.ReadFile(m)
		if bytes.Contains(b, []byte(word)) && !bytes.Contains(b, []byte("go test")) && !bytes.Contains(b, []byte(".test")) {
			return true
		}
	}
	return false
}

func TestCheck_Verdicts(t *testing.T) {
	t.Parallel()
	c := newCheckHarness(t)
	// No check configured: said plainly, nothing recorded.
	res := c.run(t, t.Context(), CheckRequest{})
	if res.NoCheck == "" || res.Run.ID != "" || !strings.Contains(res.NoCheck, ConfigFile) || len(c.started(t)) != 0 {
		t.Fatalf("no check: %+v", res)
	}
	write(t, filepath.Join(c.ws.Path, "check.sh"), "#!/bin/sh\necho hi\n") // mode 0644
	for _, tc := range []struct {
		name, toml, status, reason, tail string
		exit                             int
		timedOut                         bool
	}{
		{"passes", "check = \"echo all 3 tests passed\"\n", events.CheckPassed, "", "all 3 tests passed", 0, false},
		{"fails", "check = \"echo FAIL: TestLogin; exit 3\"\n", events.CheckFailed, "", "FAIL: TestLogin", 3, false},
		{"not executable", "check = \"./check.sh\"\n", events.CheckError, "could not execute (exit status 126)", "", 126, false},
		{"not found", "check = \"no-such-check-tool\"\n", events.CheckError, "found no such command (exit status 127)", "", 127, false},
		{"hangs past its timeout", "check = \"echo begun; sh -c 'sleep " + sleepy(4) + "' & sleep " + sleepy(3) + "; wait\"\ncheck_timeout = \"1s\"\n", events.CheckFailed, "killed at its timeout (1s)", "begun", -1, true},
		// The worktree's git directory, in the project's, is there
		// read-only: git reads the repository inside the sandbox.
		{"reads the repository with git", "check = \"git status --short && git log -1 --format=subject:%s\"\n", events.CheckPassed, "", "subject:first", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.setCheck(t, tc.toml)
			var live bytes.Buffer
			res := c.run(t, t.Context(), CheckRequest{Output: &live})
			r := res.Run
			if r.Status != tc.status || r.ExitCode == nil || (tc.exit >= 0 && *r.ExitCode != tc.exit) || r.TimedOut != tc.timedOut ||
				!strings.Contains(r.Reason, tc.reason) || !strings.Contains(r.OutputTail, tc.tail) || !strings.Contains(live.String(), tc.tail) {
				t.Errorf("run %+v (exit %v), live output %q", r, r.ExitCode, live.String())
			}
			if tc.exit == -1 && *r.ExitCode != -1 {
				t.Errorf("exit %d, want -1", *r.ExitCode)
			}
			if r.Commit != run(t, c.ws.Path, "git", "rev-parse", "HEAD") || r.Trigger != check.TriggerManual || r.Mode != events.ModeWorkspaceWrite {
				t.Errorf("spec %+v", r)
			}
			if tc.timedOut && (alive(sleepy(4)) || alive(sleepy(3))) {
				t.Error("a process of the timed-out check outlived it")
			}
		})
	}
	// The whole output is on lb.out.<id>.
	ids := c.started(t)
	var out []byte
	for msg, err := range c.h.log.ReadRaw(t.Context(), natslog.OutputSubject(ids[0]), 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg.Data...)
	}
	if string(out) != "all 3 tests passed\n" {
		t.Errorf("stored output %q", out)
	}
}

func TestCheck_Cancel(t *testing.T) {
	t.Parallel()
	c := newCheckHarness(t)
	c.setCheck(t, "check = \"echo begun; sleep "+sleepy(5)+"\"\n")
	pr, pw := ioPipe()
	var res CheckResult
	var wg sync.WaitGroup
	wg.Go(func() { res = c.run(t, t.Context(), CheckRequest{Output: pw}); pw.Close() })
	pr.waitFor("begun")
	ids := c.started(t)
	if _, err := c.m.CancelCheck(t.Context(), ids[0], "person:bob@test-host", "wrong branch"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if res.Run.Status != events.CheckCancelled || res.Run.Reason != "cancelled by person:bob@test-host" || alive(sleepy(5)) {
		t.Errorf("cancelled run %+v", res.Run)
	}
	if _, err := c.m.CancelCheck(t.Context(), ids[0], "person:bob@test-host", ""); err == nil {
		t.Error("an ended run cancelled")
	}
	// An interrupt of the process running it is a cancellation too.
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw = ioPipe()
	wg.Go(func() { res = c.run(t, ctx, CheckRequest{Output: pw}); pw.Close() })
	pr.waitFor("begun")
	cancel()
	wg.Wait()
	if res.Run.Status != events.CheckCancelled || !strings.Contains(res.Run.Reason, "interrupted") {
		t.Errorf("interrupted run %+v", res.Run)
	}
}

func TestCheck_Push(t *testing.T) {
	t.Parallel()
	c := newCheckHarness(t)
	c.setCheck(t, "check = \"echo ok >> ../checks-ran; echo ok\"\n")
	head := run(t, c.ws.Path, "git", "rev-parse", "HEAD")
	push := func(sha string) *PushRequest {
		return &PushRequest{Remote: "origin", Refs: []events.PushRef{{LocalRef: "refs/heads/" + c.ws.Branch, LocalSHA: sha, RemoteRef: "refs/heads/x", RemoteSHA: strings.Repeat("0", 40)}}}
	}
	prior := func() []check.State {
		var out []check.State
		for _, id := range c.started(t) {
			st, err := c.m.CheckRun(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			out = append([]check.State{st}, out...)
		}
		return out
	}
	first := c.run(t, t.Context(), CheckRequest{Push: push(head)})
	if !first.Allowed || first.Reused || first.Run.Status != events.CheckPassed || len(first.Run.Pushes) != 1 || first.Run.Trigger != check.TriggerPush {
		t.Fatalf("first push: %+v", first)
	}
	// The same tree again: the pass is reused, the check not run again.
	again := c.run(t, t.Context(), CheckRequest{Push: push(head), Prior: prior()})
	if !again.Allowed || !again.Reused || again.Run.ID != first.Run.ID || len(again.Run.Pushes) != 2 || len(c.started(t)) != 1 {
		t.Fatalf("second push: %+v", again)
	}
	// A pushed commit that is not HEAD, or a work tree with changes:
	// refused before anything runs.
	if r := c.run(t, t.Context(), CheckRequest{Push: push(strings.Repeat("1", 40)), Prior: prior()}); r.Allowed || !strings.Contains(r.Refused, "not the workspace's HEAD") {
		t.Errorf("another commit: %+v", r)
	}
	write(t, filepath.Join(c.ws.Path, "README"), "changed\n")
	if r := c.run(t, t.Context(), CheckRequest{Push: push(head), Prior: prior()}); r.Allowed || !strings.Contains(r.Refused, "commit or stash") {
		t.Errorf("dirty tree: %+v", r)
	}
	// Committed, the tree is new: the check runs again.
	run(t, c.ws.Path, "git", "commit", "--quiet", "-am", "change")
	head2 := run(t, c.ws.Path, "git", "rev-parse", "HEAD")
	third := c.run(t, t.Context(), CheckRequest{Push: push(head2), Prior: prior()})
	if !third.Allowed || third.Reused || third.Run.ID == first.Run.ID || len(c.started(t)) != 2 {
		t.Errorf("push of a new commit: %+v", third)
	}
	// Another command over the same tree is not the pass of this one.
	c.setCheck(t, "check = \"echo failing; exit 1\"\n")
	fourth := c.run(t, t.Context(), CheckRequest{Push: push(head2), Prior: prior()})
	if fourth.Allowed || fourth.Reused || fourth.Run.Status != events.CheckFailed || len(fourth.Run.Pushes) != 0 {
		t.Errorf("push with a failing check: %+v", fourth)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(c.ws.Path), "checks-ran")); len(b) != 0 {
		t.Errorf("the check wrote outside its workspace: %q", b)
	}
}

// linePipe is a writer whose text a test can wait for.
type linePipe struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	cond *sync.Cond
}

func ioPipe() (*linePipe, *linePipe) {
	p := &linePipe{}
	p.cond = sync.NewCond(&p.mu)
	return p, p
}

func (p *linePipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *linePipe) Close() error { return nil }

func (p *linePipe) waitFor(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !strings.Contains(p.buf.String(), s) {
		p.cond.Wait()
	}
}

func TestCheck_TailSecretsAndDeletions(t *testing.T) {
	t.Parallel()
	c := newCheckHarness(t)
	// Output past the cap: the event keeps its end, the output subject all of it.
	c.setCheck(t, "check = \"seq 1 5000; echo FAIL: the last line; exit 1\"\n")
	r := c.run(t, t.Context(), CheckRequest{}).Run
	if r.Status != events.CheckFailed || len(r.OutputTail) > events.CheckTailBytes || !strings.HasSuffix(r.OutputTail, "5000\nFAIL: the last line\n") || r.OutputBytes <= events.CheckTailBytes {
		t.Errorf("tail of %d bytes (output %d): ...%q", len(r.OutputTail), r.OutputBytes, r.OutputTail[max(0, len(r.OutputTail)-40):])
	}
	// A check a redaction rule takes for a secret is refused, never recorded.
	c.setCheck(t, "check = \"curl -H 'Authorization: Bearer ghp_0123456789abcdefghijABCDEFGHIJ012345' https://ci/run\"\n")
	n := len(c.started(t))
	_, err := c.m.Check(t.Context(), CheckRequest{Workspace: c.ws.ID, By: "person:alice@h"})
	if !errors.Is(err, events.ErrRejected) || strings.Contains(err.Error(), "ghp_") || !strings.Contains(err.Error(), ConfigFile) || len(c.started(t)) != n {
		t.Errorf("secret check: %v", err)
	}
	// A push of deletions only needs no check.
	c.setCheck(t, "check = \"exit 1\"\n")
	del := &PushRequest{Remote: "origin", Refs: []events.PushRef{{LocalRef: "(delete)", LocalSHA: strings.Repeat("0", 40), RemoteRef: "refs/heads/old", RemoteSHA: strings.Repeat("a", 40)}}}
	if res := c.run(t, t.Context(), CheckRequest{Push: del}); !res.Allowed || res.Run.ID != "" || len(c.started(t)) != n {
		t.Errorf("deletion: %+v", res)
	}
}

// TestCheck_OutputCapped: a check's output past Config.MaxCheckOutput is
// not stored; the run goes on, its verdict and tail are its end's, and
// output_bytes counts all of it.
func TestCheck_OutputCapped(t *testing.T) {
	t.Parallel()
	sb := needBwrap(t)
	h, m, proj, _, p := withProject(t, func(c *Config) { c.Setup, c.Poll, c.MaxCheckOutput = sb, 20*time.Millisecond, 1000 })
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "capped"})
	if err != nil || ws.Status != workspace.StatusReady {
		t.Fatalf("create: %+v %v", ws, err)
	}
	c := &checkHarness{h: h, m: m, ws: ws, p: proj}
	c.setCheck(t, "check = \"seq 1 5000; echo the last line\"\n")
	r := c.run(t, t.Context(), CheckRequest{}).Run
	if r.Status != events.CheckPassed || !strings.HasSuffix(r.OutputTail, "5000\nthe last line\n") || r.OutputBytes != 23907 {
		t.Errorf("run %s, output %d bytes, tail ...%q", r.Status, r.OutputBytes, r.OutputTail[max(0, len(r.OutputTail)-30):])
	}
	var out []byte
	for msg, err := range c.h.log.ReadRaw(t.Context(), natslog.OutputSubject(c.started(t)[0]), 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg.Data...)
	}
	if len(out) != 1000 || !strings.HasPrefix(string(out), "1\n2\n3\n") {
		t.Errorf("stored %d bytes, want the first 1000", len(out))
	}
}

// TestCheck_ArchiveCancels: archiving a workspace while its check runs
// cancels the run, naming the archive, and kills its tree: a tree that is
// going away is never judged passed.
func TestCheck_ArchiveCancels(t *testing.T) {
	t.Parallel()
	c := newCheckHarness(t)
	c.setCheck(t, "check = \"echo begun; sleep "+sleepy(6)+"; echo survived\"\n")
	pr, pw := ioPipe()
	var res CheckResult
	var wg sync.WaitGroup
	wg.Go(func() { res = c.run(t, t.Context(), CheckRequest{Output: pw}); pw.Close() })
	pr.waitFor("begun")
	if _, err := c.m.Archive(t.Context(), c.ws.ID, "person:bob@test-host", "person"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if res.Run.Status != events.CheckCancelled || !strings.Contains(res.Run.Reason, "cancelled by the workspace's archive") || alive(sleepy(6)) {
		t.Errorf("run of an archived workspace %+v", res.Run)
	}
}

// interruptAtStart is the sandbox runner of a check whose process is
// interrupted while the sandbox starts: the run's context ends just
// before bubblewrap is probed and the boundary built.
type interruptAtStart struct {
	SandboxSetup
	interrupt context.CancelFunc
}

func (r interruptAtStart) RunCheck(ctx context.Context, s CheckSpec, emit func([]byte)) (sandbox.Result, error) {
	r.interrupt()
	return r.SandboxSetup.RunCheck(ctx, s, emit)
}

// TestCheck_InterruptedWhileStarting: an interrupt (a closed terminal, a
// SIGINT) that lands while the sandbox starts ends the run cancelled,
// as one that lands later does, never error: the start failed because
// the run was stopped, not on its own.
func TestCheck_InterruptedWhileStarting(t *testing.T) {
	t.Parallel()
	ctx, interrupt := context.WithCancel(t.Context())
	h, m, proj, _, p := withProject(t, func(c *Config) {
		c.Setup, c.Poll = interruptAtStart{needBwrap(t), interrupt}, 20*time.Millisecond
	})
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "checked"})
	if err != nil || ws.Status != workspace.StatusReady {
		t.Fatalf("create: %+v %v", ws, err)
	}
	c := &checkHarness{h: h, m: m, ws: ws, p: proj}
	c.setCheck(t, "check = \"echo begun\"\n")
	res := c.run(t, ctx, CheckRequest{})
	if res.Run.Status != events.CheckCancelled || !strings.Contains(res.Run.Reason, "interrupted") {
		t.Errorf("a run interrupted while its sandbox started: %+v, want cancelled, interrupted", res.Run)
	}
}
