// Package workspace makes and archives the git worktrees of Logbook's
// workspace aggregates, each step an event on the log: it adds projects,
// reserves workspaces (idempotent by the requested id), materializes them
// (base, `git worktree add`, sync files, setup commands), recovers a
// materialization a crash interrupted, renames, archives and cleans up,
// measures what changed, and moves delegated tasks along (Follow, serve's
// workspace actor); FindProject and FindWorkspace resolve what a person
// calls one.
//
// Decisions go through reducers/project, reducers/workspace and
// reducers/task with optimistic concurrency on each aggregate's subject;
// git runs as the user, in the project's repository, and never touches
// the project's own work tree, HEAD or branches (a fetch updates only
// remote-tracking refs).
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
	"github.com/logbook-dev/logbook/sandbox"
)

// EnvRoot names the variable that overrides the workspaces root.
const EnvRoot = "LOGBOOK_WORKSPACES"

// DefaultRoot returns where new workspaces go: $LOGBOOK_WORKSPACES, else
// $XDG_DATA_HOME/logbook-workspaces, else
// ~/.local/share/logbook-workspaces: beside the default data dir, not in
// it, so that a session working in a workspace is not taken for one
// reaching into the data dir (the gate's guard), and what restricted
// commands must not see of the data dir stays one hidden path. A
// workspace's path is fixed when it is reserved, so changing the root
// affects only new workspaces; LegacyRoot is where they went before.
func DefaultRoot() (string, error) {
	if r := os.Getenv(EnvRoot); r != "" {
		return filepath.Abs(r)
	}
	share, err := dataHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(share, "logbook-workspaces"), nil
}

// LegacyRoot returns where new workspaces went by default before they
// moved beside the data dir: $XDG_DATA_HOME/logbook/workspaces, else
// ~/.local/share/logbook/workspaces, inside the default data dir.
// Workspaces reserved there stay there.
func LegacyRoot() (string, error) {
	share, err := dataHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(share, "logbook", "workspaces"), nil
}

// dataHome returns $XDG_DATA_HOME, else ~/.local/share.
func dataHome() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return x, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("workspaces root: %w (set %s)", err, EnvRoot)
	}
	return filepath.Join(home, ".local", "share"), nil
}

// Setup is one setup command to run in a workspace.
type Setup struct {
	Dir       string   // the workspace's path: the command's workspace and working directory
	Argv      []string // sh -c <setup command>
	Protected []string // protected_sync files, read-only to the command
	Log       string   // the file its output goes to
}

// SetupRunner runs setup commands (SandboxSetup in production).
// RunSetup returns the command's exit code (-1 when it did not exit on
// its own: stopped because ctx was done, or killed) and its output's size
// in bytes, or an error when it could not run (no bubblewrap, say). It
// blocks until the command ends; when ctx is done it stops the command.
type SetupRunner interface {
	RunSetup(ctx context.Context, s Setup) (int, int64, error)
}

// Config configures a Manager. Log and Reg are required.
type Config struct {
	Log   events.Log
	Reg   *events.Registry
	IDs   events.IDSource // nil means ulid.Make
	Clock events.Clock    // nil means time.Now
	Host  string          // stamped on events and part of the runner id
	Actor string          // stamped on events: a user name or "logbook"
	// Root is the workspaces root (see DefaultRoot); required to create.
	Root string
	// Setup runs setup commands; nil refuses workspaces that have some.
	Setup SetupRunner
	// Poll is how often a running setup command's workspace is checked
	// for an archive, which stops the command; 0 means 250 ms.
	Poll time.Duration
	// Stop asks every active command whose workspace lies under path to
	// stop; nil stops nothing.
	Stop func(ctx context.Context, path string) error
	// Hook is the command line the pre-push hook a new workspace gets
	// runs to reach Logbook (e.g. `'/usr/bin/logbook' --data '/d'`),
	// quoted for sh; "" installs no hook (see InstallHook).
	Hook string
	// Redactor holds the rules a name, title, id, ref or folder given to
	// the manager must not match (see Manager); nil means
	// redact.Default(). A caller with a data dir gives its rules
	// (redact.txt over the built-in ones).
	Redactor *redact.Redactor
	// MaxCheckOutput caps the output a check run stores on its output
	// subject, in bytes; 0 means DefaultMaxCheckOutput. Past it the run
	// goes on, its output is counted (check.ended's output_bytes) and its
	// tail kept in check.ended, and no more is stored.
	MaxCheckOutput int64
}

// DefaultMaxCheckOutput is Config.MaxCheckOutput's default: 64 MiB, as a
// command's (adapters/worker's DefaultMaxOutputBytes).
const DefaultMaxCheckOutput = 64 << 20

