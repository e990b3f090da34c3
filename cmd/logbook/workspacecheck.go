package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/term"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// hookCommand returns the command line a workspace's pre-push hook runs
// to reach this data dir: this binary when it is called logbook (else
// logbook as found on PATH when the hook runs), with --data.
func hookCommand(dd dataDir) string {
	bin := "logbook"
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "logbook" {
		bin = exe
	}
	abs, err := filepath.Abs(string(dd))
	if err != nil {
		abs = string(dd)
	}
	return wsadapter.ShQuote(bin) + " --data " + wsadapter.ShQuote(abs)
}

// workspaceCheckCmds returns `workspace check`, `workspace checks`,
// `workspace cancel-check` and `workspace hook`.
func workspaceCheckCmds(g *globals) []*cobra.Command {
	var remote string
	run := &cobra.Command{
		Use:   "check ID [--push REMOTE]",
		Short: "Run a workspace's pre-push check and record the run",
		Long: `workspace check runs the check the workspace's project names (check in
.logbook/workspace.toml, with check_timeout, default 10m) with sh -c under
the sandbox (workspace_write, or check_mode = "read_only") in the workspace,
and records the run: the tree it judged (HEAD and a fingerprint of the work
tree), its verdict and the tail of its output; the whole output goes on
lb.out.<run id>. passed is exit status 0; failed a non-zero exit or a run
killed, its whole process tree with it, at the timeout (timed out, never
passed); error a check that could not run (the shell's exit status 126 or
127: not executable, not found); cancelled a run a person stopped
(workspace cancel-check, or an interrupt). Exit status 0 on passed, 1
otherwise; with no check configured it says so (exit status 1). A
workspace whose worktree has no pre-push hook (one made before the hook
existed) gets it first, and the command says so.

--push REMOTE is the workspace's pre-push hook (workspace create installs
it): git's list of refs on standard input, the output on standard error.
The push goes (exit status 0) only on a passed run for the tree pushed:
each pushed commit must be the workspace's HEAD and the work tree clean,
and a passed run of the same check in the same check_mode over the same
fingerprint is reused without running again. What is recorded
(check.push_allowed) is that the check allowed the push, not that it
reached the remote: git sends it after
the hook, and may still fail it, and git push --no-verify skips the hook
(the gate's require_check still applies to an agent's git push). With no
check configured the push goes, and the hook says so.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := wsadapter.CheckRequest{By: personActor(), Output: g.stdout}
			if g.json {
				req.Output = g.stderr
			}
			if cmd.Flags().Changed("push") {
				if remote == "" {
					return usageErrorf("workspace check: --push needs the remote's name")
				}
				refs, err := wsadapter.ParsePushRefs(g.stdin)
				if err != nil {
					return fmt.Errorf("workspace check --push: %w", err)
				}
				req.Push = &wsadapter.PushRequest{Remote: remote, Refs: refs}
				req.Output = g.stderr
			}
			return withWorkspace(cmd.Context(), g, args[0], func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager) error {
				if req.Push == nil {
					// A workspace made before the hook existed gets it now.
					if err := ensureHook(cmd.Context(), g, m, ws); err != nil {
						return err
					}
				}
				req.Workspace, req.Prior = ws.ID, v.Checks[ws.ID]
				res, err := m.Check(cmd.Context(), req)
				if err != nil {
					return err
				}
				return checkAnswer(g, req, res)
			})
		},
	}
	run.Flags().StringVar(&remote, "push", "", "run as the pre-push hook of a push to REMOTE: git's refs on stdin")

	list := &cobra.Command{
		Use:   "checks ID",
		Short: "List a workspace's check runs, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkspaces(cmd.Context(), g, func(_ *backend, _ api.Caller, v api.WorkspacesReply) error {
				ws, err := wsadapter.FindWorkspace(v.Workspaces, args[0])
				if err != nil {
					return err
				}
				runs := nonNil(v.Checks[ws.ID])
				return emit(g, runs, func(w io.Writer) error { return term.CheckRuns(w, runs) })
			})
		},
	}

	var reason string
	cancel := &cobra.Command{
		Use:   "cancel-check RUN [--reason R]",
		Short: "Stop a running check run, as a person: it ends cancelled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withManager(cmd.Context(), g, func(_ api.WorkspacesReply, m *wsadapter.Manager) error {
				st, err := m.CancelCheck(cmd.Context(), args[0], personActor(), reason)
				if err != nil {
					return err
				}
				return answer(g, st, "check run %s: cancel asked by %s\n", term.Field(st.ID), term.Field(st.CancelBy))
			})
		},
	}
	cancel.Flags().StringVar(&reason, "reason", "", "why it is stopped")
	hook := &cobra.Command{
		Use:   "hook ID",
		Short: "Install a workspace's pre-push hook when its worktree has none",
		Long: `workspace hook installs the pre-push hook workspace create installs (the
check runs before each push from the worktree) in a workspace made before
the hook existed, saying so; a workspace that has it is left as it is.
workspace check ID does the same before it runs the check.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkspace(cmd.Context(), g, args[0], func(_ api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager) error {
				installed, err := m.EnsureHook(cmd.Context(), ws.ID)
				if err != nil {
					return err
				}
				if installed {
					fmt.Fprintf(g.stdout, "workspace %s: installed the pre-push hook in %s\n", term.Field(ws.ID), term.Field(ws.Path))
				} else {
					fmt.Fprintf(g.stdout, "workspace %s: the pre-push hook is installed already\n", term.Field(ws.ID))
				}
				return nil
			})
		},
	}
	return []*cobra.Command{run, markReads(list), cancel, hook}
}

