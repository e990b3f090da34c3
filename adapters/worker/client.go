package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Headers of an output message on lb.out.<command-id>.
const (
	// HeaderStream names the output stream: "pty", "stdout" or "stderr".
	HeaderStream = "Lb-Stream"
	// HeaderOffset is the byte offset of the chunk in its stream, decimal.
	HeaderOffset = "Lb-Offset"
	// HeaderPos is the byte offset of the chunk in the command's whole
	// output (all streams, in the order stored), decimal.
	HeaderPos = "Lb-Pos"
)

// ClientConfig configures a Client. Conn and Log are required.
type ClientConfig struct {
	// Conn reaches the log's NATS server (and its workers). Not owned.
	Conn *nats.Conn
	// Log is the event log on Conn. Not owned.
	Log events.Log
	// Reg decodes events; nil means events.NewRegistry().
	Reg *events.Registry
	// Host and Actor are stamped on the events the Client appends; ""
	// means os.Hostname() and "logbook".
	Host, Actor string
	// Clock stamps events; nil means time.Now.
	Clock events.Clock
	// IDs makes event ids; nil means ulid.Make.
	IDs events.IDSource
	// Redactor decides which argv elements and environment values of a
	// request are secrets (CheckSecrets), and which ids and folders it
	// names are (CheckNames): the same rules the workers and
	// the server redact with (the data dir's redact.txt over the
	// built-in ones); nil means redact.Default().
	Redactor *redact.Redactor
	// DeleteAfter, when set, has Watch delete its consumer on a
	// goroutine of its own as it returns, rather than wait for the
	// server's answer first (up to a second): for a Client in a
	// long-lived process (serve), whose caller then has the command's
	// end one round trip sooner. A short-lived process leaves it unset:
	// it could exit before the delete is sent, leaving the consumer to
	// the server's timeout (30 s).
	DeleteAfter bool
	// Hub, when set, serves the watch PrepareWatch prepares when it
	// follows its command to the end, from the hub's one consumer
	// rather than one of the watch's own (see WatchHub); shared by the
	// Clients of a long-lived process. Not owned.
	Hub *WatchHub
	// Handoff, when set, is given each request Request appends for a
	// new command id, once its append is acknowledged, so that a worker
	// of this process begins taking it at once (see Handoff). Not owned.
	Handoff *Handoff
}

// Client asks workers to run, stop and feed commands, and reads what
// they did. It is safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	js   jetstream.JetStream
	cmds *events.Executor[command.State]
	// prepared holds, by command id, the watches PrepareWatch made for
	// Watch to take: *preparedWatch.
	prepared sync.Map
}

// preparedWatch is a watch's consumer being made ahead of its Watch, or
// its route on ClientConfig.Hub.
type preparedWatch struct {
	done  chan struct{} // closed once cons and err are set
	cons  jetstream.Consumer
	err   error
	route *route // the hub's, when it serves the watch; then cons is nil
}

