package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/top"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func topCmd(g *globals) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "top",
		Short: "A live terminal view of the sessions, pending reviews first, with keys to answer them",
		Long: `top draws the running server's live sessions on the terminal, grouped by
phase, under the gate's pending reviews and above the active commands, and
reads them again every --interval and whenever a session's events are
appended. Keys: a allows the selected review and d denies it (each asks
for a reason; enter sends it, esc cancels), recorded as the person, as
` + "`logbook review allow|deny`" + ` records it; enter opens the audit of the selected
row's session; o follows the selected command's output; r reads again; ?
shows the keys; q or esc goes back, q in the list and ctrl+c quit. It
reaches serve as the other commands do: the data dir's serve, --nats-url
with --creds (a reader's credentials read, a writer's also answer), or a
system socket (--socket), where output cannot be followed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond || interval > time.Hour {
				return usageErrorf("--interval %s: want 100ms to 1h", interval)
			}
			if g.json {
				return usageErrorf("--json: top draws on a terminal; for JSON use logbook sessions --json and logbook review list --json")
			}
			if !term.IsTerminal(g.stdout) {
				return usageErrorf("top draws on a terminal, and standard output is not one: for a list that prints, use logbook sessions and logbook review list")
			}
			if f, ok := g.stdin.(*os.File); !ok || !term.IsTerminal(f) {
				return usageErrorf("top reads its keys from a terminal, and standard input is not one: run it without redirecting standard input")
			}
			if os.Getenv("TERM") == "dumb" {
				return usageErrorf("top draws with escape sequences, which TERM=dumb says this terminal does not take: for a list that prints, use logbook sessions and logbook review list")
			}
			g.requireServer = true
			ctx := cmd.Context()
			return withAPI(ctx, g, func(b *backend, call api.Caller) error {
				src := newTopSource(ctx, g, b, call)
				defer src.close()
				// A server that does not answer (no socket there, serve
				// gone) is said here, before the screen is taken.
				if _, err := src.Snapshot(ctx); err != nil {
					return err
				}
				src.follow(b)
				opts := top.Options{Interval: interval, AltScreen: true, Changed: src.changed}
				return top.Run(ctx, src, g.stdin, g.stdout, opts)
			})
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often to read the sessions, reviews and commands again (besides whenever a session's events are appended)")
	return cmd
}

// topWhere names, for top's header, the server g reaches through b and
// this host.
func topWhere(g *globals, b *backend) (server, hostname string) {
	hostname, _ = os.Hostname()
	switch {
	case b.socket != "":
		return "socket " + b.socket, hostname
	case g.natsURL != "":
		return "serve at " + g.natsURL, hostname
	}
	if si, ok := b.dd.readServeInfo(); ok {
		return fmt.Sprintf("serve pid %d at %s", si.PID, si.URL), hostname
	}
	return "serve of " + string(b.dd), hostname
}

// topSource is top's top.Source: the server's API through call (the
// verbs `logbook sessions`, `review`, `commands` ask), the log through b
// for an audit and a command's output. Its methods run on goroutines of
// their own: b, call and server change together, under mu, when the
// data dir's serve has restarted (reopen), and the change feed with
// them (follow).
type topSource struct {
	g        *globals
	host     string
	ctx      context.Context // top's: the change feeds end with it
	changed  chan struct{}   // top.Options.Changed: each feed's signals, coalesced
	mu       sync.Mutex
	b        *backend
	call     api.Caller
	server   string
	reopened *backend           // a backend reopen opened, closed by close
	stopFeed context.CancelFunc // ends the feed follow started last
}

// newTopSource returns the source of a top that runs until ctx ends,
// reading through b and call; its change feed starts with follow.
func newTopSource(ctx context.Context, g *globals, b *backend, call api.Caller) *topSource {
	s := &topSource{g: g, ctx: ctx, changed: make(chan struct{}, 1), b: b, call: call}
	s.server, s.host = topWhere(g, b)
	return s
}

// sessionEvents is the filter of top's change feed: a session's events.
const sessionEvents = events.SubjectEvents + "." + events.KindSession + ".>"

// follow signals s.changed at each session event that b's log holds
// after its last message now, in place of the feed of the backend
// before: a serve started again is followed too, not only read every
// interval. Without a log (a system socket) there is no feed.
func (s *topSource) follow(b *backend) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	if s.stopFeed != nil {
		s.stopFeed()
	}
	s.stopFeed = cancel
	s.mu.Unlock()
	if b.log == nil {
		return
	}
	last, err := b.log.LastSeq(ctx)
	if err != nil {
		return
	}
	changed, ended := b.log.Changes(ctx, sessionEvents, last+1)
	go func() {
		for {
			select {
			case <-changed:
				select {
				case s.changed <- struct{}{}:
				default:
				}
			case <-ended:
				return
			}
		}
	}()
}

// conn returns the backend, the caller and the server's name in use.
func (s *topSource) conn() (*backend, api.Caller, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b, s.call, s.server
}

// reopen connects again to the data dir's serve when err says the
// connection to it is gone (nats.go gives up after a few tries, and a
// serve started again listens on a port of its own), and reports
// whether it did. Only a data dir's serve is reopened: a socket's and
// --nats-url's connection are their own.
func (s *topSource) reopen(ctx context.Context, err error) bool {
	b, _, _ := s.conn()
	if !b.remote || b.socket != "" || s.g.natsURL != "" ||
		!errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		return false
	}
	nb, oerr := openBackend(ctx, s.g)
	if oerr != nil {
		return false
	}
	if !nb.remote {
		nb.Close()
		return false
	}
	server, _ := topWhere(s.g, nb)
	s.mu.Lock()
	old := s.reopened
	s.b, s.reopened, s.server = nb, nb, server
	s.call = remoteCaller(s.g, nb, new(staleSeen))
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	s.follow(nb)
	return true
}

// close ends the change feed and closes what reopen opened.
func (s *topSource) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopFeed != nil {
		s.stopFeed()
	}
	if s.reopened != nil {
		s.reopened.Close()
		s.reopened = nil
	}
}

// Snapshot reads the open reviews, the sessions `logbook sessions` lists
// and the active commands, connecting again to a data dir's serve that
// restarted.
func (s *topSource) Snapshot(ctx context.Context) (top.Snapshot, error) {
	out, err := s.snapshot(ctx)
	if err != nil && s.reopen(ctx, err) {
		out, err = s.snapshot(ctx)
	}
	return out, err
}

func (s *topSource) snapshot(ctx context.Context) (top.Snapshot, error) {
	b, call, server := s.conn()
	now := time.Now()
	out := top.Snapshot{Server: server, Host: s.host, At: now}
	var reviews gate.ReviewsReply
	err := call(ctx, gate.VerbReviews, gate.ReviewsRequest{}, &reviews)
	if _, denied := errors.AsType[*api.DeniedError](err); denied {
		// A reader's credentials list sessions but not reviews: the
		// rest shows, and the header says why no review does.
		out.Note = "reviews not shown: " + err.Error()
		out.ReviewsHidden = true
	} else if err != nil {
		return out, err
	}
	out.Reviews = reviews.Reviews
	rows, _, err := api.SessionList{}.Rows(ctx, call, now)
	if err != nil {
		return out, err
	}
	out.Sessions = make([]session.Summary, len(rows))
	for i, r := range rows {
		out.Sessions[i] = r.Summary
	}
	if b.socket == "" {
		// The system socket lists no commands: they are serve's user's.
		if out.Commands, err = api.ListCommands(ctx, call, api.CommandsRequest{Active: true}, 0); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Decide answers a review as `logbook review allow|deny` does: the
// reason checked and redacted, the person's actor (which the system
// socket replaces with its peer's), a fresh ref.
func (s *topSource) Decide(ctx context.Context, d top.Decide) (string, error) {
	if err := checkTyped("the reason", d.Reason, maxReviewReason); err != nil {
		return "", err
	}
	reason, err := redactTyped(s.g, d.Reason, maxReviewReason)
	if err != nil {
		return "", err
	}
	req := gate.DecideRequest{Session: d.Session, ID: d.Review, Verdict: d.Verdict, Reason: reason, Actor: personActor(), Ref: ulid.Make().String()}
	var out gate.DecideReply
	_, call, _ := s.conn()
	if err := call(ctx, gate.VerbReviewDecide, req, &out); err != nil {
		return "", err
	}
	return fmt.Sprintf("review %s of session %s: %s", out.Review.ID, out.Session, out.Review.Winner()), nil
}

// Audit returns session sess's audit as `logbook audit` prints it.
func (s *topSource) Audit(ctx context.Context, sess string) (string, error) {
	b, call, _ := s.conn()
	if b.socket != "" {
		var out host.AuditReply
		if err := call(ctx, host.VerbAudit, host.AuditRequest{ID: sess}, &out); err != nil {
			return "", err
		}
		return out.Text, nil
	}
	if b.log == nil {
		return "", errors.New("the audit reads the log, which does not answer")
	}
	items, err := auditItems(ctx, b, sess)
	if err != nil {
		return "", err
	}
	var text strings.Builder
	if err := term.Audit(&text, items, 0); err != nil {
		return "", err
	}
	return text.String(), nil
}

// Follow follows command cmd's output as `logbook command output
// --follow` does, through the log.
func (s *topSource) Follow(ctx context.Context, cmd string, out func([]byte)) (string, error) {
	b, _, _ := s.conn()
	if b.socket != "" || b.log == nil {
		return "", errors.New("a command's output is read from the log over NATS, which the system socket does not give: run top as serve's user with --data, or with --nats-url and --creds")
	}
	cl, err := newCommandClient(b)
	if err != nil {
		return "", err
	}
	st, err := cl.Watch(ctx, cmd, worker.WatchOptions{Follow: true}, func(c worker.Chunk) error {
		out(c.Data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return term.CommandStatus(st), nil
}