// Manager carries out workspace requests. It is safe for concurrent use.
//
// What a request names is kept on the log for good and, for a name, in
// git and on disk (a workspace's name becomes its storage key, the
// folder it is made in and its branch): a project's name and folder, a
// workspace's name (and the slug of it), base ref, id and owning session,
// a task's id, title and delegating session, a renaming or archiving
// session. None is ever rewritten: a value a rule of Config.Redactor
// matches is refused before anything is appended or run, with an error
// wrapping events.ErrRejected and a *redact.FieldError naming the field
// and the rule, never the value.
type Manager struct {
	cfg        Config
	runner     string
	projects   *events.Executor[project.State]
	workspaces *events.Executor[workspace.State]
	tasks      *events.Executor[task.State]
	checks     *events.Executor[check.State]

	// watched is when this manager first saw each running check run
	// (EndVanishedChecks), by this process's monotonic clock.
	watchMu sync.Mutex
	watched map[string]time.Time
}

// New returns a Manager for cfg.
func New(cfg Config) (*Manager, error) {
	if cfg.Log == nil || cfg.Reg == nil {
		return nil, errors.New("workspace manager: Log and Reg are required")
	}
	if cfg.IDs == nil {
		cfg.IDs = ulid.Make
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default()
	}
	m := &Manager{cfg: cfg, runner: RunnerID(cfg.Host, os.Getpid(), cfg.IDs().String())}
	m.projects = &events.Executor[project.State]{Log: cfg.Log, Reg: cfg.Reg, Init: project.Init,
		Evolve: func(s project.State, e events.Envelope) project.State { return project.Evolve(s, e) },
		IDs:    cfg.IDs, Host: cfg.Host, Actor: cfg.Actor}
	m.workspaces = &events.Executor[workspace.State]{Log: cfg.Log, Reg: cfg.Reg, Init: workspace.Init,
		Evolve: func(s workspace.State, e events.Envelope) workspace.State { return workspace.Evolve(s, e) },
		IDs:    cfg.IDs, Host: cfg.Host, Actor: cfg.Actor}
	m.tasks = &events.Executor[task.State]{Log: cfg.Log, Reg: cfg.Reg, Init: task.Init,
		Evolve: func(s task.State, e events.Envelope) task.State { return task.Evolve(s, e) },
		IDs:    cfg.IDs, Host: cfg.Host, Actor: cfg.Actor}
	m.checks = &events.Executor[check.State]{Log: cfg.Log, Reg: cfg.Reg, Init: check.Init,
		Evolve: func(s check.State, e events.Envelope) check.State { return check.Evolve(s, e) },
		IDs:    cfg.IDs, Host: cfg.Host, Actor: cfg.Actor}
	return m, nil
}

// SetStop sets Config.Stop. Call it before the manager is used.
func (m *Manager) SetStop(stop func(ctx context.Context, path string) error) { m.cfg.Stop = stop }

// Runner returns the id this manager's materializations record:
// "<host>/<pid>/<process start>/<ulid>".
func (m *Manager) Runner() string { return m.runner }

// RunnerID returns a runner id for process pid on host: the host, the
// pid, the process's start time in clock ticks after boot (0 when
// unknown) and a unique suffix.
func RunnerID(host string, pid int, suffix string) string {
	return fmt.Sprintf("%s/%d/%d/%s", host, pid, procStartOr0(pid), suffix)
}

// procStartOr0 returns the start time of process pid in clock ticks
// after boot (sandbox.ProcStart), 0 when it cannot be read.
func procStartOr0(pid int) uint64 {
	v, _ := sandbox.ProcStart(pid)
	return v
}

// RunnerAlive reports whether the process a runner id names still runs:
// on this host (host), the same pid with the same start time. A runner of
// another host counts as alive: this host cannot tell.
func RunnerAlive(runner, host string) bool {
	parts := strings.SplitN(runner, "/", 4)
	if len(parts) != 4 {
		return false
	}
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	start := procStartOr0(pid)
	return start != 0 && strconv.FormatUint(start, 10) == parts[2]
}

func (m *Manager) now() time.Time { return m.cfg.Clock().UTC().Truncate(time.Microsecond) }

// field is one value a request names, for refuse.
type field struct {
	name, noun string   // as in redact.FieldError: "name", "name"
	values     []string // the value and what is made of it (its slug)
}

// refuse returns, prefixed by op and wrapping events.ErrRejected, the
// redact.FieldError of the first of fields a rule of the manager's
// Redactor matches, or nil.
func (m *Manager) refuse(op string, fields ...field) error {
	for _, f := range fields {
		if err := m.cfg.Redactor.CheckField(f.name, f.noun, f.values...); err != nil {
			return fmt.Errorf("%s: %w: %w", op, events.ErrRejected, err)
		}
	}
	return nil
}

// cause returns a cause of kind "cli" for event (the request's verb) with
// a fresh reference.
func (m *Manager) cause(event, detail string) events.Cause {
	return events.Cause{Kind: "cli", Event: event, Detail: detail, Ref: m.cfg.IDs().String()}
}

