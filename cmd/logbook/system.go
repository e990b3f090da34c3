package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/gate/hookgate"
	"github.com/logbook-dev/logbook/adapters/hookrecord"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// System mode: serve runs as a user of its own, with a data dir the
// agent's user cannot read, and answers the host's users on the system
// socket (api.System) in --socket-dir. Hooks, the gate's question and
// the verbs a person needs go through it; everything else needs the data
// dir, so serve's user.

// systemFlags are serve's flags of system mode.
type systemFlags struct {
	dir    string // --socket-dir; "": no system socket
	allow  string // --socket-allow: users and groups let in
	decide string // --socket-decide: users and groups who may answer reviews
	group  string // --socket-group: the socket's group, 0660; "": 0666
}

func (f *systemFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "socket-dir", "", "system mode: also answer the host's users on the Unix socket "+api.SystemSocketName+" in this directory (made 0755 when missing; serve's user's or root's, written by no one else), e.g. /run/logbook; hooks, the gate, sessions, session show, audit and review allow/deny go through it, each caller named by its peer credentials")
	cmd.Flags().StringVar(&f.allow, "socket-allow", "", "with --socket-dir: the users (names or uids) and groups (group:NAME) let in on the socket besides serve's user and root, comma-separated, e.g. alice,group:agents; each reads only the sessions its own hooks opened")
	cmd.Flags().StringVar(&f.group, "socket-group", "", "with --socket-dir: give the socket to this group (name or gid), mode 0660, so the kernel refuses a user outside it before serve reads a byte (serve must be root or in that group); without it the socket is 0666 and --socket-allow alone decides")
	cmd.Flags().StringVar(&f.decide, "socket-decide", "", "with --socket-dir: of those let in, the users and groups who may also answer the gate's reviews (review allow/deny), recorded as themselves, and read every session; serve's user and root always may")
}

// parse checks f before serve starts and returns who the system socket
// lets in and who may decide reviews (host.Config.SocketAccess,
// SocketDeciders); with no --socket-dir, nothing. A --socket-allow or
// --socket-decide without --socket-dir or naming no user or group of the
// host, or --socket-dir on a reader (which takes no hooks), is a usage
// error.
func (f systemFlags) parse(reader bool) (access, deciders api.Access, gid string, err error) {
	if f.dir == "" {
		if f.allow != "" || f.decide != "" || f.group != "" {
			return access, deciders, gid, usageErrorf("--socket-allow, --socket-decide and --socket-group need --socket-dir")
		}
		return access, deciders, gid, nil
	}
	if reader {
		return access, deciders, gid, usageErrorf("--socket-dir: a reader (--role reader) takes no hooks; run it on a writer")
	}
	if access, err = api.ParseAccess(f.allow); err != nil {
		return access, deciders, gid, usageErrorf("--socket-allow: %v", err)
	}
	if deciders, err = api.ParseAccess(f.decide); err != nil {
		return access, deciders, gid, usageErrorf("--socket-decide: %v", err)
	}
	if f.group != "" {
		grp, err := user.LookupGroup(f.group)
		if err != nil {
			if grp, err = user.LookupGroupId(f.group); err != nil {
				return access, deciders, gid, usageErrorf("--socket-group %q: no such group on this host", f.group)
			}
		}
		gid = grp.Gid
	}
	return access, deciders, gid, nil
}

// auditAnswer answers host.VerbAudit in serve, on its backend b
// (host.Audit): an unknown id is an error wrapping events.ErrNotFound.
// A system socket peer limited to its own sessions (api.OwnOnly) may
// audit only a session svc's projection, caught up, says it owns: any
// other id, a workspace's too, reads as unknown.
func auditAnswer(b *backend, svc *api.Service) host.Handler {
	return host.Audit(func(ctx context.Context, id string) ([]replay.Item, error) {
		if _, limited := api.OwnOnly(ctx); limited {
			own, err := ownSession(ctx, b, svc, id)
			if err != nil {
				return nil, err
			}
			id = own
		}
		items, err := auditItems(ctx, b, id)
		if _, ok := errors.AsType[*notFoundError](err); ok {
			return nil, fmt.Errorf("%w: %s", events.ErrNotFound, strings.TrimPrefix(err.Error(), "session "))
		}
		return items, err
	})
}

