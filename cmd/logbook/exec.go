package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// execFlags are exec's options.
type execFlags struct {
	session   string
	mode      string
	cwd       string
	workspace string
	tty       bool
	wait      time.Duration
	id        string
	key       string
	env       []string
	noEnv     bool
	raw       bool
	// elevate asks the gate to run this one command full_access.
	elevate       bool
	justification string
	// callerEnv, in an exec served on the exec socket, are the client's
	// entries of worker.InheritedEnv, in place of this process's; nil
	// otherwise.
	callerEnv []string
}

// maxJustification is the most bytes of an elevation's justification the
// gate keeps for the reviewer.
const maxJustification = 1000

func execCmd(g *globals) *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec --session S [flags] -- CMD [ARG...]",
		Short: "Run a command for a session on a sandbox worker, and wait for it a while",
		Long: `exec asks the running server's workers to run CMD for session S, in the
boundary of --mode (read_only, workspace_write or full_access; default: the
session's own mode, else workspace_write), in --workspace (default: the
current directory) or --cwd inside it, with an explicit environment (PATH,
HOME, USER, LANG, LC_ALL and TZ from here, plus --env; --no-env for none).

It prints the command's output as it comes and, if the command exits within
--wait, exits with its exit status. When the wait expires the command goes
on in the background (it is not killed): exec prints its id and how to come
back to it, and exits 124 (as timeout does), since its status is not known
yet; with --wait 0s, which asks for no wait, it exits 0. Every step is an
event on the log: see 'logbook audit S'.

exec does not pass its own standard input on: the command's input is open
and empty until 'logbook command stdin ID' writes to it or closes it
(--eof). A command that reads its input to the end waits for that: give
it </dev/null or a file.

--key K makes a retry safe: the command's id is derived from the session and
K, so exec run again with the same session and key (after a timeout, a lost
answer, a crash of the caller) runs nothing new and attaches to the first
run: its output from the start, then its exit status. The same key with
another command is refused.

With --json exec prints JSON lines as the output comes: one
{"type":"output","stream":…,"offset":…,"pos":…,"data":…} per chunk (data is
the bytes as a string when they are UTF-8, else "data_base64" holds them),
then one {"type":"result",…} with the id, status and exit.

logbook-exec, a small binary beside logbook, takes the same arguments
(logbook-exec --session S -- make test) and has the running serve run
exec on its exec socket (exec.sock in the data dir), for the caller's
user by the socket's peer credentials: the same output and exit status,
without logbook's start-up or a connection of its own. It hands to
logbook exec what it does not handle (help, --nats-url, --creds, a data
dir with no running serve).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.served != nil {
				for _, name := range servedFlags {
					if cmd.Flags().Changed(name) {
						return usageErrorf("exec: --%s: the exec socket runs exec on its own server's data dir; run `logbook exec` for another", name)
					}
				}
			}
			return runExec(cmd.Context(), g, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the session the command runs for (required)")
	fl.StringVar(&f.mode, "mode", "", "read_only, workspace_write or full_access (default: the session's mode, else workspace_write)")
	fl.StringVar(&f.cwd, "cwd", "", "working directory: absolute, or relative to the workspace; must lie inside it")
	fl.StringVar(&f.workspace, "workspace", "", "directory the command works on (default: the current directory)")
	fl.BoolVar(&f.tty, "tty", false, "run on a pseudo-terminal (80x24, TERM=dumb) instead of pipes")
	fl.DurationVar(&f.wait, "wait", 10*time.Second, "how long to wait for the exit before leaving the command in the background")
	fl.StringVar(&f.id, "id", "", "command id to use (default: a new ULID); repeating a request with the same id runs it once")
	fl.StringVar(&f.key, "key", "", "idempotency key: the id is derived from the session and the key, so a retry with the same key attaches to the first run")
	fl.StringArrayVar(&f.env, "env", nil, "KEY=VALUE for the command's environment (repeatable; stored in the log, so no secrets)")
	fl.BoolVar(&f.noEnv, "no-env", false, "pass on nothing from this environment; only --env")
	fl.BoolVar(&f.elevate, "elevate", false, "ask the gate to run this one command full_access (session in auto mode only; reviewed first; needs --justification)")
	fl.StringVar(&f.justification, "justification", "", "with --elevate: why the command needs full_access, for the reviewer")
	fl.BoolVar(&f.raw, "raw", false, "print the output's exact bytes, escape sequences included (default: made safe for a terminal)")
	return cmd
}

// execGCPercent is the garbage collector's GOGC while exec runs: exec
// is short-lived and allocates a few MiB as it sets up (the event
// registry, the redaction rules, the connection), which collecting
// would cost more CPU than it frees. At 800 the heap may reach 32 MiB
// (8 × the runtime's 4 MiB floor) before the first collection; past
// that, a long wait's output is collected as usual.
const execGCPercent = 800

func runExec(ctx context.Context, g *globals, f execFlags, argv []string) (err error) {
	defer debug.SetGCPercent(debug.SetGCPercent(execGCPercent))
	if f.session == "" {
		return usageErrorf("exec: --session is required")
	}
	if len(argv) == 0 {
		return usageErrorf("exec: empty argv: give the command after --, e.g. logbook exec --session S -- make test")
	}
	if argv[0] == "" {
		return usageErrorf("exec: the command's name (argv[0]) is empty: give the program to run first after --, e.g. logbook exec --session S -- make test")
	}
	if f.wait < 0 {
		return usageErrorf("exec: --wait %v: want 0 or more", f.wait)
	}
	// What names the command and where it runs is stored as given: one
	// a rule takes for a secret is refused, before anything quotes it.
	if err := refuseSecrets(g, "exec", typedField{"--id", "id", []string{f.id}}, typedField{"--key", "key", []string{f.key}},
		typedField{"--session", "session id", []string{f.session}}, typedField{"--workspace", "folder", []string{f.workspace}},
		typedField{"--cwd", "folder", []string{f.cwd}}); err != nil {
		return err
	}
	if f.id, err = worker.RequestID(f.session, f.id, f.key); err != nil {
		return usageErrorf("exec: %w", err)
	}
	execsock.TraceID(ctx, f.id)
	if err := worker.CheckElevation(f.elevate, f.justification, f.mode); err != nil {
		return usageErrorf("exec: %w", err)
	}
	if f.elevate {
		if err := checkTyped("exec: --justification", f.justification, maxJustification); err != nil {
			return err
		}
	}
	if err := worker.CheckMode(f.mode); err != nil {
		return usageErrorf("exec: %w", err)
	}
	ws := f.workspace
	if se := g.served; se != nil {
		// The client's directory, not serve's.
		if ws == "" || !filepath.IsAbs(ws) {
			ws = filepath.Join(se.cwd, ws)
		}
		f.callerEnv = se.env
	}
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("exec: workspace: %w", err)
		}
		if worker.CheckMagicLinks(wd) != nil {
			// $PWD names the directory through /proc: the kernel's
			// name for it is the one a worker finds too.
			if wd, err = unix.Getwd(); err != nil {
				return fmt.Errorf("exec: workspace: %w", err)
			}
		}
		ws = wd
	}
	ws, err = filepath.Abs(ws)
	if err != nil {
		return fmt.Errorf("exec: workspace: %w", err)
	}
	// A path through /proc or /dev/fd names this process's directory
	// here and the worker's there: refused before anything is on the
	// log, as the workers refuse it.
	if err := worker.CheckMagicLinks(ws); err != nil {
		what := "--workspace"
		if f.workspace == "" {
			what = "the current directory (the default --workspace)"
		}
		return usageErrorf("exec: %s: %w", what, err)
	}
	// The log records directories as text: a name that is not UTF-8
	// would reach the worker as another one.
	what := "--workspace"
	if f.workspace == "" {
		what = "the current directory (the default --workspace)"
	}
	if err := execsock.CheckText(what, ws); err != nil {
		return usageErrorf("exec: %w", err)
	}
	if err := execsock.CheckText("--cwd", f.cwd); err != nil {
		return usageErrorf("exec: %w", err)
	}
	if f.workspace == "" { // the current directory is stored too
		if err := refuseSecrets(g, "exec", typedField{"the current directory (the default --workspace)", "folder", []string{ws}}); err != nil {
			return err
		}
	}
	// A folder that does not exist is refused once the registry has had
	// its say: a workspace still initializing has no folder yet, and the
	// refusal should say so.
	wsErr := worker.CheckWorkspace(ws)
	if wsErr != nil {
		wsErr = fmt.Errorf("exec: %w", wsErr)
	}
	// The cwd as the workers check it, in their words (through /proc,
	// outside the workspace, and, once the workspace is there, missing),
	// before anything is on the log.
	if err := worker.CheckCwd(ws, f.cwd, wsErr == nil); err != nil {
		return usageErrorf("exec: %w", err)
	}
	// A cwd that reaches the workspace through a symbolic link (or a
	// workspace named through one) is recorded as the directory in it.
	f.cwd = worker.CwdWithin(ws, f.cwd)
	// A system directory is no workspace in any mode: refused here,
	// before anything is on the log, as the workers refuse it.
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		if err := worker.CheckSystem(real); err != nil {
			return fmt.Errorf("exec: %w", err)
		}
	}
	env, err := commandEnv(f)
	if err != nil {
		return err
	}
	if err := execsock.CheckCommand(argv, env); err != nil {
		return usageErrorf("exec: %w", err)
	}

	var b *backend
	if g.served != nil {
		b = g.served.b // serve's own, for as long as serve runs
	} else {
		if b, err = openServer(ctx, g, "exec needs a running server with workers: start `logbook serve`"); err != nil {
			return err
		}
		defer b.Close()
	}
	// The data dir and the credential directories are no workspace in
	// any mode: refused here, before anything is on the log, as the
	// workers refuse them.
	if b.dd != "" {
		if err := b.checkHiddenEarly(ws); err != nil {
			return fmt.Errorf("exec: %w", err)
		}
	}
	// A unique prefix names the session, with --key too: the key's
	// command id is derived from the full id, so a retry that names the
	// session by another prefix attaches to the same run. A session a
	// hook has just started may still be in serve's journal: the lookup
	// waits for it before it says not found.
	execsock.Mark(ctx, execsock.StageParsed)
	if f.session, err = resolveSession(ctx, b, f.session); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	execsock.Mark(ctx, execsock.StageResolved)
	if f.key != "" {
		if f.id, err = worker.RequestID(f.session, "", f.key); err != nil {
			return usageErrorf("exec: %w", err)
		}
	}
	// A subject the credentials may not publish to is refused at once
	// (reported on the connection), not left to time out.
	ctx, stop := api.WatchDenied(ctx, b.nc, api.AnyPublish)
	defer stop()
	defer func() {
		if de := api.DeniedCause(ctx); de != nil {
			err = fmt.Errorf("exec: %w", de.Doing("run commands"))
		}
	}()
	call := b.call
	red, err := b.redactor()
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	var hub *worker.WatchHub
	if g.served != nil {
		hub = g.served.hub
	}
	cl, err := newRequestClientAs(b, red, g.person(), hub)
	if err != nil {
		return err
	}
	p := &term.Output{Stdout: g.stdout, Stderr: g.stderr, JSON: g.json, Raw: f.raw}
	defer p.Close()
	if f.key != "" {
		// A retry: the first run's command, whatever became of its session.
		if st, err := cl.Command(ctx, f.id); err == nil {
			if why := retryDiffers(st, f, argv, ws, env); why != "" {
				return fmt.Errorf("exec: %w: key %q of session %s names another command (%s): %s", events.ErrRejected, f.key, f.session, term.Argv(st.Argv), why)
			}
			return waitExec(ctx, g, cl, p, f)
		} else if !errors.Is(err, events.ErrNotFound) {
			return fmt.Errorf("exec: %w", err)
		}
	}
	grace := workerGrace
	if g.served == nil && g.natsURL != "" || g.served != nil && b.srv == nil {
		grace = natslog.ElectionWait
	}
	sub := worker.Submission{Call: call, Client: cl, ID: f.id, WorkspaceErr: wsErr, Redactor: red, Grace: grace,
		Request: command.Request{
			Session: f.session, Argv: argv, Cwd: f.cwd, Workspace: ws, Mode: f.mode, TTY: f.tty,
			Env: env, WaitMS: f.wait.Milliseconds(), RequestedBy: g.person(),
		},
		Evicted: func(id string) {
			fmt.Fprintf(g.stderr, "logbook: evicted command %s: session %s is over %d active commands\n", id, f.session, command.MaxActive)
		},
	}
	if g.served != nil {
		sub.CatchUp = g.served.catchUp // serve's API answers in this process
	}
	if f.elevate {
		sub.Elevate = func(ctx context.Context, req command.Request) (string, error) {
			// The justification goes onto the log for good: redacted, as
			// a review's reason.
			why, err := redactTyped(g, f.justification, maxJustification)
			if err != nil {
				return "", err
			}
			return gate.Elevate(ctx, gate.Caller(call), req.Session, f.id, req.Argv, req.Workspace, req.Cwd, why)
		}
	}
	execsock.Mark(ctx, execsock.StageSubmit)
	if err := sub.Submit(ctx); err != nil {
		return err
	}
	return waitExec(ctx, g, cl, p, f)
}

// retryDiffers says how command st, the first run of exec's --key,
// differs from what this exec asks to run (argv in workspace ws with
// environment env, with f's session, cwd, terminal and, when given,
// mode), "" when it does not: a retry attaches to a run of the same
// command only, never to one in another workspace, mode or environment.
// Of the environment, the variables passed on from the caller's own
// (worker.InheritedEnv) are not compared: a retry from another shell
// may inherit another PATH.
func retryDiffers(st command.State, f execFlags, argv []string, ws string, env []string) string {
	named := func(env []string) []string {
		return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(worker.InheritedEnv, k)
		})
	}
	switch {
	case st.Session != f.session:
		return "it belongs to session " + st.Session
	case !slices.Equal(st.Argv, argv):
		return "it runs another argv"
	case st.Workspace != ws:
		return fmt.Sprintf("it runs in workspace %s, not %s", st.Workspace, ws)
	case st.Cwd != f.cwd:
		dir := func(cwd string) string {
			if cwd == "" {
				return "the workspace's own"
			}
			return cwd
		}
		return fmt.Sprintf("it runs in directory %s, not %s", dir(st.Cwd), dir(f.cwd))
	case f.mode != "" && !f.elevate && st.Mode != f.mode:
		return fmt.Sprintf("it runs in mode %s, not %s", st.Mode, f.mode)
	case f.elevate && st.Elevation == "":
		return "it runs without an elevation"
	case !slices.Equal(named(st.Env), named(env)):
		return "it runs with another environment (its --env)"
	case st.TTY != f.tty:
		if st.TTY {
			return "it runs on a terminal (--tty)"
		}
		return "it runs without a terminal (no --tty)"
	}
	return ""
}

// waitExec prints command f.id's output for up to f.wait (worker.Client.Wait)
// and returns its exit as exec's, with a line on stderr when output past
// the worker's cap was dropped; when the wait expires first the command
// is marked as in the background and exec returns nil.
func waitExec(ctx context.Context, g *globals, cl *worker.Client, p *term.Output, f execFlags) error {
	r, err := cl.Wait(ctx, f.id, f.wait, p.Print)
	if r.Interrupted {
		// One line: what was interrupted, and that the command goes on.
		// Served on the exec socket: its client (logbook-exec) went,
		// and exits with the signal it took (execsock.InterruptedExit).
		by, code := "its client", execsock.InterruptedExit
		if sig, ok := stoppedBy(ctx); ok {
			by, code = signalName(sig), 128+signalNumber(sig)
		}
		goes := "goes on in the background; come back with: logbook command output " + f.id + " --follow"
		if !r.Background {
			goes = "goes on (not marked as in the background); see: logbook command output " + f.id + " --follow"
		}
		if _, ok := stoppedBy(ctx); ok && g.served != nil {
			// The signal went to serve, which stops its own workers'
			// commands as it stops.
			return &exitError{code: code, err: fmt.Errorf("exec interrupted: serve is stopping (%s), and with it the commands its own workers run: command %s goes on only if a worker of another process runs it; see: logbook command output %s", by, f.id, f.id)}
		}
		return &exitError{code: code, err: fmt.Errorf("exec interrupted by %s: command %s %s", by, f.id, goes)}
	}
	if err != nil {
		if natslog.Unreachable(err) {
			return lostExec(p, f.id, r.State)
		}
		return fmt.Errorf("exec: %w", err)
	}
	if r.Background {
		if r.MarkErr != nil {
			fmt.Fprintf(g.stderr, "logbook: command %s not marked as in the background: %v\n", f.id, r.MarkErr)
		}
		if g.json {
			if err := term.JSONLine(g.stdout, p.Result(f.id, r.State, true)); err != nil {
				return err
			}
		}
		if f.wait == 0 {
			// Started in the background, as asked: a success.
			if !g.json {
				fmt.Fprintf(g.stderr, "logbook: command %s goes on in the background after 0s\nlogbook: come back with: logbook command output %s --follow\n", f.id, f.id)
			}
			return nil
		}
		// The wait ran out: not a success, the command's own status is
		// not known yet.
		return &exitError{code: codeWaitExpired, err: fmt.Errorf("command %s goes on in the background after %s (--wait): its exit status is not known yet; come back with: logbook command output %s --follow", f.id, f.wait, f.id)}
	}
	if d := r.State.OutputDropped; d > 0 {
		fmt.Fprintf(g.stderr, "logbook: command %s: %d bytes of its output dropped, past the %d bytes the worker stores for a command\n", f.id, d, r.State.OutputBytes)
	}
	if g.json {
		if err := term.JSONLine(g.stdout, p.Result(f.id, r.State, false)); err != nil {
			return err
		}
	}
	return exitOf(r.State)
}

// lostExec is exec's error when the connection to the server closed
// while it waited for command id (st as last read, p what was printed):
// what is known of the command, and how to come back to its output from
// where exec stopped printing it.
func lostExec(p *term.Output, id string, st command.State) error {
	p.Close()
	known := "whether it ran, and whether it ended, is unknown"
	if p.Pos > 0 || st.Status == command.StatusStarted {
		known = fmt.Sprintf("it ran (%d bytes of output so far); whether it ended is unknown", p.Pos)
	}
	return fmt.Errorf("exec: the connection to the log's server closed before command %s ended (did `logbook serve` stop?): the command was requested; %s: come back with `logbook command output %s --follow --after %d`",
		id, known, id, p.Pos)
}

// resolveSession resolves the session id or prefix id as resolveID does.
// When no session is found and b reaches the data dir's own serve, it
// first waits (host.Settle, bounded by ctx and api.IntakeWait) for the
// hooks serve took on its socket up to then to be in the log, and looks
// again: a SessionStart hook answered just before exec (logbook-hook
// returns once the payload is in serve's journal) names a session that
// is not in the log yet. Errors are resolveID's, of the second look.
func resolveSession(ctx context.Context, b *backend, id string) (string, error) {
	got, err := resolveID(ctx, b, events.KindSession, id)
	if !errors.Is(err, events.ErrNotFound) || !b.remote || b.api == api.AnyPrefix {
		return got, err
	}
	host.Settle(ctx, b.nc, b.api)
	execsock.Mark(ctx, execsock.StageSettled)
	got, err = resolveID(ctx, b, events.KindSession, id)
	if errors.Is(err, events.ErrNotFound) {
		// Its hooks may be in serve's journal, waiting for a disk that
		// takes writes: say so rather than only that it is not there.
		if paused := b.diskPaused(ctx); paused != "" {
			err = &notFoundError{fmt.Sprintf("%s; serve's %s, and the hooks it took since wait in its journal: a session they start is found once the disk takes writes", err, paused)}
		}
	}
	return got, err
}

// workerGrace is how long exec waits for a live worker (one starting
// with the server, say) before it gives up. On a cluster (--nats-url) it
// waits natslog.ElectionWait instead: while the heartbeat bucket elects
// a leader the workers cannot beat, and their entries lapse.
const workerGrace = 5 * time.Second

// commandEnv builds the command's environment from exec's flags and
// checks it as every request is checked (worker.CheckEnv, by the
// built-in rules; the data dir's are added once the server is reached):
// an entry that is a secret is refused, the request being stored in the
// log for good, and one that is not KEY=VALUE is a usage error.
func commandEnv(f execFlags) ([]string, error) {
	var env []string
	switch {
	case f.noEnv:
	case f.callerEnv != nil:
		env = slices.Clone(f.callerEnv)
	default:
		env = worker.InheritEnv()
	}
	env = append(env, f.env...)
	if err := worker.CheckEnv(env, nil); err != nil {
		if errors.Is(err, command.ErrEnvShape) {
			// A malformed --env is named by its place among the flags,
			// not by its index in the whole environment (and its value
			// never quoted: it may be a secret typed in the wrong place).
			for i, kv := range f.env {
				k, _, ok := strings.Cut(kv, "=")
				why := ""
				switch {
				case !ok:
					why = `it has no "="`
				case k == "":
					why = "its KEY is empty"
				default:
					continue
				}
				return nil, usageErrorf("exec: --env number %d of %d: want KEY=VALUE: %s", i+1, len(f.env), why)
			}
			return nil, usageErrorf("exec: %w", err)
		}
		return nil, fmt.Errorf("exec: %w", err)
	}
	return env, nil
}

// newCommandClient returns a worker client on b whose requests are
// checked for secrets by the built-in rules only; exec, which requests
// commands, uses newRequestClient.
func newCommandClient(b *backend) (*worker.Client, error) { return newRequestClient(b, nil) }

// newRequestClient returns a worker client on b whose requests are
// checked for secrets by red (b.redactor(): the rules the workers redact
// with; nil: the built-in rules only).
func newRequestClient(b *backend, red *redact.Redactor) (*worker.Client, error) {
	return newRequestClientAs(b, red, personActor(), nil)
}

// newRequestClientAs is newRequestClient whose events are stamped with
// actor (a person's, as personActor names one). hub, when not nil, is
// serve's, which the client's followed watches read from
// (worker.ClientConfig.Hub): the client then runs in serve's process,
// which outlives its watches, and their consumers are deleted after they
// return (worker.ClientConfig.DeleteAfter).
func newRequestClientAs(b *backend, red *redact.Redactor, actor string, hub *worker.WatchHub) (*worker.Client, error) {
	host, _ := os.Hostname()
	return worker.NewClient(worker.ClientConfig{Conn: b.nc, Log: b.log, Reg: b.reg, Host: host, Actor: actor, Redactor: red, DeleteAfter: hub != nil, Hub: hub, Handoff: b.handoff})
}

// exitOf maps an ended command to exec's exit (worker.ExitStatus).
func exitOf(st command.State) error {
	code, err := worker.ExitStatus(st)
	if code == 0 {
		return err
	}
	return &exitError{code: code, err: err}
}

// call asks b's server's API verb with req, decoding the answer into
// resp (api.Call; in serve's own process b.local): an api.Caller on a
// backend that reached a server.
func (b *backend) call(ctx context.Context, verb string, req, resp any) error {
	if b.local != nil {
		return b.local(ctx, verb, req, resp)
	}
	return api.Call(ctx, b.nc, b.api, verb, req, resp)
}

// openServer opens the backend of a command that needs a running server
// (g.requireServer); without one it is the error need. The caller closes
// the backend.
func openServer(ctx context.Context, g *globals, need string) (*backend, error) {
	g.requireServer = true
	b, err := openBackend(ctx, g)
	if err != nil {
		return nil, err
	}
	if !b.remote {
		b.Close()
		return nil, errors.New(need)
	}
	return b, nil
}