// ProjectID returns the project id Logbook gives the repository at path
// (absolute, symlinks resolved): "p-" and 16 hex digits of its SHA-256,
// so adding one folder twice names one project.
func ProjectID(path string) string {
	sum := sha256.Sum256([]byte(path))
	return "p-" + hex.EncodeToString(sum[:8])
}

// AddProject adds the repository whose top level is dir, named name
// (default: the folder's name), with a storage key free among taken (the
// keys of the other projects). Adding a folder again answers its
// project. Errors: dir is no repository, a subdirectory of one, or a
// linked worktree; the name slugs to nothing (events.ErrRejected); the
// name, its slug or the folder holds what a rule takes for a secret
// (events.ErrRejected and a *redact.FieldError: see Manager).
func (m *Manager) AddProject(ctx context.Context, dir, name string, taken map[string]string) (project.State, error) {
	if err := m.refuse("project add", field{"name", "name", []string{name, project.Slug(name)}}, field{"folder", "folder", []string{dir}}); err != nil {
		return project.State{}, err
	}
	path, err := CheckProject(ctx, dir)
	if err != nil {
		return project.State{}, err
	}
	if err := m.refuse("project add", field{"folder", "folder", []string{path}}); err != nil {
		return project.State{}, err
	}
	id := ProjectID(path)
	agg := events.Aggregate{Kind: events.KindProject, ID: id}
	if st, err := m.projects.State(ctx, agg); err != nil {
		return st, err
	} else if st.Exists() {
		return st, nil
	}
	if name == "" {
		name = filepath.Base(path)
	}
	if err := m.refuse("project add", field{"name", "name", []string{project.Slug(name)}}); err != nil {
		return project.State{}, err
	}
	key, err := project.FreeKey(taken, name)
	if err != nil {
		return project.State{}, fmt.Errorf("project add: %w", err)
	}
	trunk, err := Trunk(ctx, path)
	if err != nil {
		return project.State{}, err
	}
	cmd := project.Add{Name: name, Key: key, Path: path, Trunk: trunk, At: m.now(), Cause: m.cause("project add", path)}
	_, st, err := m.projects.Execute(ctx, agg, func(s project.State) (events.Decision, error) { return project.Decide(s, cmd) })
	return st, err
}

// Project returns project id as the log has it now; the error wraps
// events.ErrNotFound when it was never added.
func (m *Manager) Project(ctx context.Context, id string) (project.State, error) {
	st, err := m.projects.State(ctx, events.Aggregate{Kind: events.KindProject, ID: id})
	if err == nil && !st.Exists() {
		err = fmt.Errorf("project %s: %w", id, events.ErrNotFound)
	}
	return st, err
}

// Workspace returns workspace id as the log has it now; the error wraps
// events.ErrNotFound when it was never reserved.
func (m *Manager) Workspace(ctx context.Context, id string) (workspace.State, error) {
	st, err := m.workspaces.State(ctx, events.Aggregate{Kind: events.KindWorkspace, ID: id})
	if err == nil && !st.Exists() {
		err = fmt.Errorf("workspace %s: %w", id, events.ErrNotFound)
	}
	return st, err
}

// CreateRequest asks for a workspace.
type CreateRequest struct {
	Project string // the project id
	Name    string // its name; its slug is the storage key
	Base    string // the base ref; "" means origin/<trunk> (fetched), else the local trunk
	ID      string // the workspace id; "" means a new ULID. The same id again answers the same workspace.
	Session string // the owning session; "" when a person asks
	// Placeholder marks Name as a stand-in the first session naming
	// itself in the workspace replaces.
	Placeholder bool
}