// ownSession returns the session id (or unique prefix) names among the
// sessions a peer limited to its own (api.OwnOnly) may read, as svc's
// projection, caught up, says: any other session, a workspace too, reads
// as unknown, and a prefix is matched against the peer's sessions alone,
// so that neither a refusal nor an ambiguity tells of another user's.
func ownSession(ctx context.Context, b *backend, svc *api.Service, id string) (string, error) {
	unknown := fmt.Errorf("%w: %q not found: no session of yours has that id", events.ErrNotFound, id)
	if id == "" {
		return "", usageErrorf("want a session id (or a prefix of one)")
	}
	ids, err := lookupIDs(ctx, b, events.KindSession, id)
	if err != nil {
		return "", fmt.Errorf("look up session %q: %w", id, err)
	}
	if err := svc.CaughtUp(ctx); err != nil {
		return "", err
	}
	var own []string
	for _, sid := range ids {
		st, err := svc.Store.Session(sid)
		if err != nil {
			return "", err
		}
		if (st.Exists() || st.Observations > 0) && api.MayRead(ctx, st.Owner) {
			own = append(own, sid)
		}
	}
	switch {
	case slices.Contains(own, id):
		return id, nil
	case len(own) == 0:
		return "", unknown
	case len(own) == 1:
		return own[0], nil
	}
	return "", usageErrorf("%s", term.AmbiguousID(events.KindSession, id, own))
}

// socketPath returns the system socket a command asks, "" for none:
// --socket, else $LOGBOOK_SOCKET unless --data, --nats-url or --creds
// (or their variables, $LOGBOOK_DATA aside) say where to go. A directory
// names the socket api.SystemSocketName in it.
func (g *globals) socketPath() string {
	p := g.socket
	if p == "" && g.data == "" && g.natsURL == "" && g.credsPath == "" {
		p = os.Getenv("LOGBOOK_SOCKET")
	}
	if p == "" {
		return ""
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, api.SystemSocketName)
	}
	return p
}

// socketCaller returns the caller of the system socket at sock, or a
// usage error when the command line also names a data dir.
func socketCaller(g *globals, sock string) (api.Caller, error) {
	if g.socket != "" && g.data != "" {
		return nil, errSocketAndData()
	}
	return api.SocketCaller(sock), nil
}

// withSocket is withAPI through the system socket at sock: fn gets a
// backend with no log (ids are taken as given) and a caller of the
// socket.
func withSocket(g *globals, sock string, fn func(b *backend, call api.Caller) error) error {
	call, err := socketCaller(g, sock)
	if err != nil {
		return err
	}
	b := &backend{socket: sock}
	if dd, err := resolveDataDir(""); err == nil {
		b.dd = dd // the caller's own prices.json
	}
	err = fn(b, call)
	if errors.Is(err, api.ErrNotOnSocket) {
		return notOnSocket(g, sock)
	}
	return err
}

// notOnSocket is the usage error of a command whose question the system
// socket at sock does not answer (api.ErrNotOnSocket).
func notOnSocket(g *globals, sock string) error {
	name := g.commandName()
	return usageErrorf("%s: the system socket %s does not answer it (it answers hooks, the gate, sessions, session show, audit, review and usage): give --data DIR for a data dir (serve's, as a user who may open it)", name, sock)
}

