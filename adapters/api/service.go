package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// Service is what a server does for its clients, and what a command does
// for itself when no server runs: ingest hooks, answer queries from the
// projection, verify it against a replay, end sessions on a person's
// word. Its handlers (Handlers) take a request's JSON and return its
// answer; Serve puts them on a NATS connection, Local calls them in
// process.
type Service struct {
	// Log is the event log; Store the projection it feeds through Runner.
	Log    events.Log
	Store  *projections.Store
	Runner *projections.Runner
	// Ing ingests hook payloads and reconciles sessions.
	Ing *claude.Ingester
	// cx ingests Codex CLI notify payloads.
	cx    *codex.Ingester
	Spool *claude.Spool
	// agents are the agents whose files Watch follows, in the order it
	// asks them whether a folder is theirs (Config.Agents); followers
	// their ingesters by agent name (ingest.Agent.Name): Claude Code's is
	// Ing and Codex CLI's cx, the others opened by their descriptor.
	agents    []ingest.Agent
	followers map[string]ingest.Follower
	// LocalVerdict, when set, turns a spooled entry that carries the
	// verdict a gated hook gave without a server (claude.Entry.Verdict)
	// into what records it in the entry's own batch (the gate's
	// RecordLocal); nil records the observation alone.
	LocalVerdict func(claude.Entry) ingest.Then
	red          *claude.Redactor                // the data dir's rules, for rejected spool entries
	sx           *events.Executor[session.State] // requests a person makes of a session
	intake       atomic.Pointer[Intake]          // hooks taken on the socket, set by OpenIntake
	own          owners                          // owners of the sessions hooks came for on the system socket (checkOwner)
	// Unattested, when set, lists the events the log has left out of
	// every fold as unattested; Verify reports them.
	Unattested func() []replay.Unattested
	// AcceptedMissing, when set, returns how many sequences missing from
	// the stream a start accepted (serve --accept-stream-loss, kept in
	// stream.json): Verify fails on a walk that finds more, not on
	// those. Nil: none accepted.
	AcceptedMissing func() uint64
	// LogState, when set (serve sets it), says whether the log answers:
	// while it does not, a read a client allows to be stale
	// (AllowStale) is answered from the projection as it stands. Nil:
	// every read catches up first.
	LogState LogState
	// Said, when set (serve sets it before it drains the spool), is told
	// each spooled payload DrainSpool sets aside as bad input, and each
	// stray file it moves out of the way: a hook that exited 0 once its
	// payload was spooled has no one else to say it was not recorded.
	// What it is told may begin with serve's log level marker ("WARN: ",
	// servelog.Log).
	Said func(format string, args ...any)
	// Paused, when set (serve sets it), says why appends wait for disk
	// space (diskfull.Pause.String), "" while they go on: a wait for the
	// hook intake that times out says it.
	Paused func() string
	// PausedSince, when set (serve sets it), says since when appends
	// wait for disk space (zero while they go on): meanwhile a read a
	// client allows to be stale (AllowStale) does not wait for the hook
	// payloads the intake took, and says they are not shown.
	PausedSince func() time.Time
	// Spooled, when set (serve sets it), counts the hook payloads that
	// wait in the data dir's spool: hooks that could not hand them to
	// serve (its intake did not answer in time), not yet taken. A read
	// made while appends are paused says them beside the intake's.
	Spooled func() int
	// pageBytes is the most bytes of rows a page of a listing holds, so
	// that it fits one message of the connection.
	pageBytes int
}

// Redactor returns the data dir's redaction rules the service was made
// with (the parser's), for other services on the same API.
func (s *Service) Redactor() *claude.Redactor { return s.red }

// Config is what NewService needs: the log and its registry, the
// projection store, the transcript parser (with the data dir's redaction
// rules), this host's name, the spool directory, and the most bytes one
// answer message carries (PartSize of the connection).
type Config struct {
	Log      events.Log
	Reg      *events.Registry
	Store    *projections.Store
	Parser   *claude.Parser
	Host     string
	SpoolDir string
	PartSize int
	// Private lists directories (the data dir) whose files are never
	// read as transcripts (claude.IngestConfig.Private).
	Private []string
	// Agents lists the agents whose files Watch follows (cmd/logbook's
	// list), in the order Watch asks them whether a folder is theirs;
	// nil: Watch follows none.
	Agents []ingest.Agent
}

