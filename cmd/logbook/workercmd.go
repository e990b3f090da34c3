package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/sandbox"
)

// workerFlags are the settings of the workers serve and worker run.
type workerFlags struct {
	grace time.Duration
	bwrap string
	lapse time.Duration
	allow []string // --sandbox-allow, as given
}

func (f *workerFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.grace, "grace", 0, "time between SIGTERM and SIGKILL when a command is stopped (0: 2s)")
	cmd.Flags().StringVar(&f.bwrap, "bwrap", "", "bubblewrap executable for restricted modes (default: bwrap in PATH)")
	cmd.Flags().DurationVar(&f.lapse, "heartbeat-ttl", 0, "how long a silent worker counts as alive, when the first worker creates the bucket (0: 10s)")
	cmd.Flags().StringArrayVar(&f.allow, "sandbox-allow", nil, "a host path restricted commands also see, PATH or ~/PATH, read-only or with :rw writable in workspace_write (repeatable; added to the toolchain caches they see by default; none: drop those; logbook doctor lists them)")
}

// check reports a flag a worker would refuse: a negative duration, a
// --bwrap that is not an executable, a --sandbox-allow that is not an
// absolute path.
func (f workerFlags) check() error {
	if f.grace < 0 {
		return usageErrorf("--grace %v: want 0 or more", f.grace)
	}
	if f.lapse < 0 {
		return usageErrorf("--heartbeat-ttl %v: want 0 or more", f.lapse)
	}
	if f.bwrap != "" {
		if _, err := exec.LookPath(f.bwrap); err != nil {
			return fmt.Errorf("--bwrap: %w", err)
		}
	}
	if _, err := sandboxAllow(f.allow); err != nil {
		return err
	}
	return nil
}

// sandboxAllow returns the allowlist of restricted commands for the
// worker's home and environment (worker.Allowlist); a value it refuses
// is a usage error naming --sandbox-allow.
func sandboxAllow(vals []string) ([]sandbox.Allow, error) {
	home, _ := os.UserHomeDir()
	out, err := worker.Allowlist(vals, home, os.Getenv)
	if ae, ok := errors.AsType[*worker.AllowError](err); ok {
		switch {
		case ae.Missing:
			return nil, usageErrorf("--sandbox-allow %q: %s does not exist or cannot be read", ae.Value, ae.Path)
		case ae.Home:
			return nil, usageErrorf("--sandbox-allow: %s is, through a symbolic link, the home directory or above it: name a directory inside it", ae.Path)
		}
		return nil, usageErrorf("--sandbox-allow %q: %s", ae.Value, ae.Why)
	}
	return out, err
}

// allowStrings returns allow as sandbox.Allow's String gives each, for
// serve.json.
func allowStrings(allow []sandbox.Allow) []string {
	out := make([]string, len(allow))
	for i, a := range allow {
		out[i] = a.String()
	}
	return out
}

// newWorkers returns n workers on b, each with an identity of its own.
// Restricted commands see their workspace, the system directories and
// the allowlist (sandboxAllow), nothing else of the host; the data dir
// and the credential files in the worker's home stay covered even where
// those reach into them. What they record from a command is redacted by
// b's rules (backend.redactor): the data dir's redact.txt, followed as it
// changes.
func newWorkers(n int, b *backend, f workerFlags, logw io.Writer) ([]*worker.Worker, error) {
	red, err := b.redactor()
	if err != nil {
		return nil, err
	}
	allow, err := sandboxAllow(f.allow)
	if err != nil {
		return nil, err
	}
	return worker.NewN(n, worker.Config{
		Conn: b.nc, Log: b.log, Reg: b.reg,
		Grace: f.grace, Bwrap: f.bwrap, Lapse: f.lapse,
		HiddenSet: b.hiddenSet(),
		Ledger:    b.dd.path(placeholderLedger),
		Pins:      b.dd.path(sessionPins),
		Allow:     allow,
		Logger:    servelog.PartLogger(logw, "worker"),
		Redactor:  red,
		Handoff:   b.handoff,
	})
}

// placeholderLedger is the data dir's directory where workers record the
// placeholders their commands make in workspaces (sandbox.Spec.Ledger).
const placeholderLedger = "placeholders"