// Create reserves and materializes a workspace, and returns it ready or
// failed (with the step and the reason). A workspace that exists under
// req.ID is answered as it is; one a concurrent create of the same id
// reserved first is answered once that create is done with it.
// Refused before anything is appended: an unknown project
// (events.ErrNotFound), a project that is no longer the top level of a
// repository, an unknown base ref, a name that slugs to nothing, an id
// that is no valid aggregate id or names a workspace of another project,
// a name (or its slug), id, session or base a rule takes for a secret
// (events.ErrRejected and a *redact.FieldError: see Manager).
func (m *Manager) Create(ctx context.Context, req CreateRequest) (workspace.State, error) {
	if err := m.refuse("workspace create",
		field{"name", "name", []string{req.Name, project.Slug(req.Name)}}, field{"id", "id", []string{req.ID}},
		field{"session", "session id", []string{req.Session}}, field{"base", "ref", []string{req.Base}}); err != nil {
		return workspace.State{}, err
	}
	if req.ID == "" {
		req.ID = m.cfg.IDs().String()
	}
	if err := events.ValidID(req.ID); err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: id: %w", err)
	}
	if req.Session != "" {
		if err := events.ValidID(req.Session); err != nil {
			return workspace.State{}, fmt.Errorf("workspace create: session: %w", err)
		}
	}
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: req.ID}
	if st, err := m.workspaces.State(ctx, agg); err != nil {
		return st, err
	} else if st.Exists() {
		if st.Project != req.Project {
			return st, fmt.Errorf("workspace create: %w: id %s names a workspace of project %s", events.ErrRejected, req.ID, st.Project)
		}
		if st.Gone() {
			return st, fmt.Errorf("workspace create: %w: id %s names a workspace that is %s: give another id", events.ErrRejected, req.ID, st.Status)
		}
		return st, nil
	}
	p, err := m.Project(ctx, req.Project)
	if err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: %w", err)
	}
	if _, err := CheckProject(ctx, p.Path); err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: %w", err)
	}
	if req.Base != "" {
		if _, err := ResolveBase(ctx, p.Path, p.Trunk, req.Base); err != nil {
			return workspace.State{}, fmt.Errorf("workspace create: %w", err)
		}
	}
	if m.cfg.Root == "" {
		return workspace.State{}, errors.New("workspace create: no workspaces root")
	}
	if err := workspace.ValidName(req.Name); err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: %w", err)
	}
	if _, err := project.FreeKey(nil, req.Name); err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: %w", err)
	}
	cause := m.cause("workspace create", req.ID)
	_, ps, err := m.projects.Execute(ctx, p.Agg(), func(s project.State) (events.Decision, error) {
		return project.Decide(s, project.ReserveKey{Workspace: req.ID, Name: req.Name, At: m.now(), Cause: cause})
	})
	if err != nil {
		return workspace.State{}, fmt.Errorf("workspace create: %w", err)
	}
	key := ps.Workspaces[req.ID]
	// A name given in the request is the one who asked's (a person's);
	// a placeholder a session asked for is its chat's to name.
	named := events.ByPerson
	if req.Session != "" && req.Placeholder {
		named = events.ByChat
	}
	res := workspace.Reserve{
		Project: p.ID, Name: req.Name, Key: key, Path: filepath.Join(m.cfg.Root, p.Key, key), Branch: "worktree/" + key,
		Base: req.Base, OwnedBy: req.Session, NamedBy: named, Placeholder: req.Placeholder, Runner: m.runner,
		At: m.now(), Cause: cause,
	}
	ap, st, err := m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, res) })
	if err != nil {
		return st, fmt.Errorf("workspace create: %w", err)
	}
	if ap.First == 0 || st.Runner != m.runner {
		// Another create of this id reserved it first: its answer is
		// that create's.
		return m.await(ctx, st)
	}
	return m.materialize(ctx, st, p)
}

// await returns workspace st once it is no longer initializing, or as it
// is when its runner is gone (a restart takes it over) or ctx is done.
func (m *Manager) await(ctx context.Context, st workspace.State) (workspace.State, error) {
	poll := m.cfg.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	for st.Status == workspace.StatusInitializing && RunnerAlive(st.Runner, m.cfg.Host) {
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(poll):
		}
		cur, err := m.Workspace(ctx, st.ID)
		if err != nil {
			return st, err
		}
		st = cur
	}
	return st, nil
}

// materialize takes st, an initializing workspace whose runner is this
// manager, through its remaining steps and returns it ready, failed, or
// as another decision left it (archived meanwhile, taken over).
func (m *Manager) materialize(ctx context.Context, st workspace.State, p project.State) (workspace.State, error) {
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: st.ID}
	stopped := false
	step := func(ev events.Payload) error {
		if stopped {
			return nil
		}
		cmd := workspace.Step{Runner: m.runner, Event: ev, At: m.now(), Cause: m.cause("workspace materialize", ev.EventType())}
		_, s, err := m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
		if errors.Is(err, events.ErrRejected) {
			stopped = true // archived meanwhile, or taken over: the rest is not ours
			return nil
		}
		if err == nil {
			st = s
		}
		return err
	}
	fail := func(stepName string, reason error) (workspace.State, error) {
		if err := step(events.WorkspaceFailed{Runner: m.runner, Step: stepName, Reason: reason.Error()}); err != nil {
			return st, err
		}
		return m.Workspace(ctx, st.ID)
	}
	if st.BaseCommit == "" {
		b, err := ResolveBase(ctx, p.Path, p.Trunk, st.BaseAsked)
		if err != nil {
			return fail("base", err)
		}
		if err := step(events.WorkspaceBaseResolved{Runner: m.runner, Ref: b.Ref, Commit: b.Commit, Fetched: b.Fetched, Fallback: b.Fallback}); err != nil || stopped {
			return m.after(ctx, st, err)
		}
	}
	if !st.Worktree {
		adopted, err := m.addWorktree(ctx, p.Path, st)
		if err != nil {
			return fail(err.step, err.err)
		}
		if err := step(events.WorkspaceWorktreeAdded{Runner: m.runner, Path: st.Path, Branch: st.Branch, Commit: st.BaseCommit, Adopted: adopted}); err != nil || stopped {
			return m.after(ctx, st, err)
		}
	}
	cfg, err := LoadConfig(p.Path)
	if err != nil {
		return fail("sync", err)
	}
	if !st.SyncDone {
		ev, err := syncFiles(p.Path, st.Path, cfg)
		if err != nil {
			return fail("sync", err)
		}
		if err := writeProtected(ctx, st.Path, ev.Protected); err != nil {
			return fail("sync", err)
		}
		if m.cfg.Hook != "" {
			if err := InstallHook(ctx, p.Path, st.Path, st.ID, m.cfg.Hook); err != nil {
				return fail("sync", err)
			}
		}
		ev.Runner = m.runner
		if err := step(ev); err != nil || stopped {
			return m.after(ctx, st, err)
		}
	}
	for i := st.SetupRan; i < len(cfg.SetupCommands); i++ {
		if m.cfg.Setup == nil {
			return fail("setup", errors.New("setup commands need bubblewrap's sandbox, which this command does not run"))
		}
		s := Setup{Dir: st.Path, Argv: []string{"sh", "-c", cfg.SetupCommands[i]}, Protected: cfg.ProtectedSync,
			Log: SetupLog(st, i)}
		code, n, err := m.runSetup(ctx, st.ID, s)
		if cur, cerr := m.Workspace(ctx, st.ID); cerr == nil && (cur.Status != workspace.StatusInitializing || cur.Runner != m.runner) {
			return cur, nil // archived (or taken over) while setup ran: the rest is not ours
		}
		if err != nil {
			return fail("setup", fmt.Errorf("setup command %d (%s): %w", i+1, cfg.SetupCommands[i], err))
		}
		if err := step(events.WorkspaceSetupRan{Runner: m.runner, Index: i, Argv: s.Argv, Exit: code, OutputBytes: n, Log: s.Log}); err != nil || stopped {
			return m.after(ctx, st, err)
		}
		if code != 0 {
			return fail("setup", fmt.Errorf("setup command %d (%s) exited with status %d; its output is in %s", i+1, cfg.SetupCommands[i], code, s.Log))
		}
	}
	if err := step(events.WorkspaceReady{Runner: m.runner}); err != nil || stopped {
		return m.after(ctx, st, err)
	}
	return st, nil
}

