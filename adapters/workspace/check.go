package workspace

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// CheckRequest asks for a workspace's check.
type CheckRequest struct {
	Workspace string // the workspace id
	By        string // who runs it: "person:<user>@<host>"
	// Push, when set, is the push the pre-push hook asks about: the check
	// runs (or a passed run of the same tree is reused) and the push is
	// let go only on a pass for the tree pushed.
	Push *PushRequest
	// Prior are the workspace's earlier runs, newest first, as the
	// projection holds them; a push reuses the first passed one that
	// judged the same command and tree.
	Prior []check.State
	// Output receives the check's output as it comes, redacted; nil
	// discards it.
	Output io.Writer
}

// PushRequest is what git gives a pre-push hook: the remote's name and
// one PushRef per line of its standard input.
type PushRequest struct {
	Remote string
	Refs   []events.PushRef
}

// ParsePushRefs parses a pre-push hook's standard input: one line per
// ref, "<local ref> <local sha> <remote ref> <remote sha>"; blank lines
// are skipped. A line of another shape is an error naming its number.
func ParsePushRefs(r io.Reader) ([]events.PushRef, error) {
	var out []events.PushRef
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || !hexID(f[1]) || !hexID(f[3]) {
			return nil, fmt.Errorf("pre-push input line %d: want \"<local ref> <local sha> <remote ref> <remote sha>\", got %q", n, line)
		}
		out = append(out, events.PushRef{LocalRef: f[0], LocalSHA: f[1], RemoteRef: f[2], RemoteSHA: f[3]})
	}
	return out, sc.Err()
}

func hexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// allDeletions reports whether refs push no commit: none, or deletions
// only.
func allDeletions(refs []events.PushRef) bool {
	for _, r := range refs {
		if !deletion(r) {
			return false
		}
	}
	return true
}

// deletion reports whether a pushed ref deletes the remote ref.
func deletion(r events.PushRef) bool { return strings.Trim(r.LocalSHA, "0") == "" }

// CheckResult is Check's answer.
type CheckResult struct {
	// Run is the run that judged the tree: new, or a reused earlier one.
	// Its ID is "" when no run was needed or possible (NoCheck, Refused).
	Run check.State
	// Reused says Run is an earlier passed run of the same tree.
	Reused bool
	// NoCheck, when set, says plainly that the project names no check.
	NoCheck string
	// Refused, when set, says why the push may not go without running
	// anything (a ref that is not the work tree's HEAD, uncommitted
	// changes).
	Refused string
	// Allowed says the push may go (Push requests only).
	Allowed bool
}

// errCheckTimeout and errCheckInterrupted are the causes that stop a run.
var (
	errCheckTimeout     = errors.New("the check's timeout passed")
	errCheckInterrupted = errors.New("interrupted")
)

// cancelError is the cause of a run a person cancelled.
type cancelError struct{ by string }

func (e cancelError) Error() string { return "cancelled by " + e.by }