// sessionPins is the data dir's directory where workers record each
// session's directory as the first of them found it (worker.Config.Pins).
const sessionPins = "pins"

func workerCmd(g *globals) *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run one sandbox worker against a running server",
		Long: `worker takes command requests off the log of a running server (the data
dir's serve, or --nats-url) and runs them, next to the workers serve runs
itself (serve --workers). It runs until interrupted; then it stops the
commands it runs and records their exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			g.role = natslog.RoleWorker
			// Stopping, it gives each command --grace between SIGTERM
			// and SIGKILL.
			allowStop(ctx, stopGrace+f.grace)
			// Without a server the data dir is not opened (nor created).
			b, err := openServer(ctx, g, "worker needs a running server: start `logbook serve` or pass --nats-url")
			if err != nil {
				return err
			}
			defer b.Close()
			// What it records follows redact.txt as it changes, as in serve.
			if b.rules, err = newLiveRules(b.dd, g.stderr, "logbook worker"); err != nil {
				return err
			}
			ws, err := newWorkers(1, b, f, g.stderr)
			if err != nil {
				return err
			}
			id := ws[0].Identity()
			fmt.Fprintf(g.stderr, "logbook worker: %s on %s\n", id.ID, id.Host)
			sid, err := b.log.Identity(ctx)
			if err != nil {
				return err
			}
			err = worker.RunWatched(ctx, ws[0], b.log, sid)
			if err = b.log.StreamLost(sid, err); errors.Is(err, natslog.ErrStreamLost) {
				return fmt.Errorf("%w: the log is gone; stopping", err)
			}
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f.register(cmd)
	return cmd
}

// hiddenSets holds this process's worker.HiddenSet of each data dir
// (dataDir → *worker.HiddenSet): serve's exec socket and its workers
// check every command against one, kept current, rather than reading
// /etc/passwd and the homes again for each.
var hiddenSets sync.Map

// hiddenPassed holds, per data dir and workspace (dd + "\x00" + ws),
// when checkHiddenEarly last found the workspace clear: at most
// hiddenPassedMax of them, forgotten all at once when full.
var hiddenPassed struct {
	sync.Mutex
	at map[string]time.Time
}

const (
	// hiddenRecheck is how long checkHiddenEarly takes a workspace it
	// found clear to stay clear.
	hiddenRecheck = 10 * time.Second
	// hiddenPassedMax bounds hiddenPassed.
	hiddenPassedMax = 256
)

// checkHiddenEarly is exec's own worker.CheckHidden of workspace ws
// against b's data dir's hidden paths, made before anything is on the
// log. It only spares the log a request every worker refuses: each
// worker checks each command it admits itself, whatever exec found. So a
// workspace found clear is taken as clear for hiddenRecheck, and a
// served exec of many commands in one workspace resolves the hidden
// paths (hundreds of them where there are many accounts) once in that
// time rather than once a command, beside the worker's check. A refusal
// is never remembered.
func (b *backend) checkHiddenEarly(ws string) error {
	key := string(b.dd) + "\x00" + ws
	hiddenPassed.Lock()
	at, ok := hiddenPassed.at[key]
	hiddenPassed.Unlock()
	if ok && time.Since(at) < hiddenRecheck {
		return nil
	}
	hide, keep := b.hiddenSet().Paths()
	err := worker.CheckHidden(ws, hide, keep)
	hiddenPassed.Lock()
	defer hiddenPassed.Unlock()
	switch {
	case err != nil:
		delete(hiddenPassed.at, key)
	case hiddenPassed.at == nil || len(hiddenPassed.at) >= hiddenPassedMax:
		hiddenPassed.at = map[string]time.Time{key: time.Now()}
	default:
		hiddenPassed.at[key] = time.Now()
	}
	return err
}

// hiddenSet returns the process's worker.HiddenSet of b's data dir.
func (b *backend) hiddenSet() *worker.HiddenSet {
	if h, ok := hiddenSets.Load(b.dd); ok {
		return h.(*worker.HiddenSet)
	}
	h, _ := hiddenSets.LoadOrStore(b.dd, worker.NewHiddenSet(string(b.dd)))
	return h.(*worker.HiddenSet)
}