// NewClient returns a Client for cfg.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Conn == nil || cfg.Log == nil {
		return nil, errors.New("worker client: ClientConfig.Conn and ClientConfig.Log are required")
	}
	if cfg.Reg == nil {
		cfg.Reg = events.NewRegistry()
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Actor == "" {
		cfg.Actor = "logbook"
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.IDs == nil {
		cfg.IDs = ulid.Make
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("worker client: jetstream: %w", err)
	}
	return &Client{
		cfg: cfg,
		js:  js,
		cmds: &events.Executor[command.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: command.Init, Evolve: command.Evolve, Settled: command.State.Ended,
			IDs: cfg.IDs, Host: cfg.Host, Actor: cfg.Actor,
		},
	}, nil
}

func (c *Client) now() time.Time { return c.cfg.Clock().UTC().Truncate(time.Microsecond) }

// CheckRequest reports, wrapping events.ErrRejected, what is wrong with a
// request before it is appended, in words a person can act on: an empty
// argv, an unknown mode, a workspace that is not an absolute path, or a
// cwd outside the workspace (compared as cleaned paths; the worker
// checks again with symbolic links resolved), a session, workspace or
// cwd that red (nil: redact.Default()) takes for a secret (CheckNames),
// an argv element that red takes for a secret (CheckSecrets), an
// environment entry that is a secret or not KEY=VALUE (CheckEnv). The
// reducer's own checks (command.Decide) still apply.
func CheckRequest(req command.Request, red *redact.Redactor) error {
	if len(req.Argv) == 0 {
		return fmt.Errorf("request: %w: empty argv: name the command to run", events.ErrRejected)
	}
	if req.Argv[0] == "" {
		return fmt.Errorf("request: %w: the command's name (argv[0]) is empty: name the program to run", events.ErrRejected)
	}
	if err := CheckNames("", req, red); err != nil {
		return err
	}
	switch req.Mode {
	case events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess:
	default:
		return fmt.Errorf("request: %w: unknown mode %q: want %s, %s or %s", events.ErrRejected, req.Mode,
			events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess)
	}
	if err := checkCwd(req.Workspace, req.Cwd, false); err != nil {
		return fmt.Errorf("request: %w: %v", events.ErrRejected, err)
	}
	if err := CheckSecrets(req, red); err != nil {
		return err
	}
	return envShape(req.Env)
}

// Request appends the request for a new command id (an id the caller
// chose, e.g. a ULID string; a retried identical request appends nothing)
// and then the evictions that keep its session within
// command.MaxActive. active lists the session's active commands, oldest
// first (command.ActiveIDs over the command projection's rows). A zero
// req.At means now; a zero req.Cause means {cli, exec, ref: id}. It
// returns the ids of the evicted commands.
//
// Errors: an id ClientConfig.Redactor's rules take for a secret
// (CheckNames), CheckRequest's (by the same rules), then command.Decide's
// for the request (wrapping events.ErrRejected), or the log's. An
// eviction that finds its command ended meanwhile is skipped;
// one that fails otherwise is returned after the request has been
// appended.
func (c *Client) Request(ctx context.Context, id string, req command.Request, active []string) ([]string, error) {
	if err := CheckNames(id, command.Request{}, c.cfg.Redactor); err != nil {
		return nil, err
	}
	if err := CheckRequest(req, c.cfg.Redactor); err != nil {
		return nil, err
	}
	if req.At.IsZero() {
		req.At = c.now()
	}
	if req.Cause == (events.Cause{}) {
		req.Cause = events.Cause{Kind: "cli", Event: "exec", Ref: id}
	}
	if err := events.ValidID(id); err != nil {
		return nil, fmt.Errorf("request: command id: %w", err)
	}
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	var adm command.Admission
	decide := func(s command.State) (events.Decision, error) {
		a, err := command.DecideRequest(s, active, req)
		adm = a
		return a.Events, err
	}
	// A new id has no events: append without reading first, and fall back
	// to a read only if the id is taken (a retry, or a clash).
	evs, err := decide(command.Init(agg))
	fresh := false // appended without a read: a new command
	var res *reservation
	if err == nil {
		// A worker of this process claims the command while its request
		// is appended (Handoff.reserve); settled on every path below.
		res = c.cfg.Handoff.reserve(id, req.Session)
		defer res.settle(false)
		_, err = appendAt(ctx, c.cfg.Log, c.cfg.Reg, c.cfg.IDs, c.cfg.Host, c.cfg.Actor, 0, 0, evs)
		fresh = err == nil
	}
	if errors.Is(err, events.ErrConflict) {
		_, _, err = c.cmds.Execute(ctx, agg, decide)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
	var evicted []string
	for _, ev := range adm.Evictions {
		eagg := events.Aggregate{Kind: events.KindCommand, ID: ev.Command}
		_, _, err := c.cmds.Execute(ctx, eagg, func(s command.State) (events.Decision, error) {
			return command.Decide(s, ev.Evict)
		})
		if errors.Is(err, events.ErrRejected) || errors.Is(err, events.ErrNotFound) {
			continue
		}
		if err != nil {
			return evicted, fmt.Errorf("request %s: evict %s: %w", id, ev.Command, err)
		}
		evicted = append(evicted, ev.Command)
	}
	if fresh {
		// Once the evictions it decided are on the log: the command is
		// admitted against the session's active commands as they are
		// after them.
		if !res.settle(true) {
			c.cfg.Handoff.offer(id, req.Session)
		}
	}
	return evicted, nil
}

// Command returns command id's state as the log has it now. The error
// wraps events.ErrNotFound for a command never requested.
func (c *Client) Command(ctx context.Context, id string) (command.State, error) {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	if err := agg.Validate(); err != nil {
		return command.State{}, fmt.Errorf("command %s: %w", id, err)
	}
	recs, _, err := c.cfg.Log.Load(ctx, agg)
	if err != nil {
		return command.State{}, fmt.Errorf("command %s: %w", id, err)
	}
	st := command.Fold(command.Init(agg), recs)
	if !st.Exists() {
		return st, fmt.Errorf("command %s: %w", id, events.ErrNotFound)
	}
	return st, nil
}

// Stop appends a stop request for command id, by (a user or agent name;
// "" means the Client's Actor) for reason. The command's worker then
// stops it (SIGTERM, SIGKILL after the grace); a command still waiting
// for a worker is refused instead. Errors wrap events.ErrNotFound for an
// unknown id, an *EndedError for a command that has ended, and
// events.ErrRejected for a second stop.
func (c *Client) Stop(ctx context.Context, id, by, reason string) error {
	st, err := c.Command(ctx, id)
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if st.Ended() {
		return &EndedError{Op: "stop", ID: id, Status: st.Status}
	}
	if by == "" {
		by = c.cfg.Actor
	}
	cause := events.Cause{Kind: "cli", Event: "command stop", Detail: by, Ref: id}
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	_, _, err = c.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		if s.Ended() {
			return nil, &EndedError{Op: "stop", ID: id, Status: s.Status}
		}
		return command.Decide(s, command.Stop{By: by, Reason: reason, At: c.now(), Cause: cause})
	})
	return err
}