// SetupLog returns where setup command i (from 0) of workspace st writes
// its output: beside the workspace's folder, ".<key>.setup-<i+1>.log".
func SetupLog(st workspace.State, i int) string {
	return filepath.Join(filepath.Dir(st.Path), fmt.Sprintf(".%s.setup-%d.log", st.Key, i+1))
}

// runSetup runs s and stops it as soon as workspace id is no longer
// initializing (archived meanwhile), which it checks every Poll.
func (m *Manager) runSetup(ctx context.Context, id string, s Setup) (int, int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	poll := m.cfg.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	wg.Go(func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if cur, err := m.Workspace(ctx, id); err == nil && cur.Status != workspace.StatusInitializing {
					cancel()
					return
				}
			}
		}
	})
	return m.cfg.Setup.RunSetup(ctx, s)
}

// after returns the workspace as the log has it once a materialization
// stopped early: err, or the state another decision left.
func (m *Manager) after(ctx context.Context, st workspace.State, err error) (workspace.State, error) {
	if err != nil {
		return st, err
	}
	return m.Workspace(ctx, st.ID)
}

// stepError is a failed step and why.
type stepError struct {
	step string
	err  error
}

// addWorktree makes st's worktree, or adopts it when git already has it
// at st.Path on st.Branch (made by a runner that crashed after making
// it), and verifies git's answer. It never removes a folder or a branch
// it did not make.
func (m *Manager) addWorktree(ctx context.Context, project string, st workspace.State) (bool, *stepError) {
	w, ok, err := findWorktree(ctx, project, st.Path)
	if err != nil {
		return false, &stepError{"worktree", err}
	}
	if ok {
		if w.Branch != st.Branch {
			return false, &stepError{"worktree", fmt.Errorf("git has another worktree at %s (branch %q)", st.Path, w.Branch)}
		}
		if _, err := verifyWorktree(ctx, project, st.Path, st.Branch); err != nil {
			return false, &stepError{"verify", err}
		}
		return true, nil
	}
	if _, err := os.Lstat(st.Path); err == nil {
		return false, &stepError{"worktree", fmt.Errorf("folder %s exists already and is no worktree of %s; move it away, then create the workspace again under another id", st.Path, project)}
	}
	if branchExists(ctx, project, st.Branch) {
		return false, &stepError{"worktree", fmt.Errorf("branch %s exists already in %s; Logbook does not take over a branch it did not make", st.Branch, project)}
	}
	if err := os.MkdirAll(filepath.Dir(st.Path), 0o700); err != nil {
		return false, &stepError{"worktree", err}
	}
	if _, err := git(ctx, project, "worktree", "add", "--quiet", "-b", st.Branch, st.Path, st.BaseCommit); err != nil {
		return false, &stepError{"worktree", err}
	}
	if _, err := verifyWorktree(ctx, project, st.Path, st.Branch); err != nil {
		return false, &stepError{"verify", err}
	}
	return false, nil
}

