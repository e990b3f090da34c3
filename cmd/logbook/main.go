// Command logbook records coding-agent sessions as events on an embedded
// NATS JetStream log, projects them into Pebble, and replays them.
//
// Run `logbook --help` for the commands. main only maps errors to exit
// codes; every command is a function that takes its streams, so tests
// drive it in-process.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/buildinfo"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
)

// version is set at build time with -ldflags "-X main.version=…"; "dev"
// leaves it to the build info (buildinfo.Read).
var version = "dev"

// versionText is the root's --version text, buildinfo.Read(version): read
// once, as neither changes while the process runs, rather than for every
// command tree built (each exec served on the exec socket builds one).
var versionText = sync.OnceValue(func() string { return buildinfo.Read(version).String() })

// globals are the flags every command shares.
type globals struct {
	data    string // --data
	natsURL string // --nats-url, else $LOGBOOK_NATS_URL
	// credsPath is --creds, else $LOGBOOK_CREDS: the credentials file to
	// connect with instead of the data dir's.
	credsPath string
	// role is the data dir credential a command connects with: writer
	// unless the command says otherwise (worker).
	role    natslog.Role
	json    bool // --json
	cmdName string
	// acceptLoss lets openViews rebuild a projection the log lost events
	// of, rather than refuse (serve --accept-stream-loss).
	acceptLoss bool
	// adminCreds is serve --admin-creds.
	adminCreds string
	// viewsCache is serve --views-cache in bytes: Pebble's block cache
	// for the projections; 0 means Pebble's default (8 MiB).
	viewsCache int64
	// requireServer makes openBackend fail, rather than open the data dir
	// directly, when no server answers: for commands only a server can
	// serve (exec needs its workers), so they never hold the data dir.
	requireServer bool
	// reads is set for a command that only reads the data dir
	// (markReads): openBackend refuses a data dir with no Logbook data.
	reads bool
	// staleOK is set for a read command that answers from the
	// projection alone (projectionCommands): through a server whose log
	// does not answer, it answers from the projection as it stands,
	// marked stale, rather than waiting for the log.
	staleOK bool
	// logWait, when above 0, bounds how long a command waits for the
	// log's stream leader when it opens the log (replay and verify
	// --wait): past it the command fails naming the cause
	// (openLogWithin) instead of waiting natslog.ElectionWait and more.
	logWait time.Duration
	// follows is set for a command that reads the log as it grows
	// (events tail --follow): it holds the data dir's lock, when no
	// server runs, only until a writer asks for it (see followLog).
	follows bool
	// adminAppends is set for a command that appends only key events
	// signed with the admin key (keys register, keys revoke):
	// openBackend makes its log sign with no key of its own, so that a
	// revoked data dir key does not stop the admin.
	adminAppends bool
	socket       string // --socket: serve's system socket (see socketPath)
	// served is set when serve runs exec for a client of its exec
	// socket (execAnswer): serve's backend, the client's directory,
	// environment and identity; nil otherwise.
	served *servedExec
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// logs are the logs the command's backends opened, whose quarantined
	// events runCLI reports once the command is done (warnUnattested).
	logs []*natslog.Log
	// shownUnattested is set by a command that showed the unattested
	// events it met: warnUnattested says nothing more.
	shownUnattested bool
	// exits is set when the process ends once the command returns
	// (processExits of runCLI's context).
	exits bool
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitsAfter, as a key of runCLI's context, says that the process ends
// once the command line returns (main's run; not a test's, nor one run
// inside another command): runCLI notes it in globals.exits, and a
// command may then leave to the exit what it releases anyway, its
// connections, goroutines and heap, once its output is written.
type exitsAfter struct{}

// processExits reports whether the process ends once the command line
// run with ctx returns (exitsAfter).
func processExits(ctx context.Context) bool { return ctx.Value(exitsAfter{}) != nil }

func main() {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		// A closed terminal or a dropped ssh stops a command as an
		// interrupt does (a check run is recorded cancelled, serve shuts
		// down in order); under nohup SIGHUP stays ignored.
		sigs = append(sigs, syscall.SIGHUP)
	}
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, sigs...)
	// The first signal cancels the command's context; a command that does
	// not end on it is ended at a second signal or after stopGrace.
	ctx, release := stopOnSignals(context.Background(), caught, stopGrace, os.Stderr, os.Exit)
	err := runCLI(context.WithValue(ctx, exitsAfter{}, true), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	release()
	signal.Stop(caught)
	if err != nil {
		fmt.Fprintf(os.Stderr, "logbook: %s\n", term.Lines(userMessage(err)))
		os.Exit(exitCode(err))
	}
}