// Background appends command.backgrounded for command id: its requester
// stopped waiting after after. The command goes on. Errors: an
// *EndedError if it ended meanwhile, command.Decide's (wrapping
// events.ErrRejected or events.ErrNotFound), or the log's.
func (c *Client) Background(ctx context.Context, id string, after time.Duration) error {
	cause := events.Cause{Kind: "cli", Event: "wait expired", Ref: id}
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	_, _, err := c.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		if s.Ended() {
			return nil, &EndedError{Op: "background", ID: id, Status: s.Status}
		}
		return command.Decide(s, command.Background{AfterMS: after.Milliseconds(), At: c.now(), Cause: cause})
	})
	return err
}

// StdinOptions modify a stdin write.
type StdinOptions struct {
	// Withhold records no SHA-256 of the bytes (for a secret).
	Withhold bool
	// EOF closes the command's stdin after writing (Ctrl-D under a TTY).
	EOF bool
}

// Stdin writes data to the stdin of running command id, through the
// worker that started it (never through the log), and returns how many
// bytes were written. It blocks while the command does not read, until
// ctx is done. Errors: events.ErrNotFound for an unknown id; an
// *EndedError for a command that has ended ("stdin: command X has
// exited"); events.ErrRejected for one that has not started yet; and a
// worker that does not answer.
func (c *Client) Stdin(ctx context.Context, id string, data []byte, opts StdinOptions) (int, error) {
	st, err := c.Command(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("stdin: %w", err)
	}
	switch {
	case st.Ended():
		return 0, &EndedError{Op: "stdin", ID: id, Status: st.Status}
	case st.Status != command.StatusStarted:
		return 0, fmt.Errorf("stdin: %w: command %s has not started yet (status %s)", events.ErrRejected, id, st.Status)
	}
	body, err := json.Marshal(stdinRequest{Data: data, Withhold: opts.Withhold, EOF: opts.EOF})
	if err != nil {
		return 0, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	m, err := c.cfg.Conn.RequestWithContext(ctx, StdinSubject(st.Worker, id), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, fmt.Errorf("stdin: command %s: its worker %s does not answer (is it running?)", id, st.Worker)
	}
	if err != nil {
		return 0, fmt.Errorf("stdin: command %s: worker %s: %w", id, st.Worker, err)
	}
	var r stdinReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return 0, fmt.Errorf("stdin: command %s: worker answer: %w", id, err)
	}
	if r.Status != "" {
		return r.Bytes, &EndedError{Op: "stdin", ID: id, Status: r.Status}
	}
	if r.Error != "" {
		return r.Bytes, errors.New(r.Error)
	}
	return r.Bytes, nil
}