// syncFiles copies cfg's sync and protected_sync files from the project
// into the worktree; protected ones end read-only (0444), and the
// caller lists them in the worktree's ProtectFile so sandboxed commands
// keep them read-only (ProtectedIn). A file missing
// from the project is listed, not an error; one that is a symbolic link
// leading out of the project is an error.
func syncFiles(project, wt string, cfg ProjectConfig) (events.WorkspaceSynced, error) {
	var ev events.WorkspaceSynced
	for i, list := range [][]string{cfg.Sync, cfg.ProtectedSync} {
		for _, rel := range list {
			src := filepath.Join(project, rel)
			real, err := filepath.EvalSymlinks(src)
			if errors.Is(err, fs.ErrNotExist) {
				ev.Missing = append(ev.Missing, rel)
				continue
			}
			if err != nil {
				return ev, fmt.Errorf("sync %s: %w", rel, err)
			}
			if real != project && !strings.HasPrefix(real, project+"/") {
				return ev, fmt.Errorf("sync %s: it leads out of the project, to %s", rel, real)
			}
			dst := filepath.Join(wt, rel)
			if err := copyTree(real, dst, i == 1); err != nil {
				return ev, fmt.Errorf("sync %s: %w", rel, err)
			}
			if i == 0 {
				ev.Files = append(ev.Files, rel)
			} else {
				ev.Protected = append(ev.Protected, rel)
			}
		}
	}
	return ev, nil
}

// copyTree copies the file or directory src to dst; with readOnly every
// copied file gets mode 0444.
func copyTree(src, dst string, readOnly bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // symbolic links and devices inside are not copied
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		fi, err := in.Stat()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		if readOnly {
			mode = 0o444
		}
		_ = os.Chmod(to, 0o600) // a read-only copy from an earlier attempt
		// A synced script may be run as soon as it is there.
		if err := writeProgram(to, mode, func(out *os.File) error {
			_, err := io.Copy(out, in)
			return err
		}); err != nil {
			return err
		}
		return os.Chmod(to, mode)
	})
}

// Recover finishes what a crash left: each initializing workspace of
// list whose runner is gone is taken over (workspace.resumed) and its
// materialization finished from the last recorded step (a worktree git
// already made is adopted, never made twice); each archiving one is
// archived; each archived one not yet cleaned is cleaned. It returns how
// many it handled and the first error.
func (m *Manager) Recover(ctx context.Context, list []workspace.State) (int, error) {
	var first error
	n := 0
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, w := range list {
		switch {
		case w.Status == workspace.StatusInitializing && !RunnerAlive(w.Runner, m.cfg.Host):
			n++
			_, err := m.resume(ctx, w.ID)
			note(err)
		case w.Status == workspace.StatusArchiving:
			n++
			_, err := m.finishArchive(ctx, w.ID)
			note(err)
			note(m.Cleanup(ctx, w.ID))
		case w.Status == workspace.StatusArchived && w.Cleanup == "":
			n++
			note(m.Cleanup(ctx, w.ID))
		}
	}
	return n, first
}

// resume takes workspace id over and finishes its materialization.
func (m *Manager) resume(ctx context.Context, id string) (workspace.State, error) {
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	cmd := workspace.Resume{Runner: m.runner, At: m.now(), Cause: events.Cause{Kind: "system", Event: "recover", Detail: "runner gone", Ref: m.cfg.IDs().String()}}
	_, st, err := m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
	if err != nil {
		return st, fmt.Errorf("recover workspace %s: %w", id, err)
	}
	p, err := m.Project(ctx, st.Project)
	if err != nil {
		return st, fmt.Errorf("recover workspace %s: %w", id, err)
	}
	return m.materialize(ctx, st, p)
}

// Archive archives workspace id for by, a session (as events.ByChat) or
// a person (as events.ByPerson): archiving at once, then its commands
// are asked to stop, then archived. Cleanup is separate (Cleanup), so a
// caller can run it in the background. Archiving an archived workspace
// answers it as it is. Errors: events.ErrNotFound, or events.ErrRejected
// when a session that does not own it asks, or by names what a rule
// takes for a secret (see Manager).
func (m *Manager) Archive(ctx context.Context, id, by, as string) (workspace.State, error) {
	if err := m.refuse("workspace archive", field{"session", "session id", []string{by}}); err != nil {
		return workspace.State{}, err
	}
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	cmd := workspace.Archive{By: by, As: as, At: m.now(), Cause: m.cause("workspace archive", by)}
	_, st, err := m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
	if err != nil {
		return st, fmt.Errorf("workspace archive: %w", err)
	}
	if st.Status != workspace.StatusArchiving {
		return st, nil
	}
	return m.finishArchive(ctx, id)
}