// ensureHook installs ws's pre-push hook when its worktree has none,
// saying so on stderr. A workspace that cannot work (archived, failed,
// initializing) is left to the check, which names the fault as its own.
func ensureHook(ctx context.Context, g *globals, m *wsadapter.Manager, ws workspace.State) error {
	if ws.CanWork() != nil {
		return nil
	}
	installed, err := m.EnsureHook(ctx, ws.ID)
	if err != nil {
		return err
	}
	if installed {
		fmt.Fprintf(g.stderr, "logbook: workspace %s had no pre-push hook: installed it in %s\n", term.Field(ws.ID), term.Field(ws.Path))
	}
	return nil
}

// checkAnswer prints a check's result and returns the exit status it
// calls for.
func checkAnswer(g *globals, req wsadapter.CheckRequest, res wsadapter.CheckResult) error {
	if req.Push != nil {
		switch {
		case res.NoCheck != "":
			fmt.Fprintf(g.stderr, "logbook: %s; the push is not checked\n", term.Field(res.NoCheck))
		case res.Refused != "":
			return &exitError{code: 1, err: fmt.Errorf("push refused: %s", res.Refused)}
		case res.Run.ID == "" && len(req.Push.Refs) == 0:
			fmt.Fprintln(g.stderr, "logbook: nothing to push (everything up to date): no check needed")
		case res.Run.ID == "":
			fmt.Fprintln(g.stderr, "logbook: the push sends no commit (deletions only): no check needed")
		case res.Reused:
			fmt.Fprintf(g.stderr, "logbook: %s earlier, for the same tree: not run again\n", term.CheckVerdict(res.Run))
		default:
			fmt.Fprintf(g.stderr, "logbook: %s\n", term.CheckVerdict(res.Run))
		}
		if !res.Allowed {
			return &exitError{code: 1, err: fmt.Errorf("push refused: %s", term.CheckVerdict(res.Run))}
		}
		if res.Run.ID != "" {
			// The record is the check's permission: git sends the push
			// after this, and may still fail it.
			fmt.Fprintf(g.stderr, "logbook: push allowed by check run %s; git sends it now\n", term.Field(res.Run.ID))
		}
		return nil
	}
	if res.NoCheck != "" {
		return &exitError{code: 1, err: errors.New(res.NoCheck)}
	}
	if g.json {
		if err := writeJSON(g.stdout, res.Run); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(g.stdout, term.CheckVerdict(res.Run))
	}
	if res.Run.Status != events.CheckPassed {
		return &exitError{code: 1, err: errors.New(term.CheckVerdict(res.Run))}
	}
	return nil
}