// Workers returns the live workers: the identities in HeartbeatBucket,
// ordered by id. None is not an error. While the cluster elects a leader
// it asks again, each attempt bounded by 5 s, for up to
// natslog.ElectionWait (30 s); then its error says so.
func (c *Client) Workers(ctx context.Context) ([]Identity, error) {
	var out []Identity
	err := electionBound(ctx, "list workers", func(actx context.Context) error {
		var err error
		out, err = c.workers(actx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	return out, ctx.Err()
}

// workers is one attempt of Workers under ctx.
func (c *Client) workers(ctx context.Context) ([]Identity, error) {
	kv, err := c.js.KeyValue(ctx, HeartbeatBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []Identity
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired or removed meanwhile
		}
		var id Identity
		if json.Unmarshal(e.Value(), &id) == nil {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b Identity) int { return strings.Compare(a.ID, b.ID) })
	return out, ctx.Err()
}

// anyWorker reports whether HeartbeatBucket holds a live key: one
// attempt of AwaitWorker under ctx. It asks the bucket's stream for its
// first heartbeat with direct gets (next by subject; one round trip
// unless delete markers of stopped workers come first), rather than
// making a consumer to list the keys. A bucket not made yet (no
// stream answers) holds none.
func (c *Client) anyWorker(ctx context.Context) (bool, error) {
	api := "$JS.API.DIRECT.GET.KV_" + HeartbeatBucket
	for seq := uint64(1); ; {
		req := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":"$KV.%s.>"}`, seq, HeartbeatBucket)
		m, err := c.cfg.Conn.RequestWithContext(ctx, api, req)
		if errors.Is(err, nats.ErrNoResponders) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(m.Data) == 0 {
			switch m.Header.Get("Status") {
			case "404":
				return false, nil
			case "":
			default:
				return false, fmt.Errorf("heartbeat bucket %s: direct get: %s %s", HeartbeatBucket, m.Header.Get("Status"), m.Header.Get("Description"))
			}
		}
		switch m.Header.Get("KV-Operation") {
		case "DEL", "PURGE": // a stopped worker's
		default:
			return true, nil
		}
		at, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return false, fmt.Errorf("heartbeat bucket %s: direct get: sequence %q: %w", HeartbeatBucket, m.Header.Get(jetstream.SequenceHeader), err)
		}
		seq = at + 1
	}
}

// Chunk is one stored piece of a command's output.
type Chunk struct {
	Seq    uint64 // stream sequence of the message
	Stream string // "pty", "stdout" or "stderr"
	Offset int64  // byte offset of Data in its stream
	Pos    int64  // byte offset of Data in the command's whole output
	Data   []byte // the bytes; owned by the receiver
}

// WatchOptions select what Watch reads.
type WatchOptions struct {
	// After skips output before this position in the whole output (Pos),
	// in bytes; a chunk that straddles it is cut.
	After int64
	// Follow keeps reading until the command has ended (exited,
	// abandoned, refused, or evicted before it started) instead of
	// stopping at the current end of the log.
	Follow bool
}

// watchInactive is how long the server keeps a watch's consumer that no
// one pulls from (its client gone without deleting it).
const watchInactive = 30 * time.Second

// Watch reads command id's events and output in stream order, calls fn
// with each output chunk (on Watch's goroutine; a chunk's Data is fn's),
// and returns the command's state after the last event read. Without
// Follow it stops at the current end of the log; with Follow it stops once
// the command has ended, by which time all of its output has been read
// (a worker stores output before it reports the exit).
//
// Errors: events.ErrNotFound for an unknown id; ctx's error when ctx ends
// first (the state so far is returned with it, which is how a caller
// waits with a deadline); fn's error; a read or decode error.
func (c *Client) Watch(ctx context.Context, id string, opts WatchOptions, fn func(Chunk) error) (command.State, error) {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	st := command.Init(agg)
	cons, r := c.takePrepared(ctx, id)
	if r != nil {
		defer c.cfg.Hub.remove(id, r)
		if opts.Follow {
			var err error
			st, err = c.watchRoute(ctx, id, r, &opts, fn)
			if !errors.Is(err, errHubStopped) {
				return st, err
			}
			// The hub stopped: on with a consumer of this watch's own,
			// from the start, for the output after what fn has had.
		}
	}
	if cons == nil {
		var err error
		if st, err = c.Command(ctx, id); err != nil {
			if ctx.Err() != nil {
				// A load cut short finds nothing: that is the deadline, not an
				// unknown command.
				return st, ctx.Err()
			}
			return st, fmt.Errorf("watch: %w", err)
		}
		if cons, err = c.watchConsumer(ctx, id); err != nil {
			return st, fmt.Errorf("watch %s: %w", id, err)
		}
	}
	// The server keeps a consumer (six goroutines and its state) until it
	// is deleted: one per watch, each `exec --wait`, would pile up.
	defer func() {
		if c.cfg.DeleteAfter {
			go c.deleteConsumer(ctx, cons)
		} else {
			c.deleteConsumer(ctx, cons)
		}
	}()
	it, err := cons.Messages(jetstream.PullMaxMessages(500),
		jetstream.PullExpiry(requestExpiry), jetstream.PullHeartbeat(requestHeartbeat))
	if err != nil {
		return st, fmt.Errorf("watch %s: %w", id, err)
	}
	defer it.Stop()
	unwatch := context.AfterFunc(ctx, it.Stop) // Next misses ctx during a reset
	defer unwatch()
	st = command.Init(agg)
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			return st, fmt.Errorf("watch %s: %w", id, err)
		}
		md, err := c.watchStep(id, msg, &st, &opts, fn)
		if err != nil {
			return st, err
		}
		if opts.Follow && st.Ended() || !opts.Follow && md.NumPending == 0 {
			return st, nil
		}
	}
}