// finishArchive stops the workspace's commands and records archived.
func (m *Manager) finishArchive(ctx context.Context, id string) (workspace.State, error) {
	st, err := m.Workspace(ctx, id)
	if err != nil {
		return st, err
	}
	var stopErr error
	if m.cfg.Stop != nil && st.Path != "" {
		stopErr = m.cfg.Stop(ctx, st.Path)
	}
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	cmd := workspace.FinishArchive{At: m.now(), Cause: m.cause("workspace archive", "archived")}
	_, st, err = m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
	if err != nil {
		return st, fmt.Errorf("workspace archive: %w", err)
	}
	if stopErr != nil {
		return st, fmt.Errorf("workspace %s archived, but stopping its commands failed: %w", id, stopErr)
	}
	return st, nil
}

// Cleanup removes an archived workspace's worktree and folder (`git
// worktree remove`, then the folder, then `git worktree prune`; the
// branch stays) and its setup output logs and records the outcome: cleaned, or cleanup_failed with
// the step and reason. The workspace stays archived either way. It
// returns an error only when the outcome could not be recorded.
func (m *Manager) Cleanup(ctx context.Context, id string) error {
	st, err := m.Workspace(ctx, id)
	if err != nil {
		return err
	}
	if st.Status != workspace.StatusArchived || st.Cleanup == workspace.CleanupDone {
		return nil
	}
	cmd := workspace.Clean{At: m.now(), Cause: m.cause("workspace cleanup", id)}
	p, err := m.Project(ctx, st.Project)
	if err != nil {
		cmd.Step, cmd.Err = "worktree", err.Error()
	} else if stepName, err := removeWorktree(ctx, p.Path, st.Path); err != nil {
		cmd.Step, cmd.Err = stepName, err.Error()
	}
	if logs, _ := filepath.Glob(filepath.Join(filepath.Dir(st.Path), "."+st.Key+".setup-*.log")); cmd.Err == "" {
		for _, l := range logs {
			if err := os.Remove(l); err != nil {
				cmd.Step, cmd.Err = "folder", err.Error()
			}
		}
	}
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	_, _, err = m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
	return err
}

// Rename renames workspace id to name for by (a session, as
// events.ByChat, or a person, as events.ByPerson) and renames its branch
// to worktree/<slug of name> (with -2, -3, … when that branch exists);
// the storage key and the folder never change. A session's name replaces
// only a placeholder: otherwise Rename answers the workspace unchanged.
// Errors: an initializing, archiving or archived workspace, a name with
// no letter or digit (events.ErrRejected), a name (or its slug) or by
// that a rule takes for a secret (see Manager), git's refusal.
func (m *Manager) Rename(ctx context.Context, id, name, by, as string) (workspace.State, error) {
	if err := m.refuse("workspace rename", field{"name", "name", []string{name, project.Slug(name)}}, field{"session", "session id", []string{by}}); err != nil {
		return workspace.State{}, err
	}
	st, err := m.Workspace(ctx, id)
	if err != nil {
		return st, err
	}
	if st.Status == workspace.StatusInitializing {
		return st, fmt.Errorf("workspace rename: %w: workspace %s is still initializing", events.ErrRejected, id)
	}
	if err := workspace.ValidName(name); err != nil {
		return st, fmt.Errorf("workspace rename: %w", err)
	}
	slug := project.Slug(name)
	if slug == "" {
		return st, fmt.Errorf("workspace rename: %w: name %q has no letter or digit", events.ErrRejected, name)
	}
	probe := workspace.Rename{Name: name, Branch: st.Branch, NamedBy: as, Session: by}
	if d, err := workspace.Decide(st, probe); err != nil || len(d) == 0 {
		return st, err
	}
	p, err := m.Project(ctx, st.Project)
	if err != nil {
		return st, err
	}
	branch := "worktree/" + slug
	for i := 2; branch != st.Branch && branchExists(ctx, p.Path, branch); i++ {
		branch = "worktree/" + slug + "-" + strconv.Itoa(i)
	}
	if branch != st.Branch && st.Worktree && branchExists(ctx, p.Path, st.Branch) {
		if _, err := git(ctx, p.Path, "branch", "-m", st.Branch, branch); err != nil {
			return st, fmt.Errorf("workspace rename: %w", err)
		}
	}
	cmd := workspace.Rename{Name: name, Branch: branch, NamedBy: as, Session: by, At: m.now(), Cause: m.cause("workspace rename", name)}
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	_, st, err = m.workspaces.Execute(ctx, agg, func(s workspace.State) (events.Decision, error) { return workspace.Decide(s, cmd) })
	return st, err
}

// Changes measures what changed in workspace st against its merge base
// (see ChangesOf). The error says when the folder is gone.
func (m *Manager) Changes(ctx context.Context, st workspace.State) (Changes, error) {
	if _, err := os.Stat(st.Path); err != nil {
		return Changes{}, fmt.Errorf("changes of workspace %s: folder %s is missing", st.ID, st.Path)
	}
	p, err := m.Project(ctx, st.Project)
	if err != nil {
		return Changes{}, err
	}
	return ChangesOf(ctx, st.Path, p.Trunk)
}

