package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/doctor"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/adapters/term"
)

// doctorCheck is one line of `logbook doctor` (doctor.Check).
type doctorCheck = doctor.Check

// Check statuses (doctor.OK, doctor.Warn, doctor.Fail).
const (
	checkOK   = doctor.OK
	checkWarn = doctor.Warn
	checkFail = doctor.Fail
)

func doctorCmd(g *globals) *cobra.Command {
	var bwrap string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what Logbook needs on this machine, each line ok, warn or fail with the fix",
		Long: `doctor checks bubblewrap (present, and able to build the sandbox for this
user), the logbook binaries on PATH, logbook-reporter beside logbook (restricted
commands start slower without it), the data dir's permissions, the running
server, the hooks in Claude Code's settings, Claude Code's and Codex's data
dirs, and cgroup v2. With --socket (or $LOGBOOK_SOCKET) it checks the serve
in system mode behind that socket instead of a data dir of your own. Each line is ok, warn or fail, with the fix. It exits 1
when a check fails, 0 otherwise. It changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sock := g.socketPath(); sock != "" {
				if _, err := socketCaller(g, sock); err != nil {
					return err
				}
			}
			checks := doctor.Run(cmd.Context(), doctorEnv(g, bwrap))
			if g.json {
				if err := writeJSON(g.stdout, checks); err != nil {
					return err
				}
			} else {
				printChecks(g.stdout, checks)
			}
			if failed := doctor.Failed(checks); failed > 0 {
				return fmt.Errorf("%s failed", term.Plural(failed, "check"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&bwrap, "bwrap", "", "bubblewrap executable to check (default: bwrap in PATH)")
	return cmd
}

// printChecks writes checks as `logbook doctor` prints them: one line
// each, status, name and what was found, and a line with the fix when
// there is one. What a check found and its fix name paths and values
// from outside (a data dir, an executable's path): each is kept on its
// line (term.Field), a control character in them shown escaped.
func printChecks(w io.Writer, checks []doctorCheck) {
	for _, c := range checks {
		fmt.Fprintf(w, "%-4s  %-12s %s\n", c.Status, c.Name, term.Field(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(w, "      %-12s fix: %s\n", "", term.Field(c.Fix))
		}
	}
}

// doctorEnv wires doctor's checks to g's data dir and server.
func doctorEnv(g *globals, bwrap string) doctor.Env {
	env := doctor.Env{Bwrap: bwrap, NATSURL: g.natsURL, Message: userMessage}
	if sock := g.socketPath(); sock != "" {
		call := api.SocketCaller(sock)
		env.Socket = sock
		env.SocketStatus = func(ctx context.Context) (api.StatusReply, error) {
			var st api.StatusReply
			return st, call(ctx, api.VerbStatus, struct{}{}, &st)
		}
		return env
	}
	dd, err := resolveDataDir(g.data)
	if err != nil {
		env.DataDirErr = err
		return env
	}
	env.DataDir, env.Journal = dd.dir(), dd.path(host.IntakeJournal)
	allow, err := sandboxAllow(nil)
	env.SandboxAllow, env.SandboxAllowErr = allowStrings(allow), err
	env.Witness = func() (doctor.Check, bool) { return checkWitness(dd) }
	env.Policy = func() (doctor.Check, bool) { return doctorPolicy(dd) }
	env.Configs = func() []doctor.Check { return doctorConfigs(dd) }
	env.Server = doctor.Server{
		Status:      func(ctx context.Context) (api.StatusReply, error) { return host.ServeStatus(ctx, dd.dir(), g.reach()) },
		Unavailable: host.UnavailableText,
		Open: func(ctx context.Context) (doctor.Conn, error) {
			gg := *g
			gg.cmdName = "doctor"
			b, err := openBackend(ctx, &gg)
			if err != nil {
				if b != nil {
					b.Close()
				}
				return nil, err
			}
			return doctorConn{b}, nil
		},
	}
	return env
}

// doctorPolicy is doctor's check of the data dir's policy.toml: ok when
// it parses, fail naming the fault when not (serve refuses to start on
// it; a running serve keeps the last version that parsed); none when
// there is no such file.
func doctorPolicy(dd dataDir) (doctor.Check, bool) {
	p := dd.path(gate.PolicyFile)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return doctor.Check{}, false
	}
	c := doctor.Check{Name: "policy", Status: doctor.OK, Detail: p + " parses"}
	var fault error
	bad, err := gate.CheckFiles([]string{p}, true, func(string, []*gate.PolicyError) {}, func(err error) { fault = err })
	if err != nil {
		fault = err
	}
	if fault != nil || bad > 0 {
		c.Status, c.Detail = doctor.Fail, userMessage(fault)
		c.Fix = "fix it (`logbook policy check` names the line and column): serve does not start on it, and a running serve keeps the last version that parsed"
	}
	return c, true
}

// doctorConfigs checks the data dir's redact.txt and notify.toml, when
// each is there, as the commands that read them do: a redact.txt that
// does not read or compile stops serve and every command that redacts
// (fail); a notify.toml that does not read or parse stops serve at its
// start, and a running one keeps its last good config (fail).
func doctorConfigs(dd dataDir) []doctor.Check {
	var out []doctor.Check
	if p := dd.path("redact.txt"); exists(p) {
		c := doctor.Check{Name: "redact.txt", Status: doctor.OK, Detail: p + " compiles"}
		if _, err := dd.parser(); err != nil {
			c.Status, c.Detail = doctor.Fail, userMessage(err)
			c.Fix = "fix or remove it: serve does not start on it, and commands that redact stop on it"
		}
		out = append(out, c)
	}
	if p := dd.path(notify.File); exists(p) {
		c := doctor.Check{Name: "notify.toml", Status: doctor.OK, Detail: p + " parses"}
		if _, _, err := notify.Load(p); err != nil {
			c.Status, c.Detail = doctor.Fail, userMessage(err)
			c.Fix = "fix it (the message names the line): serve does not start on it, and a running serve keeps the last version that parsed"
		}
		out = append(out, c)
	}
	return out
}

// exists reports whether there is anything at path (a symlink counts, as
// do a FIFO and a directory: each is a fault doctor names).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// doctorConn is a backend as doctor's server check reads it.
type doctorConn struct{ *backend }

func (c doctorConn) Remote() bool                                { return c.remote }
func (c doctorConn) DiskPaused(ctx context.Context) string       { return c.diskPaused(ctx) }
func (c doctorConn) LastSeq(ctx context.Context) (uint64, error) { return c.log.LastSeq(ctx) }