// NewService returns a Service over cfg; it fails when an agent's
// ingester or the spool cannot be opened.
func NewService(cfg Config) (*Service, error) {
	ing, err := claude.NewIngester(claude.IngestConfig{Log: cfg.Log, Reg: cfg.Reg, Parser: cfg.Parser, Host: cfg.Host, Private: cfg.Private})
	if err != nil {
		return nil, err
	}
	cx, err := codex.NewIngester(codex.IngestConfig{Log: cfg.Log, Reg: cfg.Reg, Parser: codex.NewParserFrom(cfg.Parser), Host: cfg.Host, Private: cfg.Private})
	if err != nil {
		return nil, err
	}
	// The agents whose hooks or notify payloads the service takes follow
	// their files with the same ingester, so that both share its view of
	// the session.
	followers := map[string]ingest.Follower{claude.Agent: ing, codex.Agent: cx}
	for _, a := range cfg.Agents {
		if _, ok := followers[a.Name]; ok {
			continue
		}
		f, err := a.Open(ingest.Env{Log: cfg.Log, Reg: cfg.Reg, Redaction: cfg.Parser, Host: cfg.Host, Private: cfg.Private})
		if err != nil {
			return nil, fmt.Errorf("%s ingester: %w", a.Name, err)
		}
		followers[a.Name] = f
	}
	sp, err := claude.Open(cfg.SpoolDir)
	if err != nil {
		return nil, err
	}
	return &Service{
		Log: cfg.Log, Store: cfg.Store, Ing: ing, cx: cx, Spool: sp, red: cfg.Parser.Redactor(),
		agents: cfg.Agents, followers: followers,
		Runner:    &projections.Runner{Log: cfg.Log, Store: cfg.Store},
		pageBytes: cfg.PartSize - pageHeadroom,
		sx: &events.Executor[session.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: session.Init, Evolve: session.Evolve, IDs: ulid.Make, Host: cfg.Host,
		},
	}, nil
}

// Handlers returns the service's API handlers by verb: every verb but
// VerbStatus, which only a running server answers.
func (s *Service) Handlers() map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		VerbHook: s.Hook, VerbSessions: s.Sessions, VerbSession: s.Session, VerbVerify: s.Verify,
		VerbCommands: s.Commands, VerbCommand: s.Command,
		VerbSessionEnd: s.EndSession, VerbSessionAbandon: s.EndSession,
		VerbWorkspaces: s.Workspaces, VerbWorkspaceAt: s.WorkspaceAt,
	}
}