// Check runs workspace req.Workspace's check, as its project's
// .logbook/workspace.toml names it (check, check_timeout, check_mode),
// under the sandbox in the workspace, and records the run
// (lb.ev.check.<id>): check.started with the tree it judges (TreeOf),
// its output on lb.out.<id>, redacted, and check.ended with the verdict
// and the output's last events.CheckTailBytes bytes. The check runs as
// `sh -c <check>`; a shell's exit status 126 (found but not executable)
// or 127 (not found) is an error, not a failure. At the timeout, or when
// ctx is done (an interrupt: cancelled), or when a person cancels it
// (CancelCheck, seen within Config.Poll), its whole process tree is
// stopped; a run stopped at its timeout is failed and timed out, never
// passed.
//
// For a push (req.Push), each pushed ref that deletes nothing must be
// the work tree's HEAD, and the work tree must be clean (Tree.Clean): a
// check judges the files on disk, so a push of anything else is refused
// before anything runs. A passed run in req.Prior that judged the same
// command over the same fingerprint is reused without running again.
// On a pass the push is recorded on the run (check.push_allowed) and
// Allowed set. A push that deletes refs only needs no check.
//
// With no check configured it answers NoCheck and records nothing.
// Errors: an unknown workspace (events.ErrNotFound), one that is not
// ready, a configuration that does not parse, a tree git cannot read, or
// the log's; the verdict itself is never an error.
func (m *Manager) Check(ctx context.Context, req CheckRequest) (CheckResult, error) {
	ws, err := m.Workspace(ctx, req.Workspace)
	if err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	if err := ws.CanWork(); err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	p, err := m.Project(ctx, ws.Project)
	if err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	cfg, err := LoadConfig(p.Path)
	if err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	if req.Push != nil && allDeletions(req.Push.Refs) {
		return CheckResult{Allowed: true}, nil
	}
	if cfg.Check == "" {
		return CheckResult{Allowed: req.Push != nil, NoCheck: fmt.Sprintf("no check configured: %s names none (check = \"...\")", filepath.Join(p.Path, ConfigFile))}, nil
	}
	// The command is recorded as it is configured: one a rule takes for
	// a secret is refused, never rewritten.
	if err := m.refuse("workspace check", field{"check", "command", []string{cfg.Check}}); err != nil {
		return CheckResult{}, fmt.Errorf("%w (in %s)", err, filepath.Join(p.Path, ConfigFile))
	}
	tree, err := TreeOf(ctx, ws.Path)
	if err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	if req.Push != nil {
		req.Push.Refs = peeled(ctx, ws.Path, req.Push.Refs)
		if why := pushRefused(tree, req.Push.Refs); why != "" {
			return CheckResult{Refused: why}, nil
		}
		for _, r := range req.Prior {
			if r.Workspace == ws.ID && r.Judged(cfg.Check, cfg.CheckSandbox(), tree.Fingerprint()) && r.Clean {
				st, err := m.allowPush(ctx, r.ID, req.Push, true)
				if err != nil {
					return CheckResult{}, err
				}
				return CheckResult{Run: st, Reused: true, Allowed: true}, nil
			}
		}
	}
	trigger := check.TriggerManual
	if req.Push != nil {
		trigger = check.TriggerPush
	}
	argv := []string{"sh", "-c", cfg.Check}
	spec := events.CheckStarted{CheckRunSpec: events.CheckRunSpec{
		Workspace: ws.ID, Project: p.ID, Command: cfg.Check, Argv: argv, Mode: cfg.CheckSandbox(),
		TimeoutMS: cfg.CheckLimit().Milliseconds(), Commit: tree.Commit, Tree: tree.Digest, Clean: tree.Clean,
		Fingerprint: tree.Fingerprint(), Trigger: trigger, By: req.By, Runner: m.runner,
	}}
	id := m.cfg.IDs().String()
	agg := events.Aggregate{Kind: events.KindCheck, ID: id}
	start := check.Start{Spec: spec, At: m.now(), Cause: m.cause("workspace check", ws.ID)}
	_, st, err := m.checks.Execute(ctx, agg, func(s check.State) (events.Decision, error) { return check.Decide(s, start) })
	if err != nil {
		return CheckResult{}, fmt.Errorf("workspace check: %w", err)
	}
	verdict, outErr := m.runCheck(ctx, id, ws.ID, CheckSpec{Dir: ws.Path, Argv: argv, Mode: spec.Mode, Protected: cfg.ProtectedSync}, cfg.CheckLimit(), req.Output)
	// The verdict is recorded even when ctx is done: an interrupt is a
	// cancellation to record, not a reason to leave the run open.
	rec, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	end := check.End{Verdict: verdict, At: m.now(), Cause: m.cause("workspace check", verdict.Status)}
	_, st, err = m.checks.Execute(rec, agg, func(s check.State) (events.Decision, error) { return check.Decide(s, end) })
	if err != nil {
		return CheckResult{Run: st}, fmt.Errorf("workspace check: record the verdict of run %s: %w", id, err)
	}
	res := CheckResult{Run: st}
	if req.Push != nil && st.Status == events.CheckPassed {
		if st, err = m.allowPush(rec, id, req.Push, false); err != nil {
			return res, err
		}
		res.Run, res.Allowed = st, true
	}
	if outErr != nil {
		return res, fmt.Errorf("workspace check: run %s: its output was not all stored: %w", id, outErr)
	}
	return res, nil
}

