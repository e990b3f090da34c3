package workspace

import (
	"context"
	"fmt"
	"os"

	"github.com/logbook-dev/logbook/sandbox"
)

// SandboxSetup runs setup commands in this process under the sandbox in
// workspace_write mode: the worktree writable except its protected paths
// and the protected_sync files, no network, Hidden out of sight. Without
// bubblewrap a setup command is refused (sandbox.ErrRefused), never run
// unconfined.
type SandboxSetup struct {
	// Env is the whole environment of each command, "KEY=VALUE".
	Env []string
	// Hidden lists paths a setup command must not see: the data dir,
	// credential files (see sandbox.Spec.Hidden).
	Hidden []string
	// Keep lists directories inside Hidden where workspaces lie (see
	// sandbox.Spec.Keep).
	Keep []string
	// Ledger, when set, is the directory where each command records the
	// placeholders it makes in the workspace (sandbox.Spec.Ledger), so
	// that those a killed runner left are swept (sandbox.SweepPlaceholders).
	Ledger string
}

// RunSetup implements SetupRunner: it writes the command's output to
// s.Log (created or truncated) and returns its exit code, -1 when it was
// stopped (ctx done) or killed by a signal. The returned byte count is
// the output's size.
func (r SandboxSetup) RunSetup(ctx context.Context, s Setup) (int, int64, error) {
	out, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return -1, 0, fmt.Errorf("setup output: %w", err)
	}
	defer out.Close()
	var n int64
	p, err := sandbox.Start(ctx, sandbox.Spec{
		Argv: s.Argv, Env: r.Env, Workspace: s.Dir, Mode: sandbox.WorkspaceWrite,
		Protected: s.Protected, Hidden: r.Hidden, Keep: r.Keep, Ledger: r.Ledger,
	}, func(c sandbox.Chunk) {
		n += int64(len(c.Data))
		_, _ = out.Write(c.Data) // a full disk loses output, not the result
	})
	if err != nil {
		return -1, 0, err
	}
	res, err := p.Wait()
	if err != nil {
		return -1, n, err
	}
	if res.Stopped || res.Signal != "" {
		return -1, n, nil
	}
	return res.ExitCode, n, nil
}

// CheckSpec is a check to run in a workspace.
type CheckSpec struct {
	Dir       string   // the workspace's path: its workspace and working directory
	Argv      []string // sh -c <check>
	Mode      string   // events.ModeWorkspaceWrite or events.ModeReadOnly
	Protected []string // protected_sync files, read-only to the check
}

// CheckRunner runs a workspace's check (SandboxSetup in production).
// RunCheck starts it, calls emit with each piece of its output in order
// (from one goroutine, never concurrently) and returns how it ended. When
// ctx is done it stops the check: SIGTERM to its whole process tree, then
// SIGKILL (sandbox.Process.Stop), and returns once the tree is gone
// (Result.Stopped set). The error wraps sandbox.ErrNotFound,
// sandbox.ErrInvalidSpec or sandbox.ErrRefused when the check could not
// run at all.
type CheckRunner interface {
	RunCheck(ctx context.Context, s CheckSpec, emit func([]byte)) (sandbox.Result, error)
}

// RunCheck implements CheckRunner under the sandbox: s.Mode, the data dir
// and credentials out of sight, no network.
func (r SandboxSetup) RunCheck(ctx context.Context, s CheckSpec, emit func([]byte)) (sandbox.Result, error) {
	mode := sandbox.WorkspaceWrite
	if s.Mode == string(sandbox.ReadOnly) {
		mode = sandbox.ReadOnly
	}
	p, err := sandbox.Start(ctx, sandbox.Spec{
		Argv: s.Argv, Env: r.Env, Workspace: s.Dir, Mode: mode,
		Protected: s.Protected, Hidden: r.Hidden, Keep: r.Keep, Ledger: r.Ledger,
	}, func(c sandbox.Chunk) { emit(c.Data) })
	if err != nil {
		return sandbox.Result{}, err
	}
	return p.Wait()
}