// auditViaSocket is `logbook audit ID` through the system socket at sock.
func auditViaSocket(ctx context.Context, g *globals, sock, id string) error {
	call, err := socketCaller(g, sock)
	if err != nil {
		return err
	}
	var out host.AuditReply
	if err := call(ctx, host.VerbAudit, host.AuditRequest{ID: id, JSON: g.json}, &out); err != nil {
		return err
	}
	if g.json {
		_, err := g.stdout.Write(append(out.Items, '\n'))
		return err
	}
	width := term.Width(g.stdout)
	return term.Print(g.stdout, func(w io.Writer) error {
		text := out.Text
		if width >= 40 {
			text = term.Wrap(text, width)
		}
		_, err := io.WriteString(w, text)
		return err
	})

}

// hookViaSocket is `logbook hook claude` through the system socket at
// sock: payload is checked and sent, and the hook exits once serve has it
// in its intake journal. There is no spool: the agent's user cannot write
// serve's, and no server would drain one of its own; a payload serve
// does not take is an error (exit 1, not kept), and one it did not answer
// for in time an error saying whether serve kept it is unknown.
func hookViaSocket(ctx context.Context, g *globals, sock string, payload []byte) error {
	call, err := socketCaller(g, sock)
	if err != nil {
		return err
	}
	if len(payload) > maxHookPayload {
		return fmt.Errorf("hook claude: payload over %d MiB refused", maxHookPayload>>20)
	}
	prepared, err := claude.PrepareHook(payload)
	if err != nil {
		return fmt.Errorf("hook claude: %w (not kept)", hookrecord.RedactErr(hookRedactor(g), err))
	}
	host, _ := os.Hostname()
	agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	req := api.HookRequest{ID: ulid.Make().String(), Text: string(prepared), Process: agent}
	if err := call(ctx, api.VerbHook, req, &api.HookReply{}); err != nil {
		if _, answered := errors.AsType[*api.RemoteError](err); !answered && ctx.Err() != nil {
			// Serve may have taken it: no answer says otherwise.
			return fmt.Errorf("hook claude: %w (%s)", hookrecord.RedactErr(hookRedactor(g), err), hooksock.UnknownIfKept)
		}
		return fmt.Errorf("hook claude: %w (not kept: in system mode a hook has no spool)", hookrecord.RedactErr(hookRedactor(g), err))
	}
	return nil
}

// gateViaSocket returns the gateAsk of the system socket at sock: the
// payload, checked, goes to serve's gate, which records it and answers
// with a verdict within budget. Any failure is the caller's deny; nothing
// is spooled.
func gateViaSocket(sock string) func(ctx context.Context, g *globals, payload []byte, budget time.Duration) (gate.Verdict, error) {
	return func(ctx context.Context, g *globals, payload []byte, budget time.Duration) (gate.Verdict, error) {
		call, err := socketCaller(g, sock)
		if err != nil {
			return gate.Verdict{}, err
		}
		if len(payload) > maxHookPayload {
			return gate.Verdict{}, fmt.Errorf("payload over %d MiB refused", maxHookPayload>>20)
		}
		prepared, err := claude.PrepareHook(payload)
		if err != nil {
			return gate.Verdict{}, fmt.Errorf("unusable hook payload: %w", err)
		}
		input, err := gate.HookInput(payload)
		if err != nil {
			return gate.Verdict{}, fmt.Errorf("unusable hook payload: %w", err)
		}
		host, _ := os.Hostname()
		agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
		ctx, cancel := context.WithTimeout(ctx, budget+hookgate.Margin)
		defer cancel()
		req := gate.HookGateRequest{ID: ulid.Make().String(), Text: string(prepared), Input: input, Process: agent, BudgetMS: budget.Milliseconds()}
		var v gate.Verdict
		if err := call(ctx, gate.VerbGate, req, &v); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return gate.Verdict{}, fmt.Errorf("the gate gave no verdict: none came within the budget of %s", budget)
			}
			return gate.Verdict{}, fmt.Errorf("the gate gave no verdict: %s", userMessage(err))
		}
		return v, nil
	}
}