// run executes one logbook command line.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, exits: processExits(ctx)}
	// A command line a command runs in this process (the bench's serve,
	// the exec socket's exec) is not the process's last.
	ctx = context.WithValue(ctx, exitsAfter{}, nil)
	root := newRootFor(g, args)
	root.SetArgs(args)
	if gatedHookArgs(root, args) {
		return runGatedHook(ctx, root, g, hookfast.AsksHelp(args) && !hookfast.StdinIsTerminal(stdin))
	}
	if err := helpForUnknown(root, args); err != nil {
		return err
	}
	if err := hookHelpWithPayload(root, args, stdin, stderr); err != nil {
		return err
	}
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		warnUnattested(g, cmd.CommandPath())
	}
	if cmd != nil && cmd != root {
		err = interrupted(ctx, strings.TrimPrefix(cmd.CommandPath(), root.Name()+" "), err)
	}
	if err != nil && exitCode(err) == codeUsage && isHookCommand(cmd) {
		// An agent reads exit 2 as "block": a hook never exits 2 for
		// a usage mistake.
		return &exitError{code: codeError, err: err}
	}
	return err
}

// newRoot builds the whole command tree over g, conventions applied;
// for an exec served on the exec socket (g.served set), the exec verb
// alone.
func newRoot(g *globals) *cobra.Command { return newRootFor(g, nil) }

// topVerb is a verb under logbook: its name, and what builds it.
type topVerb struct {
	name  string
	build func(*globals) *cobra.Command
}

// topCommands returns the verbs under logbook, in the order the tree
// adds them, each by the name its command has (TestTopCommands holds the
// two equal). A function, not a table: the verbs' commands build roots
// of their own (execAnswer).
func topCommands() []topVerb {
	return []topVerb{
		{"serve", serveCmd}, {"import", importCmd}, {"hook", hookCmd}, {"sessions", sessionsCmd},
		{"session", sessionCmd}, {"usage", usageCmd}, {"audit", auditCmd}, {"replay", replayCmd},
		{"events", eventsCmd}, {"bench", benchCmd}, {"exec", execCmd}, {"command", commandCmd},
		{"commands", commandsCmd}, {"worker", workerCmd}, {"creds", credsCmd}, {"stream", streamCmd},
		{"version", versionCmd}, {"review", reviewCmd}, {"policy", policyCmd}, {"hooks", hooksCmd},
		{"doctor", doctorCmd}, {"setup", setupCmd}, {"project", projectCmd}, {"workspace", workspaceCmd},
		{"task", taskCmd}, {"checkpoint", checkpointCmd}, {"verify", verifyCmd}, {"keys", keysCmd},
		{"top", topCmd},
	}
}