// HookRequest carries one spooled hook payload. Text holds the payload's
// exact bytes (a JSON string, so nothing re-encodes them on the way), and
// the server stores what a server draining the spool would: the same
// raw text, cut length and SHA-256. Payload is what older hooks sent.
type HookRequest struct {
	ID      string          `json:"id"` // spool entry ULID
	Text    string          `json:"text,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Process *events.Process `json:"process,omitempty"` // the agent process the hook ran under
	// Sender is the user who sent the hook over the system socket, set
	// by the server from the peer's credentials (Intake.Accept): a
	// client's own is dropped.
	Sender *events.Sender `json:"sender,omitempty"`
}

// HookReply says where the hook's batch landed (Seq 0: already seen,
// or not yet appended). Queued, when set, is the hook's place in the
// server's intake journal (Intake): it is on disk there and goes into the
// log in order, after the reply.
type HookReply struct {
	Seq    uint64 `json:"seq"`
	Queued uint64 `json:"queued,omitempty"`
}

// Hook is the hook verb (HookRequest → HookReply): HookThen with nothing
// more to decide. While serve holds its appends for want of disk space
// it does not wait for them: a hook whose payload cannot go in now (its
// append refused, or the hooks taken before it waiting for the disk) is
// answered at once with an error wrapping ErrHeld that says why (held),
// code "appends_held", and keeps its payload in its spool for serve to
// deliver once the disk frees; a wait would end in the hook's own timeout,
// which says nothing of the disk.
func (s *Service) Hook(ctx context.Context, data []byte) (any, error) {
	r, _, err := s.hookThen(ctx, data, nil, true)
	if err != nil {
		return nil, s.held(err)
	}
	return r, nil
}

// held returns err as a hook is told it when serve holds its appends: an
// error wrapping ErrHeld whose message says why, for an append the log's
// reserve refused (natslog.HeldError: "serve holds appends: the disk
// under the log's store is short of its reserve of free space (N bytes
// free under DIR, …)"), or for one that failed while serve's appends are
// paused (Paused: "serve holds appends: disk full since …"). Any other
// err (input, an owner's refusal, a context's end) is returned as it is.
func (s *Service) held(err error) error {
	if err == nil || errors.Is(err, ErrHeld) {
		return err
	}
	if he, ok := errors.AsType[*natslog.HeldError](err); ok {
		return fmt.Errorf("%w: %s", ErrHeld, he.Reason())
	}
	if IsInputError(err) || errors.Is(err, ErrNotOwner) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if s.Paused != nil {
		if p := s.Paused(); p != "" {
			return fmt.Errorf("%w: %s", ErrHeld, strings.TrimPrefix(p, "appends paused: "))
		}
	}
	return err
}

// HookThen is Hook with then deciding more on the session in the hook's
// own batch (ingest.Then; the gate's verdict by a rule): one append for
// both. It returns the session's state after the batch; then is never
// called for a Codex notify payload. As Intake.Accept, it records the
// system socket's peer as the hook's sender (any other request's
// sender is dropped), and refuses a hook from the system socket for a
// session another user owns (ErrNotOwner), appending nothing.
func (s *Service) HookThen(ctx context.Context, data []byte, then ingest.Then) (HookReply, session.State, error) {
	return s.hookThen(ctx, data, then, false)
}

// pausedNow reports whether serve's appends are paused now (Paused says
// so), or, for a Service without Paused, true.
func (s *Service) pausedNow() bool {
	return s.Paused == nil || s.Paused() != ""
}

// hookThen is HookThen; with unlessHeld the wait for the hooks taken
// before this one gives up at once when they wait for disk space
// (Intake.WaitUnlessHeld).
func (s *Service) hookThen(ctx context.Context, data []byte, then ingest.Then, unlessHeld bool) (HookReply, session.State, error) {
	data, err := withSender(ctx, data)
	if err != nil {
		return HookReply{}, session.State{}, err
	}
	e, err := hookEntry(data)
	if err != nil {
		return HookReply{}, session.State{}, err
	}
	// Hooks taken on the socket before this one are decided first.
	wait := s.WaitIntake
	if in := s.intake.Load(); in != nil && unlessHeld {
		wait = in.WaitUnlessHeld
	}
	if err := wait(ctx); err != nil {
		return HookReply{}, session.State{}, err
	}
	if e.Sender != nil {
		agg, err := s.hookSession(e)
		if err != nil {
			return HookReply{}, session.State{}, inputError(err)
		}
		var pending func(events.Aggregate) (*events.Sender, bool)
		if in := s.intake.Load(); in != nil {
			pending = in.pendingSender
		}
		if err := s.checkOwner(ctx, e, agg, pending); err != nil {
			return HookReply{}, session.State{}, err
		}
	}
	var (
		ap events.Appended
		st session.State
	)
	if codex.IsNotify(e.Payload) {
		ap, err = s.cx.Notify(ctx, e)
	} else {
		ap, st, err = s.Ing.HookThen(ctx, e, then)
	}
	if err != nil {
		// Bad input the hook must set aside, not retry: say so in the
		// code the client reads.
		return HookReply{}, st, inputError(err)
	}
	return HookReply{Seq: ap.Last}, st, nil
}

// hookSession returns the session hook entry e is for, checking its
// payload as its ingest will: a Codex CLI notify payload's thread, any
// other's Claude Code session (Ingester.CheckHook). Errors are the
// checks'.
func (s *Service) hookSession(e claude.Entry) (events.Aggregate, error) {
	if codex.IsNotify(e.Payload) {
		return codex.NotifySession(e.Payload)
	}
	return s.Ing.CheckHook(e)
}

// decodeHookRequest decodes a HookRequest and its entry id's time, or
// fails with ErrMalformed naming what is wrong.
func decodeHookRequest(data []byte) (HookRequest, time.Time, error) {
	var req HookRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return req, time.Time{}, fmt.Errorf("hook request: %w: %v", events.ErrMalformed, err)
	}
	id, err := ulid.ParseStrict(req.ID)
	if err != nil {
		return req, time.Time{}, fmt.Errorf("hook request: %w: id %q: %v", events.ErrMalformed, req.ID, err)
	}
	return req, ulid.Time(id.Time()), nil
}

// WaitIntake waits for the hooks the server's Intake took before the
// call (Intake.Wait); with no Intake it returns at once.
func (s *Service) WaitIntake(ctx context.Context) error {
	if in := s.intake.Load(); in != nil {
		return in.Wait(ctx)
	}
	return nil
}

// deliver ingests one spooled payload: a Codex CLI notify payload
// (codex.IsNotify) through the Codex ingester, any other through the
// Claude Code hook ingester, with the verdict the hook gave without a
// server, if it gave one, in the same batch (LocalVerdict).
//
// A hook spools a Claude Code payload prepared (claude.PrepareHook), at
// most claude.MaxHookSend bytes, but keeps one it refused as it came,
// when it had no logbook to hand it to, for this drain to refuse and set
// aside: an entry over claude.MaxHookRead is refused as too large, and
// one over MaxHookSend is prepared here as the hook would have, so it is
// refused as the hook refused it (or, spooled raw by an older hook,
// delivered cut).
func (s *Service) deliver(ctx context.Context, e claude.Entry) (events.Appended, error) {
	if len(e.Payload) > claude.MaxHookRead {
		return events.Appended{}, &claude.HookError{Err: fmt.Errorf("%w: more than %d bytes, at most %d", claude.ErrTooLarge, claude.MaxHookRead, claude.MaxHookRead)}
	}
	if codex.IsNotify(e.Payload) {
		return s.cx.Notify(ctx, e)
	}
	if len(e.Payload) > claude.MaxHookSend {
		prepared, err := claude.PrepareHook(e.Payload)
		if err != nil {
			return events.Appended{}, err
		}
		e.Payload = prepared
	}
	if e.Verdict != nil && s.LocalVerdict != nil {
		if then := s.LocalVerdict(e); then != nil {
			ap, _, err := s.Ing.HookThen(ctx, e, then)
			return ap, err
		}
	}
	return s.Ing.Hook(ctx, e)
}

// drainSpool delivers every spooled hook payload in order, removing each
// once its batch is durable. A payload refused as bad input (malformed,
// over a cap, refused by the reducer, too large for the log) is moved
// aside, redacted, into spool/rejected/ so it cannot block the ones after
// it; any other error stops the drain, to be retried, so order holds.
// Rejected entries older than claude.DefaultRejectedRetention are removed.
func (s *Service) DrainSpool(ctx context.Context) (int, error) {
	lock, err := s.Spool.TryLock()
	if err != nil {
		return 0, nil // another process is draining
	}
	defer lock.Unlock()
	if err := s.WaitIntake(ctx); err != nil {
		return 0, err
	}
	// Temporary files of hook processes killed mid-write.
	if _, err := s.Spool.Sweep(time.Now(), time.Hour); err != nil {
		return 0, err
	}
	if _, err := s.Spool.SweepRejected(time.Now(), claude.DefaultRejectedRetention); err != nil {
		return 0, err
	}
	// Files named as entries that no hook wrote (a FIFO, a device, a
	// symlink) would be skipped forever, and keep every hook spooling.
	if strays, err := s.Spool.SetAsideStrays(); err != nil {
		return 0, err
	} else if len(strays) > 0 && s.Said != nil {
		s.Said("WARN: spool: %d file(s) named as entries that no hook wrote (a FIFO, a device, a symlink, a directory) moved unread to %s: %s", len(strays), filepath.Join(s.Spool.Dir(), claude.RejectedDir), strings.Join(strays, ", "))
	}
	n := 0
	for ctx.Err() == nil {
		// A page at a time: a spool that grew while no server ran, or
		// faster than it drains, is not read into memory whole.
		pending, err := s.Spool.PendingFirst(spoolPage)
		if err != nil {
			return n, err
		}
		for _, e := range pending {
			if _, err := s.deliver(ctx, e); err != nil {
				if IsInputError(err) {
					if rerr := s.Spool.Reject(e.ID, e.Payload, err, s.red); rerr != nil {
						return n, rerr
					}
					if s.Said != nil {
						s.Said("spool: hook %s refused, not recorded, set aside in %s: %s", e.ID, filepath.Join(s.Spool.Dir(), claude.RejectedDir), s.red.Redact(err.Error()))
					}
					continue
				}
				return n, fmt.Errorf("deliver spooled hook %s: %w", e.ID, err)
			}
			if err := s.Spool.Remove(e.ID); err != nil {
				return n, err
			}
			n++
		}
		if len(pending) < spoolPage {
			break
		}
	}
	return n, nil
}

// spoolPage is how many spooled payloads drainSpool reads into memory at
// once (each up to the hook's payload cap).
const spoolPage = 256

// SessionsRequest asks for a page of the session list: the started
// sessions in Phase ("" any), only stale ones when StaleMS is set, in id
// order, after the session After ("": from the first), at most Limit of
// them (0: as many as fit one message).
type SessionsRequest struct {
	Phase string `json:"phase,omitempty"`
	// StaleMS, when above 0, keeps only sessions working or waiting with
	// nothing observed of the agent for at least this long (ms), by the
	// server's clock.
	StaleMS int64  `json:"stale_ms,omitempty"`
	After   string `json:"after,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	// Summaries, when true, answers each session's session.Summary
	// instead of its whole session.State.
	Summaries bool `json:"summaries,omitempty"`
	// Order is the list's order: "" for by id, "activity" for the most
	// recently active first (session.Summary.LastActivity, ties by id),
	// read from the activity index so a first page costs the same at any
	// number of sessions. "activity" needs Summaries and no StaleMS; its
	// cursors (After, Next) are index cursors, not ids.
	Order string `json:"order,omitempty"`
}