// watchStep reads msg, one of command id's messages in stream order,
// into st (an event) or hands it to fn (a chunk of output after
// opts.After, which then moves past it), and returns its metadata.
func (c *Client) watchStep(id string, msg jetstream.Msg, st *command.State, opts *WatchOptions, fn func(Chunk) error) (*jetstream.MsgMetadata, error) {
	md, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", id, err)
	}
	if strings.HasPrefix(msg.Subject(), events.SubjectEvents+".") {
		e, err := c.cfg.Reg.Decode(msg.Data())
		if err != nil {
			return nil, fmt.Errorf("watch %s: seq %d: %w", id, md.Sequence.Stream, err)
		}
		*st = command.Evolve(*st, e)
	} else if ch, ok := chunkOf(msg, md.Sequence.Stream, opts.After); ok {
		opts.After = ch.Pos + int64(len(ch.Data))
		if err := fn(ch); err != nil {
			return nil, err
		}
	}
	return md, nil
}

// watchRoute is Watch with Follow on the hub's route r for command id,
// from the command's first message. errHubStopped: the hub stopped
// first, and opts.After is past the output fn has had.
func (c *Client) watchRoute(ctx context.Context, id string, r *route, opts *WatchOptions, fn func(Chunk) error) (command.State, error) {
	st := command.Init(events.Aggregate{Kind: events.KindCommand, ID: id})
	for {
		msgs, err := r.next(ctx)
		if err != nil {
			return st, err
		}
		for _, msg := range msgs {
			if _, err := c.watchStep(id, msg, &st, opts, fn); err != nil {
				return st, err
			}
			if st.Ended() {
				return st, nil
			}
		}
	}
}

// watchConsumer makes the ordered consumer Watch reads command id's
// events and output with, from the start, waiting out an election.
func (c *Client) watchConsumer(ctx context.Context, id string) (jetstream.Consumer, error) {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	return orderedConsumer(ctx, c.js, jetstream.OrderedConsumerConfig{
		FilterSubjects:   []string{agg.Subject(), natslog.OutputSubject(id)},
		DeliverPolicy:    jetstream.DeliverAllPolicy,
		MaxResetAttempts: natslog.ResetAttempts,
		// A client killed while it watches leaves its consumer behind:
		// the server drops it after this long without pulls, not the
		// default 5 minutes.
		InactiveThreshold: watchInactive,
	})
}

// PrepareWatch starts making, on a goroutine of its own, the consumer
// the next Watch of command id reads with, so that it is made while the
// request is appended rather than after: a caller that requests id and
// then watches it calls PrepareWatch(id) before Request, and
// DropWatch(id) if the request fails. A consumer made is not deleted
// unless a Watch takes it (Watch deletes it as it returns) or DropWatch
// drops it; the server drops one unused for 30 s. A Watch that takes it
// reads id's events from the start without first loading id: it must
// exist by then (Request returned nil for it).
func (c *Client) PrepareWatch(ctx context.Context, id string) {
	p := &preparedWatch{done: make(chan struct{})}
	if _, dup := c.prepared.LoadOrStore(id, p); dup {
		return
	}
	if c.cfg.Hub != nil {
		if p.route = c.cfg.Hub.add(ctx, id); p.route != nil {
			close(p.done)
			return
		}
	}
	go func() {
		defer close(p.done)
		p.cons, p.err = c.watchConsumer(ctx, id)
	}()
}

