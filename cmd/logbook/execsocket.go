package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
)

// servedExec is what exec runs with when serve runs it for a client of
// its exec socket (execAnswer): serve's backend in place of a connection
// of its own, and the client's working directory, environment and
// identity in place of this process's.
type servedExec struct {
	b     *backend // serve's; exec never closes it
	cwd   string   // the client's working directory, absolute
	env   []string // the client's entries of worker.InheritedEnv
	actor string   // the person the client runs as (peerActor)
	// catchUp brings serve's projection up to the log once for the
	// questions exec asks serve's API before it requests the command
	// (api.Service.CatchUpOnce; worker.Submission.CatchUp); nil: each
	// answer catches up on its own.
	catchUp func(context.Context) (context.Context, error)
	// hub is serve's one reader of every command's events and output,
	// which exec's wait follows its command on (worker.WatchHub) rather
	// than on a consumer made for it.
	hub *worker.WatchHub
}

// person returns the actor of the person exec runs for: the exec
// socket's peer when serve runs it (servedExec.actor), else this
// process's user (personActor).
func (g *globals) person() string {
	if g.served != nil {
		return g.served.actor
	}
	return personActor()
}

// peerActor names the person running as uid on this host as personActor
// does ("person:alice@host"); a uid with no name is "uid-1000".
func peerActor(uid uint32) string {
	name := "uid-" + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "person:" + name + "@" + host
}

// execAnswer returns the runner of serve's exec socket (host.ServeExec)
// over serve's backend b: it runs `logbook exec` with the request's
// arguments in this process, through b's connection and with serve's API
// answered by call in this process (api.InProcess), for the client's
// directory, environment and peer credentials, and answers what exec
// printed and its exit status. A request whose arguments name another
// data dir, a NATS URL, credentials or a system socket is refused
// (exit 2): the client asks `logbook exec` for those. catchUp, when not
// nil, is servedExec.catchUp: the API service's own, which call answers
// with.
func execAnswer(b *backend, call api.Caller, catchUp func(context.Context) (context.Context, error)) host.ExecRunner {
	hostname, _ := os.Hostname()
	hub := worker.NewWatchHub(b.nc)
	eb := &backend{dd: b.dd, reg: b.reg, nc: b.nc, log: b.log, srv: b.srv, rules: b.rules, handoff: b.handoff, remote: true,
		api: api.PrefixFor(hostname, string(b.dd.dir())), local: call}
	return func(ctx context.Context, req execsock.Request, peer unix.Ucred, stdout, stderr io.Writer) int {
		xb := *eb // this exec's: redact.txt looked at once, as it is now
		if eb.rules != nil {
			xb.pinned = eb.rules.Current()
		}
		se := &servedExec{b: &xb, cwd: req.Cwd, env: req.Env, actor: peerActor(peer.Uid), catchUp: catchUp, hub: hub}
		if req.Env == nil {
			se.env = []string{}
		}
		g := &globals{stdin: bytes.NewReader(nil), stdout: stdout, stderr: stderr, served: se}
		err := runServedExec(ctx, g, req)
		execsock.Mark(ctx, execsock.StageSeen)
		if err != nil {
			fmt.Fprintf(stderr, "logbook: %s\n", term.Lines(userMessage(err)))
			return exitCode(err)
		}
		return 0
	}
}

// runServedExec runs `logbook exec req.Args…` over g (g.served set).
func runServedExec(ctx context.Context, g *globals, req execsock.Request) error {
	if req.Cwd == "" || req.Cwd[0] != '/' {
		return usageErrorf("exec socket: the request's working directory %q: want an absolute path", req.Cwd)
	}
	root := newRoot(g)
	root.SetArgs(append([]string{"exec"}, req.Args...))
	return root.ExecuteContext(ctx)
}

// servedFlags are the global flags an exec served on the exec socket
// refuses: they name another server than the one that serves it.
var servedFlags = []string{"data", "nats-url", "creds", "socket"}