// OrderActivity is SessionsRequest.Order for the most recently active
// first.
const OrderActivity = "activity"

// SessionsPage is one page of the session list, its fields in this
// order on the wire. Next, when set, is the After of the next page; ""
// means the list ends with this page. Rows counts Sessions. Stale, when
// set, says the page was read while the log did not answer; its fields
// come after rows, where a client that reads only next and rows
// (pageNext of an older version) never looks. Each page is read from a
// snapshot of its own.
type SessionsPage struct {
	Next string `json:"next"`
	Rows int    `json:"rows"`
	Stale
	Sessions []session.State `json:"sessions"`
}

// pageHeadroom is the room a page keeps for what wraps its rows, in bytes.
const pageHeadroom = 1024

// CaughtUp waits until the hooks the server's Intake took before the call
// are in the log (Intake.Wait), then until the projection has applied
// every event in the log at that time (for as long as it moves: it
// fails after projections.StillFor without progress), so a query
// answers with what was appended before it: read-your-writes for the
// command line, a hook's included.
//
// A ctx that CatchUpOnce of s returned is caught up already: CaughtUp
// returns nil at once.
func (s *Service) CaughtUp(ctx context.Context) error {
	if by, _ := ctx.Value(caughtUpKey{}).(*Service); by == s {
		return nil
	}
	if err := s.WaitIntake(ctx); err != nil {
		return err
	}
	return s.Store.CatchUp(ctx, s.Log)
}