// newRootFor builds the command tree over g for the command line args,
// conventions applied: when args name a verb of topCommands (namedVerb),
// that verb alone under the root, which is all that running it, its
// help and its usage errors read; otherwise (no verb, help, completion,
// a verb mistyped, a flag the root does not know before it) the whole
// tree, which help lists and suggestions search. Every logbook process
// builds its tree once; the whole of it, thirty verbs and their flags,
// cost each a millisecond more than one. For an exec served on the exec
// socket (g.served set), the exec verb alone.
func newRootFor(g *globals, args []string) *cobra.Command {
	stdin, stdout, stderr := g.stdin, g.stdout, g.stderr
	root := &cobra.Command{
		Use:   "logbook",
		Short: "An event-sourced log of coding-agent sessions",
		Long: `Logbook records every state change of a coding-agent session (Claude Code,
Codex, home-grown harnesses) as an immutable event on an embedded NATS
JetStream stream, folds the events into session projections kept in Pebble,
and replays any history deterministically.

Exit codes: 0 ok, 1 error, 2 usage (an unknown command or flag, a wrong
number of arguments, a flag value out of range or a required flag left
out); ` + "`hook claude`" + ` never exits 2 (with --gate every answer, a deny
among them, is printed with exit 0).
Ids: any unique prefix of a session or command id names it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.cmdName = cmd.CommandPath()
			g.reads = readsOnly(cmd)
			g.staleOK = g.reads && projectionCommands[cmd.CommandPath()]
			if err := checkRanges(cmd); err != nil {
				return err
			}
			return refuseEmpty(cmd)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.data, "data", "", "data directory (default $LOGBOOK_DATA, else $XDG_DATA_HOME/logbook, else ~/.local/share/logbook)")
	pf.StringVar(&g.natsURL, "nats-url", os.Getenv("LOGBOOK_NATS_URL"), "use this NATS server or cluster instead of the data dir's, e.g. nats://host:4222 (default $LOGBOOK_NATS_URL; put credentials in --creds, not here: a command line is visible to every user)")
	pf.StringVar(&g.credsPath, "creds", os.Getenv("LOGBOOK_CREDS"), `credentials file to connect with, as "logbook creds issue" writes it (default $LOGBOOK_CREDS)`)
	pf.BoolVar(&g.json, "json", false, "print machine-readable JSON")
	pf.StringVar(&g.socket, "socket", "", "ask a serve in system mode on its socket (a path, or its --socket-dir) instead of opening a data dir: hooks, sessions, session show, audit, review; a command that needs the log itself (exec, command output, events, import, replay) refuses it (default $LOGBOOK_SOCKET when neither --data, --nats-url nor --creds is given)")
	if g.served != nil {
		// An exec served on the exec socket (runServedExec) runs exec
		// and nothing else: building the thirty other verbs and their
		// flags would cost each exec more than parsing its arguments.
		// Nor the completion verb cobra adds as it executes: its
		// client, logbook-exec, asks for none.
		root.CompletionOptions.DisableDefaultCmd = true
		root.AddCommand(execCmd(g))
		conventions(root)
		return root
	}
	verb := namedVerb(root, args)
	for _, c := range topCommands() {
		if verb == "" || c.name == verb {
			root.AddCommand(c.build(g))
		}
	}
	if verb == "" {
		// The root's --version, which cobra adds to the command it
		// runs: a command line that names a verb runs that verb, which
		// has none (nor reads the build info for it).
		root.Version = versionText()
	} else {
		// Nor the completion verb cobra adds as it executes: a command
		// line that names a verb asks for no completion.
		root.CompletionOptions.DisableDefaultCmd = true
	}
	conventions(root)
	return root
}

// namedVerb returns the verb of topCommands that args name first, after
// the root's own flags (root's persistent flags, with their values), or
// "" when they name none: no verb, one that is not a verb (help,
// completion, a mistyped one), or a flag before it that root does not
// know, whose value cobra might take the next word for.
func namedVerb(root *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			for _, c := range topCommands() {
				if c.name == a {
					return a
				}
			}
			return ""
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		f := root.PersistentFlags().Lookup(name)
		if !strings.HasPrefix(a, "--") || f == nil {
			return ""
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // --data DIR: the next word is the flag's value
		}
	}
	return ""
}

func versionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the VCS revision and time it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildinfo.Read(version)
			if g.json {
				return writeJSON(g.stdout, v)
			}
			_, err := fmt.Fprintln(g.stdout, v.String())
			return err
		},
	}
}

// judgesUnattested are the commands that judge the log and say what
// they found unattested themselves (serve's log and metrics count them):
// warnUnattested adds nothing to theirs.
var judgesUnattested = map[string]bool{
	"logbook verify": true, "logbook serve": true, "logbook worker": true,
}

// warnUnattested says on g.stderr, once, what the logs the command read
// found unattested (quarantined: never folded). A command that left them
// out of its output is warned of how many, the first of them and where
// to see them all: a read that skipped part of the log never passes for
// the whole of it. One that showed them — audit, in its timeline, or one
// that set g.shownUnattested — is told how many it showed (audit), and,
// the one thing its output cannot say, when there were more than a Log
// remembers (natslog's 10,000), that the rest are left out of it.
func warnUnattested(g *globals, path string) {
	if judgesUnattested[path] && !g.shownUnattested {
		return
	}
	audit := path == "logbook audit"
	shown := audit || g.shownUnattested
	for _, l := range g.logs {
		qs, n := l.Quarantined()
		if n == 0 || len(qs) == 0 {
			continue
		}
		q := qs[0]
		switch {
		case shown && n > uint64(len(qs)):
			fmt.Fprintf(g.stderr, "logbook: warning: %s unattested, only the first %d (by sequence) shown: the rest are left out of the output; `logbook verify` checks the log\n",
				term.Plural(int(n), "event"), len(qs))
		case audit:
			fmt.Fprintf(g.stderr, "logbook: audit: %s shown UNATTESTED (not folded), the first seq %d (%s); `logbook verify` checks the log\n",
				term.Plural(int(n), "event"), q.Seq, term.Field(string(q.Verdict.Status)))
		case !shown:
			fmt.Fprintf(g.stderr, "logbook: warning: %s left out as unattested (not shown, not folded), the first seq %d (%s: %s); `logbook audit` shows them, `logbook verify` checks the log\n",
				term.Plural(int(n), "event"), q.Seq, term.Field(string(q.Verdict.Status)), term.Field(q.Verdict.Why))
		}
		return
	}
}
