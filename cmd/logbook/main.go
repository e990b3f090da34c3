// Command logbook records coding-agent sessions as events on an embedded
// NATS JetStream log, projects them into Pebble, and replays them.
//
// Run `logbook --help` for the commands. main only maps errors to exit
// codes; every command is a function that takes its streams, so tests
// drive it in-process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

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
	stdin         io.Reader
	stdout        io.Writer
	stderr        io.Writer
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runCLI(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "logbook: %s\n", termSafe(err.Error()))
		if ee, ok := errors.AsType[*exitError](err); ok {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// run executes one logbook command line.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "logbook",
		Short: "An event-sourced log of coding-agent sessions",
		Long: `Logbook records every state change of a coding-agent session (Claude Code,
Codex, home-grown harnesses) as an immutable event on an embedded NATS
JetStream stream, folds the events into session projections kept in Pebble,
and replays any history deterministically.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			g.cmdName = cmd.CommandPath()
		},
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.data, "data", "", "data directory (default $LOGBOOK_DATA, else $XDG_DATA_HOME/logbook, else ~/.local/share/logbook)")
	pf.StringVar(&g.natsURL, "nats-url", os.Getenv("LOGBOOK_NATS_URL"), "use this NATS server or cluster instead of the data dir's, e.g. nats://host:4222 (default $LOGBOOK_NATS_URL; put credentials in --creds, not here: a command line is visible to every user)")
	pf.StringVar(&g.credsPath, "creds", os.Getenv("LOGBOOK_CREDS"), "credentials file to connect with, as `logbook creds issue` writes it (default $LOGBOOK_CREDS)")
	pf.BoolVar(&g.json, "json", false, "print machine-readable JSON")
	root.AddCommand(
		serveCmd(g),
		importCmd(g),
		hookCmd(g),
		sessionsCmd(g),
		sessionCmd(g),
		auditCmd(g),
		replayCmd(g),
		eventsCmd(g),
		benchCmd(g),
		execCmd(g),
		commandCmd(g),
		commandsCmd(g),
		workerCmd(g),
		credsCmd(g),
		streamCmd(g),
		versionCmd(g),
	)
	return root.ExecuteContext(ctx)
}

func versionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.json {
				return writeJSON(g.stdout, map[string]string{"version": version})
			}
			_, err := fmt.Fprintf(g.stdout, "logbook %s\n", version)
			return err
		},
	}
}