// caughtUpKey is the key of the mark CatchUpOnce puts on a context: the
// *Service that caught up.
type caughtUpKey struct{}

// CatchUpOnce runs CaughtUp once and returns ctx marked as caught up by
// s, for a caller in this process (an api.InProcess Caller) about to ask
// s several questions at once: their answers, asked with the returned
// context, do not wait again, each reading the projection as of this
// catch-up or later, which holds read-your-writes for everything the
// caller appended (and every hook serve took) before CatchUpOnce. A
// request over NATS carries no context and catches up on its own; the
// mark is s's alone (another Service waits as usual). Errors are
// CaughtUp's; ctx is then returned unmarked.
func (s *Service) CatchUpOnce(ctx context.Context) (context.Context, error) {
	if err := s.CaughtUp(ctx); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, caughtUpKey{}, s), nil
}

func (s *Service) Sessions(ctx context.Context, data []byte) (any, error) {
	var req SessionsRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("sessions request: %w: %v", events.ErrMalformed, err)
		}
	}
	switch req.Phase {
	case "", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded:
	default:
		return nil, fmt.Errorf("sessions: %w: unknown phase %q (want ready, working, waiting or ended)", events.ErrRejected, req.Phase)
	}
	if req.Limit < 0 {
		return nil, fmt.Errorf("sessions: %w: limit %d (want 0 or more)", events.ErrRejected, req.Limit)
	}
	switch {
	case req.Order == "":
	case req.Order != OrderActivity:
		return nil, fmt.Errorf("sessions: %w: unknown order %q (want activity or none)", events.ErrRejected, req.Order)
	case !req.Summaries || req.StaleMS > 0:
		return nil, fmt.Errorf("sessions: %w: order activity lists summaries, without stale", events.ErrRejected)
	}
	var stale Stale
	if req.After == "" {
		// Read-your-writes for the list as of its first page; the
		// pages after it follow the projection as it is.
		var err error
		if stale, err = s.readCaughtUp(ctx); err != nil {
			return nil, err
		}
	} else if staleAllowed(ctx) {
		// A later page of a stale list is stale too.
		stale = s.staleNow()
	}
	// The page is written by hand around the stored rows: they are
	// session.State (or session.Summary) JSON already, and at 10,000s of
	// sessions decoding and encoding them again is most of an answer's
	// cost. Next and the row count come first, so a client can read them
	// without the rows.
	var rows bytes.Buffer
	n, last, next := 0, "", ""
	const room = 300 // for the head: next, rows
	now := time.Now()
	scan := s.Store.SessionRows
	if req.Summaries && req.StaleMS == 0 {
		scan = s.Store.SessionSummaries
	}
	cursor := "" // the row's cursor in the activity index
	if req.Order == OrderActivity {
		scan = func(phase, after string, fn func(id string, row []byte) (bool, error)) error {
			return s.Store.SessionSummariesByActivity(phase, after, func(id, c string, row []byte) (bool, error) {
				cursor = c
				return fn(id, row)
			})
		}
	}
	_, ownOnly := OwnOnly(ctx)
	err := scan(req.Phase, req.After, func(id string, row []byte) (bool, error) {
		if ownOnly {
			// A peer of the system socket limited to its own sessions:
			// the row's owner is read from the session's whole state,
			// which a summary does not hold.
			st, err := s.Store.Session(id)
			if err != nil {
				return false, err
			}
			if !MayRead(ctx, st.Owner) {
				return true, nil
			}
		}
		if req.StaleMS > 0 {
			var st session.State
			if err := json.Unmarshal(row, &st); err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", id, err)
			}
			if len(StaleSessions([]session.State{st}, now, time.Duration(req.StaleMS)*time.Millisecond)) == 0 {
				return true, nil
			}
			if req.Summaries {
				var err error
				if row, err = json.Marshal(session.Summarize(st)); err != nil {
					return false, fmt.Errorf("session %s: encode summary: %w", id, err)
				}
			}
		}
		if n > 0 && (rows.Len()+len(row)+1+room > s.pageBytes || n == req.Limit) {
			next = last // there is more
			return false, nil
		}
		if n > 0 {
			rows.WriteByte(',')
		}
		rows.Write(row)
		n++
		last = id
		if req.Order == OrderActivity {
			last = cursor
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(struct {
		Next string `json:"next"`
		Rows int    `json:"rows"`
		Stale
	}{next, n, stale})
	if err != nil {
		return nil, err
	}
	page := make([]byte, 0, len(head)+rows.Len()+20)
	page = append(page, head[:len(head)-1]...)
	page = append(page, `,"sessions":[`...)
	page = append(page, rows.Bytes()...)
	page = append(page, "]}"...)
	return Encoded(page), nil
}

// SessionRequest names one session.
type SessionRequest struct {
	ID string `json:"id"`
	// RowOnly asks for the session's own row alone (with Checkpoint and
	// Stale), without what grows with its life
	// (projections.Store.SessionHead: the ids it remembers, its Usage):
	// Children, Cards and Commands come back empty and Subagents nil,
	// so the answer's size does not grow with the session's history,
	// commands or subagents. What a caller that needs only the
	// session's phase, mode and owner asks (exec).
	RowOnly bool `json:"row_only,omitempty"`
}

// SessionReply is one session's row, its subagents, their cards, its
// commands (oldest first) and the projection's checkpoint; Stale, when
// set, says it was read while the log did not answer.
type SessionReply struct {
	Session  session.State   `json:"session"`
	Children []session.State `json:"children"`
	// Cards are the subagent cards (projections.Store.Cards): one a
	// child, in the order of Children, then one a delegated task; never
	// nil. Subagents counts them, nil when the session delegated nothing.
	Cards      []session.Card  `json:"cards"`
	Subagents  *Subagents      `json:"subagents,omitempty"`
	Commands   []command.State `json:"commands"`
	Checkpoint uint64          `json:"checkpoint"`
	Workspace  string          `json:"workspace,omitempty"` // the workspace its cwd lies in, if any
	Stale
}

// hideUnreadable strips, from each task card whose session the request
// ctx may not read (MayRead: another user's, to a peer limited to its
// own), what it read of that session: its id, what it said, its numbers.
// The task's own facts (its id, title, workspace, status) stay. The
// subagent sessions of cards are read already filtered (Children).
func (s *Service) hideUnreadable(ctx context.Context, cards []session.Card) error {
	if _, own := OwnOnly(ctx); !own {
		return nil
	}
	for i := range cards {
		c := &cards[i]
		if c.Kind != session.CardTask || c.Session == "" {
			continue
		}
		k, err := s.Store.Session(c.Session)
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			return err
		}
		if err == nil && MayRead(ctx, k.Owner) {
			continue
		}
		*c = session.Card{Task: c.Task, Kind: c.Kind, Type: c.Type, Depth: c.Depth, Background: c.Background, Status: c.Status, Workspace: c.Workspace}
	}
	return nil
}