// peeled returns refs with each LocalSHA that names an annotated tag
// replaced by the commit the tag points to (git rev-parse SHA^{commit}
// in the worktree wt) and the tag object's id kept in Tag, so a tag of
// HEAD is judged as HEAD. A SHA git cannot peel to a commit (a tag of a
// tree or blob, an unknown object) is left as it is, and so refused as
// not HEAD.
func peeled(ctx context.Context, wt string, refs []events.PushRef) []events.PushRef {
	out := slices.Clone(refs)
	for i, r := range out {
		if deletion(r) || !strings.HasPrefix(r.LocalRef, "refs/tags/") {
			continue
		}
		if c, err := git(ctx, wt, "rev-parse", "--verify", "--quiet", "--end-of-options", r.LocalSHA+"^{commit}"); err == nil && c != "" && c != r.LocalSHA {
			out[i].LocalSHA, out[i].Tag = c, r.LocalSHA
		}
	}
	return out
}

// pushRefused says why a push of refs may not go on a check of tree t,
// or "".
func pushRefused(t Tree, refs []events.PushRef) string {
	for _, r := range refs {
		if deletion(r) {
			continue
		}
		if r.LocalSHA != t.Commit {
			return fmt.Sprintf("%s is commit %s, not the workspace's HEAD (%s): the check judges the work tree, so push from a work tree whose HEAD is what you push", r.LocalRef, r.LocalSHA, t.Commit)
		}
	}
	if !t.Clean {
		return fmt.Sprintf("the work tree has changes not in HEAD (%s): %s; the check would judge them, not the commit pushed; commit or stash them, then push", t.Commit, t.Changed)
	}
	return ""
}

// allowPush records push on passed run id.
func (m *Manager) allowPush(ctx context.Context, id string, push *PushRequest, reused bool) (check.State, error) {
	var refs []events.PushRef
	for _, r := range push.Refs {
		if !deletion(r) {
			refs = append(refs, r)
		}
	}
	cmd := check.AllowPush{Remote: push.Remote, Refs: refs, Reused: reused, At: m.now(), Cause: m.cause("git pre-push", push.Remote)}
	agg := events.Aggregate{Kind: events.KindCheck, ID: id}
	_, st, err := m.checks.Execute(ctx, agg, func(s check.State) (events.Decision, error) { return check.Decide(s, cmd) })
	if err != nil {
		return st, fmt.Errorf("workspace check: record the push on run %s: %w", id, err)
	}
	return st, nil
}

// outputPublisher is the part of the log that stores output
// (natslog.Log.PublishOutput).
type outputPublisher interface {
	PublishOutput(ctx context.Context, id, msgID string, data []byte) (uint64, error)
}