// DropWatch deletes the consumer PrepareWatch made for command id, if
// any, once it is made.
func (c *Client) DropWatch(ctx context.Context, id string) {
	cons, r := c.takePrepared(ctx, id)
	if cons != nil {
		c.deleteConsumer(ctx, cons)
	}
	if r != nil {
		c.cfg.Hub.remove(id, r)
	}
}

// takePrepared returns the consumer PrepareWatch made for id, once it is
// made, or the hub's route it registered, and forgets it; nil, nil when
// none was prepared, or its making failed or ctx ended first. The
// caller removes the route from the hub once done with it.
func (c *Client) takePrepared(ctx context.Context, id string) (jetstream.Consumer, *route) {
	v, ok := c.prepared.LoadAndDelete(id)
	if !ok {
		return nil, nil
	}
	p := v.(*preparedWatch)
	if p.route != nil {
		return nil, p.route
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		go func() { // made after all: not left to the server's timeout
			<-p.done
			if p.err == nil {
				c.deleteConsumer(context.Background(), p.cons)
			}
		}()
		return nil, nil
	}
	if p.err != nil {
		return nil, nil
	}
	return p.cons, nil
}

// deleteConsumer deletes cons from the log's stream, waiting up to a
// second for the answer: the server keeps a consumer (six goroutines and
// its state) until it is deleted.
func (c *Client) deleteConsumer(ctx context.Context, cons jetstream.Consumer) {
	if info := cons.CachedInfo(); info != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = c.js.DeleteConsumer(dctx, natslog.StreamName, info.Name)
	}
}

// attemptTimeout bounds one attempt of a request that electionBound
// sends again. The server places a consumer of one replica on a random
// peer of the stream, which may be a node that stopped answering and is
// not yet known as offline: the create then gets no answer, and another
// attempt may land on a live node.
const attemptTimeout = 5 * time.Second

// electionBound runs req, each attempt bounded by attemptTimeout, and
// again while the cluster does not serve it (natslog.Unserved: a leader
// being elected, a node that stopped answering) for up to
// natslog.ElectionWait or until ctx ends. When the wait ends first its
// error names what (e.g. "list workers"), how long it waited and for
// what, and wraps the last attempt's error.
func electionBound(ctx context.Context, what string, req func(context.Context) error) error {
	start, pause := time.Now(), 100*time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := req(actx)
		cancel()
		if err == nil || !natslog.Unserved(ctx, err) {
			return err
		}
		if waited := time.Since(start); waited+pause > natslog.ElectionWait {
			return fmt.Errorf("%s: the cluster did not answer in %v (waited for a leader to be elected, at most %v): %w",
				what, waited.Round(time.Second), natslog.ElectionWait, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		}
		pause = min(pause*2, time.Second)
	}
}

// orderedConsumer creates an ordered consumer of cfg on the log's
// stream, waiting out an election (electionBound).
func orderedConsumer(ctx context.Context, js jetstream.JetStream, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	err := electionBound(ctx, "create a consumer on "+natslog.StreamName, func(ctx context.Context) (err error) {
		cons, err = js.OrderedConsumer(ctx, natslog.StreamName, cfg)
		return err
	})
	return cons, err
}

// chunkOf returns the output chunk msg holds, cut to start at after, and
// whether anything is left of it.
func chunkOf(msg jetstream.Msg, seq uint64, after int64) (Chunk, bool) {
	h := msg.Headers()
	off, err1 := strconv.ParseInt(h.Get(HeaderOffset), 10, 64)
	pos, err2 := strconv.ParseInt(h.Get(HeaderPos), 10, 64)
	if err1 != nil || err2 != nil {
		return Chunk{}, false
	}
	data := msg.Data()
	if end := pos + int64(len(data)); end <= after {
		return Chunk{}, false
	}
	if pos < after {
		cut := after - pos
		data, off, pos = data[cut:], off+cut, after
	}
	return Chunk{Seq: seq, Stream: h.Get(HeaderStream), Offset: off, Pos: pos, Data: data}, true
}