// Subagents is how many of a session's subagents are at work (running
// or waiting on a person) and how many it has.
type Subagents struct {
	Running int `json:"running"`
	Total   int `json:"total"`
}

// SubagentsOf counts cards (session.Delegation); nil when there are
// none: only a session that delegated shows the count.
func SubagentsOf(cards []session.Card) *Subagents {
	if len(cards) == 0 {
		return nil
	}
	r, n := session.Delegation(cards)
	return &Subagents{Running: r, Total: n}
}

func (s *Service) Session(ctx context.Context, data []byte) (any, error) {
	var req SessionRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("session request: %w: %v", events.ErrMalformed, err)
	}
	stale, err := s.readCaughtUp(ctx)
	if err != nil {
		return nil, err
	}
	read := s.Store.Session
	if req.RowOnly {
		read = s.Store.SessionHead
	}
	st, err := read(req.ID)
	if err != nil {
		return nil, err
	}
	if !st.Exists() && st.Observations == 0 || !MayRead(ctx, st.Owner) {
		// Another user's session reads, to a peer limited to its own, as
		// one that does not exist.
		return nil, fmt.Errorf("session %q: %w: no session has this id or an id that begins with it", req.ID, events.ErrNotFound)
	}
	if !st.Exists() {
		// Only observations (an unknown hook event, say): no session yet.
		return nil, fmt.Errorf("session %s: %w: it has not started (%d observation(s) recorded)", req.ID, events.ErrNotFound, st.Observations)
	}
	if req.RowOnly {
		return SessionReply{Session: st, Children: []session.State{}, Cards: []session.Card{}, Commands: []command.State{},
			Checkpoint: s.Store.Checkpoint(), Stale: stale}, nil
	}
	kids, err := s.Store.Children(req.ID)
	if err != nil {
		return nil, err
	}
	kids = slices.DeleteFunc(kids, func(k session.State) bool { return !MayRead(ctx, k.Owner) })
	if kids == nil {
		kids = []session.State{}
	}
	cmds, err := s.Store.Commands(req.ID, false)
	if err != nil {
		return nil, err
	}
	if cmds == nil {
		cmds = []command.State{}
	}
	cards, err := s.Store.Cards(st, kids)
	if err != nil {
		return nil, err
	}
	if err := s.hideUnreadable(ctx, cards); err != nil {
		return nil, err
	}
	r := SessionReply{Session: st, Children: kids, Cards: cards, Subagents: SubagentsOf(cards), Commands: cmds, Checkpoint: s.Store.Checkpoint(), Stale: stale}
	if l, err := s.Store.SessionWorkspace(req.ID); err == nil {
		r.Workspace = l.Workspace
	}
	return r, nil
}

