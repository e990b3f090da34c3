package httpapi

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
)

// hostileText is text a page must show as text: markup, a script, a bidi
// override.
const hostileText = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`

// checkRunsEnv makes, on e's log, a project from a fresh git repository,
// a ready workspace named hostileText text, and four check runs of it:
// passed (with a push allowed), failed at its timeout, error with a
// hostileText reason, and one still running. It returns the workspace's id
// and the runs, newest first, as the log has them.
func checkRunsEnv(t *testing.T, e *env) (string, []check.State) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("workspaces need git")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	proj := filepath.Join(dir, "proj")
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main", proj},
		{"-C", proj, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	m, err := wsadapter.New(wsadapter.Config{Log: e.log, Reg: e.reg, Host: "test", Actor: "tester", Root: filepath.Join(dir, "wss")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.AddProject(t.Context(), proj, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(t.Context(), wsadapter.CreateRequest{Project: p.ID, Name: "fix " + hostileText, ID: "wa"})
	if err != nil || ws.Status != "ready" {
		t.Fatalf("create: %+v %v", ws, err)
	}
	x := &events.Executor[check.State]{Log: e.log, Reg: e.reg, Init: check.Init, Evolve: check.Evolve, IDs: ulid.Make, Host: "test", Actor: "tester"}
	cause := events.Cause{Kind: "cli", Event: "workspace check", Ref: "r"}
	at := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	var seq uint64
	do := func(id string, cmd check.Command) {
		ap, _, err := x.Execute(t.Context(), events.Aggregate{Kind: events.KindCheck, ID: id}, func(s check.State) (events.Decision, error) { return check.Decide(s, cmd) })
		if err != nil {
			t.Fatalf("%s %T: %v", id, cmd, err)
		}
		seq = ap.Last
	}
	commit := strings.Repeat("ab", 20)
	tree := "sha256:" + strings.Repeat("cd", 32)
	for i, v := range []*events.CheckEnded{
		{Status: events.CheckPassed, DurationMS: 3000},
		{Status: events.CheckFailed, ExitCode: -1, TimedOut: true, Reason: "killed at its timeout (1s)", DurationMS: 1000},
		{Status: events.CheckError, ExitCode: 127, Reason: "the shell found no such command " + hostileText},
		nil,
	} {
		id := fmt.Sprintf("01KBK00000000000000000000%d", i)
		spec := events.CheckRunSpec{Workspace: ws.ID, Project: p.ID, Command: "make check " + hostileText, Argv: []string{"sh", "-c", "make check"},
			Mode: events.ModeWorkspaceWrite, TimeoutMS: 1000, Commit: commit, Tree: tree, Clean: true, Fingerprint: commit + ":" + tree,
			Trigger: check.TriggerManual, By: "person:alice@h", Runner: "h/1/2/r"}
		do(id, check.Start{Spec: events.CheckStarted{CheckRunSpec: spec}, At: at.Add(time.Duration(i) * time.Minute), Cause: cause})
		if v != nil {
			do(id, check.End{Verdict: *v, At: at.Add(time.Duration(i)*time.Minute + time.Second), Cause: cause})
		}
		if i == 0 {
			do(id, check.AllowPush{Remote: "origin", Refs: []events.PushRef{{LocalRef: "HEAD", LocalSHA: commit, RemoteRef: "refs/heads/x", RemoteSHA: strings.Repeat("0", 40)}}, At: at.Add(2 * time.Second), Cause: cause})
		}
	}
	e.waitSeq(seq)
	runs, err := e.store.Checks(ws.ID)
	if err != nil || len(runs) != 4 {
		t.Fatalf("runs %d: %v", len(runs), err)
	}
	return ws.ID, runs
}

// TestWorkspaces_API: GET /v1/workspaces answers each workspace with its
// check runs, newest first, as the projection holds them.
func TestWorkspaces_API(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, runs := checkRunsEnv(t, e)
	var got struct {
		Workspaces []struct {
			ID     string        `json:"id"`
			Name   string        `json:"name"`
			Checks []check.State `json:"checks"`
		} `json:"workspaces"`
	}
	e.get("/v1/workspaces", 200, &got)
	if len(got.Workspaces) != 1 || got.Workspaces[0].ID != id || got.Workspaces[0].Name != "fix "+hostileText {
		t.Fatalf("workspaces %+v", got.Workspaces)
	}
	if d := cmp.Diff(runs, got.Workspaces[0].Checks); d != "" {
		t.Errorf("check runs (-store +api):\n%s", d)
	}
}

// TestBoard_CheckRuns: the board's workspaces view shows each workspace's
// check runs — status, exit status, timed out, the tree judged, when,
// the pushes allowed, the reason — with hostileText text shown as text.
func TestBoard_CheckRuns(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	id, runs := checkRunsEnv(t, e)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the board loaded", `document.getElementById("conn").classList.contains("on")`, 10*time.Second)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("workspaces-link").click(), true`)); err != nil {
		t.Fatal(err)
	}
	sec := `#workspaces-view section.workspace[data-id="` + id + `"]`
	until(t, ctx, "the check runs", `document.querySelectorAll('`+sec+` tr[data-run]').length === 4`, 10*time.Second)
	for _, r := range runs {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const tr = document.querySelector('`+sec+` tr[data-run="`+r.ID+`"]'); return [...tr.querySelectorAll("td")].map((td) => td.textContent).filter((_, i) => [1, 2, 3, 4, 5, 6, 10, 11].includes(i)); })()`))
		if err != nil {
			t.Fatal(err)
		}
		exit, timed := "-", "-"
		if r.ExitCode != nil {
			exit = fmt.Sprint(*r.ExitCode)
		}
		if r.TimedOut {
			timed = "timed out"
		}
		want := []string{r.Status, exit, timed, r.Commit[:12], strings.TrimPrefix(r.Tree, "sha256:")[:12], "clean", fmt.Sprint(len(r.Pushes)), r.Reason}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("run %s (-api +board):\n%s", r.ID, d)
		}
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("workspaces-view").innerText`))
	if !strings.Contains(text, "fix "+hostileText) || !strings.Contains(text, "make check "+hostileText) {
		t.Errorf("the hostileText name and command are not shown as text:\n%s", text)
	}
	injected, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__pwned) + " " + document.querySelectorAll("#workspaces-view img, #workspaces-view script").length`))
	if injected != "undefined 0" {
		t.Errorf("hostileText text became markup: %s", injected)
	}
	screenshot(t, ctx, "check-runs.png")
}