// Delegate records that session parent delegated work titled title to
// workspace ws, as task id ("" for a new ULID). Delegating an id again
// answers the task as it is. An id, parent or title a rule takes for a
// secret is refused (see Manager).
func (m *Manager) Delegate(ctx context.Context, id, ws, parent, title string) (task.State, error) {
	if err := m.refuse("task delegate", field{"id", "id", []string{id}}, field{"session", "session id", []string{parent}},
		field{"title", "title", []string{title}}); err != nil {
		return task.State{}, err
	}
	if id == "" {
		id = m.cfg.IDs().String()
	}
	if err := events.ValidID(id); err != nil {
		return task.State{}, fmt.Errorf("task delegate: id: %w", err)
	}
	w, err := m.Workspace(ctx, ws)
	if err != nil {
		return task.State{}, fmt.Errorf("task delegate: %w", err)
	}
	if w.Gone() {
		return task.State{}, fmt.Errorf("task delegate: %w: workspace %s is %s: delegate to a live workspace", events.ErrRejected, ws, w.Status)
	}
	cmd := task.Delegate{Workspace: ws, Parent: parent, Title: title, At: m.now(), Cause: m.cause("task delegate", ws)}
	_, st, err := m.tasks.Execute(ctx, events.Aggregate{Kind: events.KindTask, ID: id}, func(s task.State) (events.Decision, error) { return task.Decide(s, cmd) })
	return st, err
}

// Seen is what is known of a session working in a task's workspace.
type Seen struct {
	Session string
	Ended   bool
	Failed  bool   // it ended in failure
	Reason  string // its end reason
	At      time.Time
	Ref     string // the id of the event that shows it
}

// Progress moves task t along from the sessions seen in its workspace,
// newest last: the first one that is not the parent makes it running;
// that session's end completes or fails it; seen again after an
// interruption, it resumes it.
func (m *Manager) Progress(ctx context.Context, t task.State, seen []Seen) (task.State, error) {
	agg := events.Aggregate{Kind: events.KindTask, ID: t.ID}
	var archived time.Time // when the task's workspace began archiving
	if w, err := m.Workspace(ctx, t.Workspace); err == nil && w.Gone() {
		archived = w.ArchivedAt
		if archived.IsZero() {
			archived = w.UpdatedAt // archiving, not yet archived
		}
	}
	for _, s := range seen {
		cause := events.Cause{Kind: "system", Event: "session seen", Detail: s.Session, Ref: s.Ref}
		cmds := []task.Command{task.Observe{Session: s.Session, At: s.At, ArchivedAt: archived, Cause: cause}}
		if s.Ended {
			cmds = append(cmds, task.End{Session: s.Session, Failed: s.Failed, Reason: s.Reason, At: s.At, Cause: cause})
		}
		for _, c := range cmds {
			_, st, err := m.tasks.Execute(ctx, agg, func(st task.State) (events.Decision, error) { return task.Decide(st, c) })
			if err != nil {
				return st, err
			}
			t = st
		}
	}
	return t, nil
}

// Interrupt marks task id interrupted after a host restart found its
// session neither ended nor seen again.
func (m *Manager) Interrupt(ctx context.Context, id string) (task.State, error) {
	cmd := task.Interrupt{Reason: "host_restarted", At: m.now(), Cause: events.Cause{Kind: "system", Event: "restart", Ref: m.cfg.IDs().String()}}
	_, st, err := m.tasks.Execute(ctx, events.Aggregate{Kind: events.KindTask, ID: id}, func(s task.State) (events.Decision, error) { return task.Decide(s, cmd) })
	return st, err
}

// Named is a session that named itself: its id, its title and when it
// started.
type Named struct {
	Session string
	Title   string
	Started time.Time
}

// NameFromSessions gives workspace st, when its name is a placeholder,
// the title of the first session (by start, then id) among named that
// named itself in it, as that session's (events.ByChat). Otherwise, or
// with no titled session, it answers st unchanged.
func (m *Manager) NameFromSessions(ctx context.Context, st workspace.State, named []Named) (workspace.State, error) {
	if !st.Placeholder || st.Status != workspace.StatusReady {
		return st, nil
	}
	var first *Named
	for i := range named {
		n := &named[i]
		// A title comes from a transcript: one that is no valid name
		// (an escape sequence, a bidirectional override) names nothing.
		// Nor does one a rule takes for a secret (a session's title
		// is redacted text, but rules change): Rename would refuse it.
		if n.Title == "" || project.Slug(n.Title) == "" || workspace.ValidName(n.Title) != nil ||
			m.refuse("", field{"name", "name", []string{n.Title, project.Slug(n.Title)}}) != nil {
			continue
		}
		if first == nil || n.Started.Before(first.Started) || n.Started.Equal(first.Started) && n.Session < first.Session {
			first = n
		}
	}
	if first == nil {
		return st, nil
	}
	return m.Rename(ctx, st.ID, first.Title, first.Session, events.ByChat)
}
