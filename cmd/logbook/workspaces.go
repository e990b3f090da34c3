package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// newWorkspaceManager returns a workspace manager on b: setup commands
// run here under the sandbox, the data dir and credentials out of their
// sight; when a server runs, an archive asks the commands working in the
// workspace to stop.
func newWorkspaceManager(b *backend, call api.Caller, actor string) (*wsadapter.Manager, error) {
	root, err := wsadapter.DefaultRoot()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	// Names, titles, ids and folders a rule of the data dir takes for a
	// secret are refused, by the rules serve follows when it runs.
	red, err := b.redactor()
	if err != nil {
		return nil, err
	}
	sb := worker.WorkspaceSandbox(string(b.dd))
	sb.Ledger = b.dd.path(placeholderLedger)
	cfg := wsadapter.Config{Log: b.log, Reg: b.reg, Host: host, Actor: actor, Root: root,
		Setup: sb, Redactor: red, Hook: hookCommand(b.dd)}
	if b.remote {
		// Only a server's workers run commands: without one, none runs.
		if cfg.Stop, err = commandStopper(b, call); err != nil {
			return nil, err
		}
	}
	return wsadapter.New(cfg)
}

// commandStopper returns what stops the commands working in a folder
// (worker.Client.StopIn through call, on the person's word), for a
// workspace being archived.
func commandStopper(b *backend, call api.Caller) (func(context.Context, string) error, error) {
	cl, err := newCommandClient(b)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, path string) error { return cl.StopIn(ctx, call, path, personActor()) }, nil
}

// withWorkspaces runs fn through the API (withAPI) with the whole
// workspace view, read first.
func withWorkspaces(ctx context.Context, g *globals, fn func(b *backend, call api.Caller, v api.WorkspacesReply) error) error {
	return withAPI(ctx, g, func(b *backend, call api.Caller) error {
		var v api.WorkspacesReply
		if err := call(ctx, api.VerbWorkspaces, struct{}{}, &v); err != nil {
			return err
		}
		return fn(b, call, v)
	})
}

// withWorkspace runs fn (withWorkspaces) on the workspace ref names (its
// id, or a key only one workspace has) and a manager that acts for the
// person running the command.
func withWorkspace(ctx context.Context, g *globals, ref string, fn func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager) error) error {
	return withManager(ctx, g, func(v api.WorkspacesReply, m *wsadapter.Manager) error {
		ws, err := wsadapter.FindWorkspace(v.Workspaces, ref)
		if err != nil {
			return err
		}
		return fn(v, ws, m)
	})
}

// withWorkspaceSession is withWorkspace for a command that acts as the
// session sess names: an id or a unique prefix of one, resolved as exec
// resolves its --session (resolveSession), so that fn gets the whole id
// ("" when sess is "": a person acts). A session no id is or begins with
// is an error wrapping events.ErrNotFound naming it; an ambiguous prefix
// is a usage error listing the ids (flagSession, led by flag).
func withWorkspaceSession(ctx context.Context, g *globals, ref, flag, sess string, fn func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager, sess string) error) error {
	return withWorkspaces(ctx, g, func(b *backend, call api.Caller, v api.WorkspacesReply) error {
		ws, err := wsadapter.FindWorkspace(v.Workspaces, ref)
		if err != nil {
			return err
		}
		id, err := flagSession(ctx, b, flag, sess)
		if err != nil {
			return err
		}
		m, err := newWorkspaceManager(b, call, personActor())
		if err != nil {
			return err
		}
		return fn(v, ws, m, id)
	})
}

// flagSession returns the whole id of the session sess (a --session
// flag's value, an id or a unique prefix of one) names, as
// resolveSession finds it; "" for "". Its errors are resolveSession's
// (exit 1 for an unknown session, 2 for an ambiguous prefix), led by
// flag, the command and flag ("workspace create: --session").
func flagSession(ctx context.Context, b *backend, flag, sess string) (string, error) {
	if sess == "" {
		return "", nil
	}
	id, err := resolveSession(ctx, b, sess)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return id, nil
}

// withManager runs fn (withWorkspaces) with a manager that acts for the
// person running the command.
func withManager(ctx context.Context, g *globals, fn func(v api.WorkspacesReply, m *wsadapter.Manager) error) error {
	return withWorkspaces(ctx, g, func(b *backend, call api.Caller, v api.WorkspacesReply) error {
		m, err := newWorkspaceManager(b, call, personActor())
		if err != nil {
			return err
		}
		return fn(v, m)
	})
}

func projectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Add and list projects: git repositories workspaces are made from"}
	var name string
	add := &cobra.Command{
		Use:   "add PATH [--name N]",
		Short: "Add the git repository whose top level is PATH",
		Long: `project add records the repository whose top level is PATH as a project
(named --name, else the folder's name). Its storage key, a slug of the name,
names the folder its workspaces go in. Adding a folder again answers the same
project, with its name: a different --name is not applied, and a line on
stderr says so. A folder that is no repository, a subdirectory of one or a linked
worktree is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmptyArg("project add", "PATH", "name the top level of a git repository (. for this folder)", args); err != nil {
				return err
			}
			if err := refuseSecrets(g, "project add", typedField{"--name", "name", []string{name, project.Slug(name)}},
				typedField{"PATH", "folder", []string{args[0]}}); err != nil {
				return err
			}
			return withManager(cmd.Context(), g, func(v api.WorkspacesReply, m *wsadapter.Manager) error {
				p, err := m.AddProject(cmd.Context(), args[0], name, wsadapter.ProjectKeys(v.Projects))
				if err != nil {
					return err
				}
				if name != "" && p.Name != name {
					// Adding a folder again answers the project it is: its
					// name stays, and the caller hears so.
					fmt.Fprintf(g.stderr, "logbook: project add: %s is already project %s (%s), named %s; --name %s is not applied (a project keeps the name it was added with)\n",
						term.Safe(p.Path), p.Key, p.ID, term.Safe(p.Name), term.Safe(name))
				}
				return answer(g, p, "project %s (%s) at %s, trunk %s\n", p.Key, p.ID, p.Path, p.Trunk)
			})
		},
	}
	add.Flags().StringVar(&name, "name", "", "the project's name (default: the folder's name)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List projects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWorkspaces(cmd.Context(), g, func(_ *backend, _ api.Caller, v api.WorkspacesReply) error {
				return emit(g, nonNil(v.Projects), func(w io.Writer) error { return term.Projects(w, v.Projects) })
			})
		},
	}
	cmd.AddCommand(add, markReads(list))
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func workspaceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "Create, list, show, rename, check and archive workspaces: git worktrees of a project"}
	var cf struct {
		project, name, base, id, session string
		placeholder                      bool
	}
	create := &cobra.Command{
		Use:   "create --project P --name N [--base REF] [--id ID] [--session S]",
		Short: "Create a workspace: a git worktree of project P on branch worktree/<key>",
		Long: `workspace create reserves a workspace of project P (its id, key, name or
folder) and materializes it, each step an event: the base (with no --base,
origin is fetched and origin/<trunk> used, else the local trunk; --base REF
is used exactly), git worktree add -b worktree/<key> in
$LOGBOOK_WORKSPACES/<project key>/<key> (default
$XDG_DATA_HOME/logbook-workspaces/...), the project's sync and
protected_sync files, and its setup_commands run as sandboxed commands
(they need a running server), all from .logbook/workspace.toml. The
worktree gets a pre-push hook of its own that runs the project's check
(see workspace check). The project's own work tree, HEAD and branches are
never touched.

--id makes the create idempotent: the same id again answers the same
workspace. --session S makes session S its owner: only S (or a person)
archives it. It prints the workspace ready, or failed with the step and
reason (exit status 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cf.project == "" || cf.name == "" {
				return usageErrorf("workspace create: --project and --name are required")
			}
			if err := refuseSecrets(g, "workspace create", typedField{"--name", "name", []string{cf.name, project.Slug(cf.name)}},
				typedField{"--id", "id", []string{cf.id}}, typedField{"--session", "session id", []string{cf.session}},
				typedField{"--base", "ref", []string{cf.base}}); err != nil {
				return err
			}
			if cf.id != "" {
				// A malformed id is the caller's mistake, as exec's --id:
				// a usage error before anything is asked of the server
				// (after the secret check: one that is a secret is
				// refused as one, never quoted).
				if err := events.ValidID(cf.id); err != nil {
					return usageErrorf("workspace create: --id: %v", err)
				}
			}
			return withWorkspaces(cmd.Context(), g, func(b *backend, call api.Caller, v api.WorkspacesReply) error {
				p, err := wsadapter.FindProject(v.Projects, cf.project)
				if err != nil {
					return fmt.Errorf("workspace create: %w", err)
				}
				owner, err := flagSession(cmd.Context(), b, "workspace create: --session", cf.session)
				if err != nil {
					return err
				}
				m, err := newWorkspaceManager(b, call, personActor())
				if err != nil {
					return err
				}
				ws, err := m.Create(cmd.Context(), wsadapter.CreateRequest{Project: p.ID, Name: cf.name, Base: cf.base, ID: cf.id, Session: owner, Placeholder: cf.placeholder})
				if err != nil {
					return err
				}
				if g.json {
					if err := writeJSON(g.stdout, ws); err != nil {
						return err
					}
				} else {
					term.WorkspaceLine(g.stdout, ws)
				}
				if ws.Status == workspace.StatusFailed {
					return &exitError{code: 1, err: fmt.Errorf("workspace %s failed at %s: %s", ws.ID, ws.FailStep, ws.FailReason)}
				}
				return nil
			})
		},
	}
	fl := create.Flags()
	fl.StringVar(&cf.project, "project", "", "the project: its id, key, name or folder (required)")
	fl.StringVar(&cf.name, "name", "", "the workspace's name; its slug is the storage key (required)")
	fl.StringVar(&cf.base, "base", "", "the ref to fork from (default: origin/<trunk> after a fetch, else the local trunk)")
	fl.StringVar(&cf.id, "id", "", "the workspace id (default: a new ULID); the same id again answers the same workspace")
	fl.StringVar(&cf.session, "session", "", "the session that owns it, an id or a unique prefix (default: none; a person made it)")
	fl.BoolVar(&cf.placeholder, "placeholder", false, "the name is a stand-in: the first session that names itself in the workspace names it")

	var lf struct{ project, owner, status string }
	list := &cobra.Command{
		Use:   "list [--project P] [--owned-by S] [--status S]",
		Short: "List workspaces, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWorkspaces(cmd.Context(), g, func(b *backend, _ api.Caller, v api.WorkspacesReply) error {
				pid := ""
				if lf.project != "" {
					p, err := wsadapter.FindProject(v.Projects, lf.project)
					if err != nil {
						return err
					}
					pid = p.ID
				}
				owner, err := flagSession(cmd.Context(), b, "workspace list: --owned-by", lf.owner)
				if err != nil {
					return err
				}
				out := wsadapter.Filter(v.Workspaces, pid, owner, lf.status)
				return emit(g, out, func(w io.Writer) error { return term.Workspaces(w, out, v.Sessions) })
			})
		},
	}
	list.Flags().StringVar(&lf.project, "project", "", "only this project's workspaces")
	list.Flags().StringVar(&lf.owner, "owned-by", "", "only the workspaces this session owns (an id or a unique prefix)")
	list.Flags().StringVar(&lf.status, "status", "", "only workspaces in this status (initializing, ready, failed, archiving, archived)")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a workspace: status, branch, path, owner, sessions (most recently active first), tasks and changes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkspace(cmd.Context(), g, args[0], func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager) error {
				r := term.ShowOf(cmd.Context(), v, ws, m.Changes)
				return emit(g, r, func(w io.Writer) error { return term.Workspace(w, r, time.Now()) })
			})
		},
	}

	var (
		archiveSession string
		archiveForce   bool
	)
	archive := &cobra.Command{
		Use:   "archive ID [--session S] [--force]",
		Short: "Archive a workspace: at once and for good; its commands stop and its worktree is removed after",
		Long: `workspace archive marks the workspace archiving and archived at once (it
can no longer be worked in), asks its running commands to stop, then removes
its worktree and folder (its branch stays). A failed cleanup is recorded; the
workspace stays archived. With --session S, session S archives it and must
own it; without, a person does, recorded as such.

A worktree that holds work not committed (files changed, staged or deleted,
untracked files git does not ignore: git status) is not archived: the
command names the paths and records nothing. Commit the work first, or pass
--force to archive the workspace and remove that work with it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseSecrets(g, "workspace archive", typedField{"--session", "session id", []string{archiveSession}}); err != nil {
				return err
			}
			return withWorkspaceSession(cmd.Context(), g, args[0], "workspace archive: --session", archiveSession, func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager, sess string) error {
				by, as := wsadapter.Acting(sess, personActor())
				st, err := m.ArchiveAndClean(cmd.Context(), ws.ID, by, as, archiveForce, func(st workspace.State) {
					if !g.json {
						fmt.Fprintf(g.stdout, "workspace %s archived\n", st.ID)
					}
				})
				if err != nil {
					return err
				}
				if g.json {
					return writeJSON(g.stdout, st)
				}
				if st.Cleanup == workspace.CleanupFailed {
					fmt.Fprintf(g.stderr, "logbook: cleanup of workspace %s failed (it stays archived): %s\n", st.ID, term.Safe(st.CleanupErr))
				} else {
					fmt.Fprintf(g.stdout, "removed %s\n", term.Safe(st.Path))
				}
				return nil
			})
		},
	}
	archive.Flags().StringVar(&archiveSession, "session", "", "the session that archives it, an id or a unique prefix (it must own it); default: you, as a person")
	archive.Flags().BoolVar(&archiveForce, "force", false, "archive it even though its worktree holds work not committed, which is removed with it")

	var renameSession string
	rename := &cobra.Command{
		Use:   "rename ID NAME [--session S]",
		Short: "Rename a workspace and its branch; the folder never moves",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseSecrets(g, "workspace rename", typedField{"NAME", "name", []string{args[1], project.Slug(args[1])}},
				typedField{"--session", "session id", []string{renameSession}}); err != nil {
				return err
			}
			return withWorkspaceSession(cmd.Context(), g, args[0], "workspace rename: --session", renameSession, func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager, sess string) error {
				by, as := wsadapter.Acting(sess, "")
				st, err := m.Rename(cmd.Context(), ws.ID, args[1], by, as)
				if err != nil {
					return err
				}
				if sess != "" && st.Name != args[1] {
					// A session names only a placeholder (workspace.Decide):
					// its name for one named otherwise is no change, and
					// the caller hears so rather than guessing from the line.
					fmt.Fprintf(g.stderr, "logbook: workspace rename: workspace %s keeps its name %s: session %s names only a workspace whose name is a placeholder (rename it without --session to rename it as a person)\n",
						st.ID, term.Safe(st.Name), sess)
				}
				if g.json {
					return writeJSON(g.stdout, st)
				}
				return term.WorkspaceLine(g.stdout, st)
			})
		},
	}
	rename.Flags().StringVar(&renameSession, "session", "", "the session naming itself, an id or a unique prefix (a session's name replaces only a placeholder); default: you, as a person")
	cmd.AddCommand(create, markReads(list), markReads(show), archive, rename)
	cmd.AddCommand(workspaceCheckCmds(g)...)
	return cmd
}

func taskCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Delegated work: list, show and record tasks"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List tasks, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWorkspaces(cmd.Context(), g, func(_ *backend, _ api.Caller, v api.WorkspacesReply) error {
				return emit(g, nonNil(v.Tasks), func(w io.Writer) error { return term.Tasks(w, v.Tasks) })
			})
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withWorkspaces(cmd.Context(), g, func(_ *backend, _ api.Caller, v api.WorkspacesReply) error {
				t, err := wsadapter.FindTask(v.Tasks, args[0])
				if err != nil {
					return err
				}
				return emit(g, t, func(w io.Writer) error { return term.Task(w, t) })
			})
		},
	}
	var df struct{ id, ws, parent, title string }
	delegate := &cobra.Command{
		Use:   "delegate --workspace W --session PARENT --title T [--id ID]",
		Short: "Record that session PARENT delegated work to workspace W",
		Long: `task delegate records a task: session PARENT delegated work titled T to
workspace W. The task runs once another session is seen working in W, and
completes or fails only with that session's real end (logbook serve moves
tasks along).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if df.ws == "" || df.parent == "" {
				return usageErrorf("task delegate: --workspace and --session are required")
			}
			if err := refuseSecrets(g, "task delegate", typedField{"--id", "id", []string{df.id}},
				typedField{"--session", "session id", []string{df.parent}}, typedField{"--title", "title", []string{df.title}}); err != nil {
				return err
			}
			if df.id != "" {
				if err := events.ValidID(df.id); err != nil {
					return usageErrorf("task delegate: --id: %v", err)
				}
			}
			return withWorkspaceSession(cmd.Context(), g, df.ws, "task delegate: --session", df.parent, func(v api.WorkspacesReply, ws workspace.State, m *wsadapter.Manager, parent string) error {
				t, err := m.Delegate(cmd.Context(), df.id, ws.ID, parent, df.title)
				if err != nil {
					return err
				}
				return answer(g, t, "task %s %s in workspace %s\n", t.ID, t.Status, t.Workspace)
			})
		},
	}
	delegate.Flags().StringVar(&df.id, "id", "", "the task id (default: a new ULID)")
	delegate.Flags().StringVar(&df.ws, "workspace", "", "the workspace the work goes to (required)")
	delegate.Flags().StringVar(&df.parent, "session", "", "the session that delegates, an id or a unique prefix (required)")
	delegate.Flags().StringVar(&df.title, "title", "", "what the task is")
	cmd.AddCommand(markReads(list), markReads(show), delegate)
	return cmd
}

// runWorkspaces is serve's workspace actor (wsadapter.Manager.Follow),
// its manager acting as "logbook" and stopping the commands of an
// archived workspace through serve's own workers.
func runWorkspaces(ctx context.Context, b *backend, svc *api.Service, stderr io.Writer) error {
	call := api.Local(svc.Handlers())
	m, err := newWorkspaceManager(b, call, "logbook")
	if err != nil {
		return err
	}
	if stop, err := commandStopper(b, call); err == nil {
		// serve's own backend is not remote, yet its workers run commands.
		m.SetStop(stop)
	}
	return m.Follow(ctx, wsadapter.FollowConfig{
		Views: svc.Store, CaughtUp: svc.CaughtUp, Every: wsadapter.FollowEvery,
		Report: func(msg string) { servelog.SayPart(stderr, "workspaces", msg) },
	})
}