// Verify answers VerbVerify: replay.Verify of the live store, with the
// events the log left out as unattested (Unattested), when the log
// is signed and read unjudged, its signing.began (SignedUnjudged), and
// the messages its stream lost (Missing, from a walk of the whole
// stream: natslog.Log.FindMissing) when they are more than a start
// accepted (AcceptedMissing).
func (s *Service) Verify(ctx context.Context, _ []byte) (any, error) {
	r, err := replay.Verify(ctx, s.Log, s.Store)
	if err == nil && s.Unattested != nil {
		r.Unattested = s.Unattested()
	}
	if l, ok := s.Log.(interface {
		FindMissing(context.Context) (natslog.Missing, error)
	}); ok && err == nil {
		var m natslog.Missing
		var accepted uint64
		if s.AcceptedMissing != nil {
			accepted = s.AcceptedMissing()
		}
		if m, err = l.FindMissing(ctx); err == nil && m.Count > accepted {
			r.Missing, r.MissingSeqs, r.MissingText = m.Count, m.Seqs, m.String()
		}
	}
	if l, ok := s.Log.(interface {
		SignedUnjudged(context.Context) (uint64, error)
	}); ok && err == nil {
		r.SignedUnjudged, err = l.SignedUnjudged(ctx)
	}
	return r, err
}