// runCheck runs s for run id within limit and returns its verdict, and
// the first error storing its output met (the run goes on without it).
func (m *Manager) runCheck(ctx context.Context, id, wsID string, s CheckSpec, limit time.Duration, live io.Writer) (events.CheckEnded, error) {
	runner, ok := m.cfg.Setup.(CheckRunner)
	if !ok {
		return events.CheckEnded{Status: events.CheckError, ExitCode: -1, Reason: "the check needs bubblewrap's sandbox, which this command does not run"}, nil
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, stopTimer := context.WithTimeoutCause(runCtx, limit, errCheckTimeout)
	defer stopTimer()

	// A person's cancel is an event on the run, and an archive of the
	// workspace one on the workspace: watch for both. A check of a
	// workspace being archived judges a tree that is going away, and its
	// worktree may be removed under it: it is cancelled, never passed.
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	poll := m.cfg.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	agg := events.Aggregate{Kind: events.KindCheck, ID: id}
	wg.Go(func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if st, err := m.checks.State(runCtx, agg); err == nil && st.CancelBy != "" {
					cancel(cancelError{st.CancelBy})
					return
				}
				if w, err := m.workspaces.State(runCtx, events.Aggregate{Kind: events.KindWorkspace, ID: wsID}); err == nil && w.Gone() {
					by := "the workspace's archive"
					if w.ArchivedBy != "" {
						by += " (" + w.ArchivedBy + ")"
					}
					cancel(cancelError{by})
					return
				}
			}
		}
	})

	red := m.cfg.Redactor.NewStream()
	pub, _ := m.cfg.Log.(outputPublisher)
	var (
		total  int64
		tail   []byte
		outErr error
	)
	store := func(b []byte) {
		if len(b) == 0 {
			return
		}
		if live != nil {
			_, _ = live.Write(b)
		}
		if limit := cmp.Or(m.cfg.MaxCheckOutput, DefaultMaxCheckOutput); pub != nil && outErr == nil && total < limit {
			chunk := b[:min(int64(len(b)), limit-total)]
			msgID := fmt.Sprintf("%s:out:%d", id, total)
			if _, err := pub.PublishOutput(context.WithoutCancel(ctx), id, msgID, chunk); err != nil {
				outErr = err
			}
		}
		total += int64(len(b))
		tail = append(tail, b...)
		if len(tail) > 2*events.CheckTailBytes {
			tail = append([]byte(nil), tail[len(tail)-events.CheckTailBytes:]...)
		}
	}
	began := time.Now()
	res, err := runner.RunCheck(runCtx, s, func(b []byte) { store(red.Write(b)) })
	store(red.Close())
	v := events.CheckEnded{ExitCode: res.ExitCode, Signal: res.Signal, DurationMS: res.Duration.Milliseconds(), OutputBytes: total}
	if v.DurationMS == 0 {
		v.DurationMS = time.Since(began).Milliseconds()
	}
	if len(tail) > events.CheckTailBytes {
		tail = tail[len(tail)-events.CheckTailBytes:]
	}
	v.OutputTail = strings.ToValidUTF8(string(tail), "\uFFFD")
	for len(v.OutputTail) > events.CheckTailBytes {
		_, n := utf8.DecodeRuneInString(v.OutputTail)
		v.OutputTail = v.OutputTail[n:]
	}
	cause := context.Cause(runCtx)
	var ce cancelError
	switch {
	case err != nil && !res.Stopped && cause == nil:
		// A start that failed on its own; one cut short by a timeout, a
		// cancel or an interrupt (a context ended while bubblewrap was
		// probed or the boundary built) ends as that, below.
		v.Status, v.ExitCode, v.Signal = events.CheckError, -1, ""
		v.Reason = "the check could not run: " + err.Error()
	case errors.Is(cause, errCheckTimeout):
		v.Status, v.TimedOut = events.CheckFailed, true
		v.ExitCode = -1
		v.Reason = fmt.Sprintf("killed at its timeout (%s), its whole process tree with it", limit)
	case errors.As(cause, &ce):
		v.Status, v.ExitCode, v.Reason = events.CheckCancelled, -1, ce.Error()
	case ctx.Err() != nil:
		v.Status, v.ExitCode, v.Reason = events.CheckCancelled, -1, "interrupted (the process running it was stopped)"
	case res.ExitCode == 0 && res.Signal == "":
		v.Status = events.CheckPassed
	case res.ExitCode == 126 || res.ExitCode == 127:
		v.Status = events.CheckError
		what := "found no such command"
		if res.ExitCode == 126 {
			what = "found a command it could not execute"
		}
		v.Reason = fmt.Sprintf("the shell %s (exit status %d): %s", what, res.ExitCode, lastLine(v.OutputTail))
	default:
		v.Status = events.CheckFailed
	}
	if v.Status != events.CheckPassed && v.Status != events.CheckFailed && v.ExitCode == 0 {
		v.ExitCode = -1
	}
	return v, outErr
}

// lastLine returns the last non-blank line of s, at most 200 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n "), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200]
	}
	return strings.ToValidUTF8(l, "")
}

// CancelCheck asks running check run id to stop, for by (a person): the
// runner sees it within its Config.Poll and stops the check's whole
// process tree; the run ends cancelled. Errors: events.ErrNotFound, or
// events.ErrRejected for a run that has ended or was cancelled already.
func (m *Manager) CancelCheck(ctx context.Context, id, by, reason string) (check.State, error) {
	if err := events.ValidID(id); err != nil {
		return check.State{}, fmt.Errorf("check cancel: %w", err)
	}
	cmd := check.Cancel{By: by, Reason: reason, At: m.now(), Cause: m.cause("check cancel", id)}
	agg := events.Aggregate{Kind: events.KindCheck, ID: id}
	_, st, err := m.checks.Execute(ctx, agg, func(s check.State) (events.Decision, error) { return check.Decide(s, cmd) })
	if err != nil {
		return st, fmt.Errorf("check cancel: %w", err)
	}
	return st, nil
}