// StatusReply describes a running server.
type StatusReply struct {
	Checkpoint uint64    `json:"checkpoint"`
	LastSeq    uint64    `json:"last_seq"`
	Durability string    `json:"durability"`
	Started    time.Time `json:"started"`
	// LogUnavailableSince is set while the server's log does not answer
	// (a cluster without quorum): the reply then comes from the
	// projection, at Checkpoint, LastSeq is 0 and LogError says why.
	LogUnavailableSince *time.Time `json:"log_unavailable_since,omitempty"`
	LogError            string     `json:"log_error,omitempty"`
	// AppendsPausedSince is set, on a reply to a request that allows a
	// stale answer (AllowStale), while the server's appends wait for
	// disk space (Service.PausedSince): the reply did not wait for the
	// hook payloads its intake took, which wait in its journal until
	// the disk is freed, and which a read's answer then says it does
	// not show (Stale).
	AppendsPausedSince *time.Time `json:"appends_paused_since,omitempty"`
	// LogMissing names the messages the log's stream lost, as serve's
	// walk of the whole log at its start found them (natslog.Missing:
	// how many, and the first sequences); "" when it found none or has
	// not finished.
	LogMissing string `json:"log_missing,omitempty"`
}

// IsInputError reports an error about the input itself, which no retry
// can fix: a malformed payload, a decision the reducer refuses, a message
// over the log's or the connection's maximum payload.
func IsInputError(err error) bool {
	_, hookErr := errors.AsType[*claude.HookError](err)
	_, notifyErr := errors.AsType[*codex.NotifyError](err)
	return hookErr || notifyErr || errors.Is(err, events.ErrMalformed) || errors.Is(err, events.ErrRejected) || errors.Is(err, events.ErrMissingCause) ||
		errors.Is(err, nats.ErrMaxPayload) || strings.Contains(err.Error(), "maximum payload exceeded")
}