// CheckRun returns check run id as the log has it now; the error wraps
// events.ErrNotFound when it was never started.
func (m *Manager) CheckRun(ctx context.Context, id string) (check.State, error) {
	st, err := m.checks.State(ctx, events.Aggregate{Kind: events.KindCheck, ID: id})
	if err == nil && !st.Exists() {
		err = fmt.Errorf("check run %s: %w", id, events.ErrNotFound)
	}
	return st, err
}

// HookDir is the folder, in a worktree's own git directory, that holds
// the hooks InstallHook installs.
const HookDir = "logbook-hooks"

// InstallHook installs the pre-push hook of workspace id in worktree wt
// of the repository at project, for this worktree only: it turns on
// extensions.worktreeConfig in the repository (so each worktree may have
// settings of its own; other worktrees and the project's own work tree
// are unaffected) and sets core.hooksPath in wt's own config.worktree to
// <wt's git dir>/logbook-hooks. That folder holds pre-push, which runs
// `<hook> workspace check <id> --push <remote>` with git's list of refs
// and then the project's own pre-push hook, if it has one, and a link to
// each of the project's other hooks, so they still run in the workspace.
// hook is a command line quoted for sh. Installing again rewrites the
// same files. Errors are git's or the file system's.
func InstallHook(ctx context.Context, project, wt, id, hook string) error {
	if v, _ := git(ctx, project, "config", "--bool", "extensions.worktreeConfig"); v != "true" {
		if _, err := git(ctx, project, "config", "extensions.worktreeConfig", "true"); err != nil {
			return fmt.Errorf("pre-push hook: %w", err)
		}
	}
	gitDir, err := git(ctx, wt, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	own, err := git(ctx, project, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	dir := filepath.Join(gitDir, HookDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	if entries, err := os.ReadDir(own); err == nil {
		for _, e := range entries {
			name := e.Name()
			if name == "pre-push" || strings.HasSuffix(name, ".sample") || e.IsDir() {
				continue
			}
			link := filepath.Join(dir, name)
			_ = os.Remove(link)
			if err := os.Symlink(filepath.Join(own, name), link); err != nil {
				return fmt.Errorf("pre-push hook: %w", err)
			}
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
# The pre-push check of Logbook workspace %[1]s, installed by
# "logbook workspace create": the push goes only when the workspace's
# check passed for the tree being pushed.
refs=$(cat)
printf '%%s\n' "$refs" | %[2]s workspace check %[1]s --push "$1" || exit $?
if [ -x %[3]s ]; then
	printf '%%s\n' "$refs" | %[3]s "$@" || exit $?
fi
exit 0
`, id, hook, shQuote(filepath.Join(own, "pre-push")))
	tmp := filepath.Join(dir, ".pre-push.tmp")
	if err := writeProgram(tmp, 0o755, func(f *os.File) error {
		_, err := f.WriteString(script)
		return err
	}); err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "pre-push")); err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	if _, err := git(ctx, wt, "config", "--worktree", "core.hooksPath", dir); err != nil {
		return fmt.Errorf("pre-push hook: %w", err)
	}
	return nil
}

// HookInstalled reports whether worktree wt has the pre-push hook of
// workspace id as InstallHook installs it: core.hooksPath in its own
// config.worktree names <wt's git dir>/logbook-hooks and the pre-push
// there runs `workspace check <id>`. Errors are git's for a folder that
// is no work tree.
func HookInstalled(ctx context.Context, wt, id string) (bool, error) {
	gitDir, err := git(ctx, wt, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return false, fmt.Errorf("pre-push hook: %w", err)
	}
	dir := filepath.Join(gitDir, HookDir)
	if v, _ := git(ctx, wt, "config", "--worktree", "core.hooksPath"); v != dir {
		return false, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "pre-push"))
	if err != nil {
		return false, nil
	}
	return strings.Contains(string(b), " workspace check "+id+" --push "), nil
}

// EnsureHook installs workspace id's pre-push hook (InstallHook, with
// Config.Hook) when its worktree lacks it, as a workspace made before
// the hook existed does, and reports whether it installed it. A
// workspace that already has it is left as it is (false). Errors: an
// unknown workspace (events.ErrNotFound), one that is not ready, a
// manager with no Config.Hook, or git's and the file system's.
func (m *Manager) EnsureHook(ctx context.Context, id string) (bool, error) {
	ws, err := m.Workspace(ctx, id)
	if err != nil {
		return false, fmt.Errorf("workspace hook: %w", err)
	}
	if err := ws.CanWork(); err != nil {
		return false, fmt.Errorf("workspace hook: %w", err)
	}
	if m.cfg.Hook == "" {
		return false, errors.New("workspace hook: no hook command configured")
	}
	if ok, err := HookInstalled(ctx, ws.Path, ws.ID); err != nil || ok {
		return false, err
	}
	p, err := m.Project(ctx, ws.Project)
	if err != nil {
		return false, fmt.Errorf("workspace hook: %w", err)
	}
	if err := InstallHook(ctx, p.Path, ws.Path, ws.ID, m.cfg.Hook); err != nil {
		return false, err
	}
	return true, nil
}

// shQuote quotes s for sh: in single quotes, each single quote in s closed, escaped and reopened.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ShQuote quotes s for sh, as Config.Hook's words must be.
func ShQuote(s string) string { return shQuote(s) }

// CheckViews is what GateChecks reads of the projection
// (projections.Store implements it).
type CheckViews interface {
	WorkspaceAt(p string) (workspace.State, bool, error)
	Project(id string) (project.State, error)
	Checks(ws string) ([]check.State, error)
}

// GateChecks returns the gate's Checks (gate.Gate.Checks) over views,
// read once caughtUp (nil: at once) says they hold every event the log
// holds now, so a run that passed just before the call counts: for a
// call in directory dir it answers "" when the live workspace
// holding dir has a passed run of its project's check that judged a
// clean work tree whose fingerprint is the tree's now (TreeOf), and else
// why not: dir lies in no workspace, the project names no check, the
// work tree has changes not in HEAD, or no passed run judged this tree
// ("run the check first: logbook workspace check <id>").
func GateChecks(views CheckViews, caughtUp func(context.Context) error) func(ctx context.Context, dir string) string {
	return func(ctx context.Context, dir string) string {
		if caughtUp != nil {
			if err := caughtUp(ctx); err != nil {
				return "the check runs could not be read up to date: " + err.Error()
			}
		}
		if !filepath.IsAbs(dir) {
			return fmt.Sprintf("the call's directory %q is not absolute, so no workspace holds it", dir)
		}
		ws, ok, err := views.WorkspaceAt(filepath.Clean(dir))
		if err != nil {
			return "the workspaces could not be read: " + err.Error()
		}
		if !ok {
			return dir + " lies in no workspace: only a workspace's check can pass this call"
		}
		p, err := views.Project(ws.Project)
		if err != nil {
			return "the workspace's project could not be read: " + err.Error()
		}
		cfg, err := LoadConfig(p.Path)
		if err != nil {
			return err.Error()
		}
		if cfg.Check == "" {
			return fmt.Sprintf("no check configured: %s names none, so no run can pass this call", filepath.Join(p.Path, ConfigFile))
		}
		tree, err := TreeOf(ctx, ws.Path)
		if err != nil {
			return "the work tree could not be read: " + err.Error()
		}
		if !tree.Clean {
			return fmt.Sprintf("the work tree of workspace %s has changes not in HEAD (%s): commit or stash them, then run the check (logbook workspace check %s)", ws.ID, tree.Changed, ws.ID)
		}
		runs, err := views.Checks(ws.ID)
		if err != nil {
			return "the check runs could not be read: " + err.Error()
		}
		for _, r := range runs {
			if r.Judged(cfg.Check, cfg.CheckSandbox(), tree.Fingerprint()) && r.Clean {
				return ""
			}
		}
		return fmt.Sprintf("run the check first: logbook workspace check %s (no passed run judged commit %s as it is now)", ws.ID, or(tree.Commit, "(none)"))
	}
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
