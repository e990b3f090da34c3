package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/sandbox"
)

// verdict is what becomes of a delivered request.
type verdict int

const (
	verdictDone    verdict = iota // nothing more to do: ack
	verdictStarted                // this worker started it: ack
	verdictLater                  // another live worker holds it: deliver again after the ack wait
	verdictRetry                  // a transient failure: deliver again soon
	// verdictWait: its workspace is held, or an earlier request waits for
	// it; the claim is let go and the request delivered again after
	// waitRedelivery, to any worker.
	verdictWait
)

// waitRedelivery is how long a request whose workspace is busy stays
// away before it is delivered again: how late, at most, it starts after
// the workspace is free.
const waitRedelivery = 250 * time.Millisecond

// job is one command this worker starts or runs.
type job struct {
	id      string
	session string
	entry   string // the session entry, "cmd-<id>"
	started ulid.ULID

	gate    chan struct{} // closed once the start is decided; output waits for it
	out     chan outChunk // output waiting for the publisher; closed after the exit
	pubDone chan struct{} // closed when the publisher has stored all of out
	discard atomic.Bool   // the start was refused: drop output
	live    atomic.Bool   // command.started is stored: stdin may be written
	output  atomic.Bool   // some output was read (the trace's StageOutput)
	stored  atomic.Int64  // bytes of output stored on lb.out
	pos     int64         // bytes queued so far, all streams; under red's lock
	red     *outRedactor  // redacts output before it is queued
	lost    atomic.Int64  // bytes that could not be stored
	dropped atomic.Int64  // bytes past maxOut: counted, not stored
	maxOut  int64         // cap on stored output, bytes

	// recorded is closed once command.running was appended (or given
	// up on): the exit, which follows it in the command's events, waits
	// for it.
	recorded chan struct{}

	mu       sync.Mutex
	p        *sandbox.Process
	stopWant bool // a stop arrived before the process was known
	// cancel ends the context the process was started with: a stop that
	// arrives while sandbox.Start waits for the workspace ends the wait.
	cancel    context.CancelFunc
	abandoned atomic.Bool
	stdin     sync.Mutex // serializes writes to the process's stdin
}

// setProcess records p, stopping it at once if a stop came first.
func (j *job) setProcess(p *sandbox.Process) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.p = p
	if j.stopWant {
		p.Stop()
	}
}

// stopWanted reports whether a stop arrived before the process started.
func (j *job) stopWanted() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stopWant
}

// stop stops the process, now or as soon as it is known.
func (j *job) stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stopWant = true
	if j.p != nil {
		j.p.Stop()
	}
	if j.cancel != nil {
		j.cancel()
	}
}

// process returns the process, nil before it started.
func (j *job) process() *sandbox.Process {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.p
}

// load returns command id's current state read from the log (not a
// cache): what a decision to start must look at.
func (w *Worker) load(ctx context.Context, id string) (command.State, error) {
	st, _, err := w.loadAt(ctx, id)
	return st, err
}

// loadAt is load that also returns the stream sequence of the command's
// last event, the expectation of an append decided on the state.
func (w *Worker) loadAt(ctx context.Context, id string) (command.State, uint64, error) {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	recs, last, err := w.cfg.Log.Load(ctx, agg)
	if err != nil {
		return command.State{}, 0, fmt.Errorf("load %s: %w", agg, err)
	}
	return command.Fold(command.Init(agg), recs), last, nil
}

// appendAt stamps evs as the events of agg following version ver (ids
// where missing, aggregate, versions, host, actor), validates them and
// appends them with the expectation last. It is events.Executor's append
// without its load, for a caller that has just read the state; on
// events.ErrConflict the caller decides again on a fresh state.
func appendAt(ctx context.Context, log events.Log, reg *events.Registry, ids events.IDSource, host, actor string, ver, last uint64, evs []events.Envelope) (events.Appended, error) {
	for i := range evs {
		e := &evs[i]
		if e.ID.IsZero() {
			e.ID = ids()
		}
		e.Ver = ver + uint64(i) + 1
		if e.Host == "" {
			e.Host = host
		}
		if e.Actor == "" {
			e.Actor = actor
		}
		if err := reg.Validate(*e); err != nil {
			return events.Appended{}, fmt.Errorf("append %s: %w", e.Agg, err)
		}
	}
	return log.Append(ctx, events.Batch{Agg: evs[0].Agg, Expect: last, Events: evs})
}

// take decides what to do with the request for command id and, when this
// worker wins it, starts the command. procCtx bounds the process's life.
func (w *Worker) take(ctx, procCtx context.Context, id string) (verdict, error) {
	return w.takeFor(ctx, procCtx, id, "")
}

// takeFor is take with the session the delivered request names (""
// when unknown), whose state is read while the command is claimed and
// read: admission takes it when the command, as read, belongs to that
// session, and reads the session itself otherwise.
func (w *Worker) takeFor(ctx, procCtx context.Context, id, session string) (verdict, error) {
	return w.takeClaiming(ctx, procCtx, id, session, w.claim)
}

// takeClaiming is takeFor with claim the way command id is claimed
// (Worker.claim, or a Handoff reservation's claim made while the
// request was appended).
func (w *Worker) takeClaiming(ctx, procCtx context.Context, id, session string, claim func(context.Context, string) (verdict, error)) (verdict, error) {
	var pre chan sessionRead
	if session != "" {
		pre = make(chan sessionRead, 1)
		go func() {
			st, err := w.sessions.State(ctx, events.Aggregate{Kind: events.KindSession, ID: session})
			pre <- sessionRead{session, st, err}
		}()
	}
	// The command is read while it is claimed, not after: a state read
	// before the claim landed may have been overtaken by another
	// worker's start (one this worker then took the claim over from),
	// but command.started is appended expecting the sequence read, so
	// such a start fails its check and the decision is taken again on
	// the state the log has (start in run.go): no command starts on a
	// stale read.
	type read struct {
		st     command.State
		last   uint64
		err    error
		hidden *hiddenCheck
		// hide and keep are the hidden paths (Worker.hidden) this
		// command is admitted and started with.
		hide, keep []string
	}
	// The workspace's check against the hidden paths, the dearest part
	// of admission where a host has many accounts, is made while the
	// claim is under way, the paths resolved while the command is read;
	// admission takes it only for the workspace it then resolves to
	// (admit).
	type hiddenNow struct {
		reals      hiddenReals
		hide, keep []string
	}
	hn := make(chan hiddenNow, 1)
	go func() {
		hide, keep := w.hidden()
		paths, aliases := w.hiddenWatch.Resolved(hide, keep)
		hn <- hiddenNow{hiddenReals{paths: paths, aliases: aliases}, hide, keep}
	}()
	rc := make(chan read, 1)
	go func() {
		st, last, err := w.loadAt(ctx, id)
		h := <-hn
		var hc *hiddenCheck
		if err == nil && st.Status == command.StatusRequested && filepath.IsAbs(st.Workspace) {
			hc = checkHidden(filepath.Clean(st.Workspace), h.reals, h.keep)
		}
		rc <- read{st, last, err, hc, h.hide, h.keep}
	}()
	v, err := claim(ctx, id)
	r := <-rc
	if v == verdictLater {
		// Another live worker holds it: drop it for good once it has
		// moved on, else look again later in case that worker dies.
		if st, err := w.load(ctx, id); err == nil && st.Status != command.StatusRequested {
			return verdictDone, nil
		}
		return v, err
	}
	if v != verdictStarted {
		return v, err
	}
	st, last, err := r.st, r.last, r.err
	if err != nil {
		return verdictRetry, err
	}
	if st.Status != command.StatusRequested {
		// Ended without a start: a start whose answer was lost (its
		// attach in flight beside it) may have left an entry open.
		w.settleLost(ctx, st)
		return verdictDone, nil
	}
	// The client checks a request for secrets before it appends it, but
	// anyone who may append to the command subject can skip the client:
	// check again here, by this worker's rules, before anything runs.
	// The rules as they are now, for every check of this admission:
	// one look at a rules file that is followed, not one a field.
	red := w.cfg.Redactor.Pin()
	if where := secretIn(st.Argv, st.Env, red); where != "" {
		return verdictDone, w.refuse(ctx, id, "refused: "+where+"; a command whose request carries a secret is not run: pass it another way (a file in the workspace, or stdin)", "secrets")
	}
	if err := namesSecret(id, st.Session, st.Workspace, st.Cwd, red); err != nil {
		return verdictDone, w.refuse(ctx, id, "refused: "+err.Error()+"; a command whose request names a secret is not run", "secrets")
	}
	// A workspace or cwd through /proc or /dev/fd is this worker's own
	// directory there, not the one the requester checked (a request
	// appended by a client other than logbook exec).
	if err := CheckMagicLinks(st.Workspace); err != nil {
		return verdictDone, w.refuse(ctx, id, "refused: workspace "+err.Error(), "admit")
	}
	// The cwd as `logbook exec` checks it (CheckCwd), in the same words.
	if err := CheckCwd(st.Workspace, st.Cwd, true); err != nil {
		return verdictDone, w.refuse(ctx, id, "refused: "+err.Error(), "admit")
	}
	requested := filepath.Clean(st.Workspace) // as the control feed tracks it
	// One resolution of the workspace serves admission and the sandbox,
	// which refuses to run on another (sandbox.Process.Workspace).
	if ws, err := filepath.EvalSymlinks(filepath.Clean(st.Workspace)); err == nil && filepath.IsAbs(st.Workspace) {
		st.Workspace = ws
	}
	spec, reason := w.specWith(st, r.hide, r.keep)
	if reason != "" {
		return verdictDone, w.refuse(ctx, id, reason, "spec")
	}
	var sess *sessionRead
	if pre != nil {
		if r := <-pre; r.err == nil && r.id == st.Session {
			sess = &r
		}
	}
	if reason, err := w.admit(ctx, st, sess, r.hidden); err != nil {
		return verdictRetry, err
	} else if reason != "" {
		return verdictDone, w.refuse(ctx, id, reason, "admit")
	}
	// A restricted command whose workspace another command holds would
	// wait in sandbox.Start, holding a slot: it is put back, its claim
	// let go so that any worker may take it, and delivered again soon
	// (still requested, so a stop meanwhile refuses it). Writers start in
	// request order: a workspace_write request behind an earlier one
	// still waiting on the same workspace, or on one above or below it,
	// is put back the same way (a read_only one waits for no request).
	//
	// A command recorded as started takes its workspace's lock only in
	// sandbox.Start, a moment later: one started on this host and not
	// yet ended counts as holding its workspace already, or a request
	// read between the two would slip in ahead of it.
	if (st.Mode == events.ModeWorkspaceWrite && w.earlierWaiting(ctx, id, requested)) || w.startedBeside(id, requested, st.Mode) || spec.Busy() {
		w.unclaim(ctx, id)
		return verdictWait, nil
	}
	// The command as the log has it (the spec runs on the resolved
	// workspace): start caches it for the decisions that follow.
	st.Workspace = r.st.Workspace
	return w.start(ctx, procCtx, st, last, spec)
}

// unclaim lets go of this worker's claim on command id (if it is still
// this worker's), so that the next delivery may go to any worker. A
// failure is logged: the claim then lapses with this worker.
func (w *Worker) unclaim(ctx context.Context, id string) {
	e, err := w.claims.Get(ctx, id)
	if err != nil || string(e.Value()) != w.id.ID {
		return
	}
	if err := w.claims.Delete(ctx, id, jetstream.LastRevision(e.Revision())); err != nil {
		w.log.Warn("let go of claim", "command", id, "err", err)
	}
}

// earlierWaiting reports whether a workspace_write request that came
// before command id's is still waiting to start on workspace ws
// (cleaned, as requested), on a directory above it or on one below it,
// as the control feed has read the log: the two could not run at once.
// A command the feed has not read yet came after every one it has.
func (w *Worker) earlierWaiting(ctx context.Context, id, ws string) bool {
	// The control feed reads requests in log order: once it has read
	// id, it has read every request before it. A request delivered to
	// this worker before the feed read it waits for the feed (at most
	// feedWait); one the feed has still not read then is put back as
	// if an earlier writer waited.
	t, ok := w.fedRequest(ctx, id)
	if !ok {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for oid, o := range w.open {
		if oid == id || o.started || o.mode != events.ModeWorkspaceWrite || !nested(o.workspace, ws) {
			continue
		}
		if o.order < t.order {
			return true
		}
	}
	return false
}

// startedBeside reports whether a restricted command started on this
// host and not yet ended, as the control feed has read the log, holds
// (or is about to hold) workspace ws (cleaned, as requested), one above
// it or one below it in a way that excludes a command of mode: a writer
// excludes every restricted command, a reader excludes writers.
func (w *Worker) startedBeside(id, ws, mode string) bool {
	if mode == events.ModeFullAccess {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for oid, o := range w.open {
		if oid == id || !o.started || o.host != w.id.Host || o.mode == events.ModeFullAccess || !nested(o.workspace, ws) {
			continue
		}
		if mode == events.ModeWorkspaceWrite || o.mode == events.ModeWorkspaceWrite {
			return true
		}
	}
	return false
}

// feedWait is how long a writer's admission waits for the control feed
// to read its request before it is put back.
const feedWait = time.Second

// fedRequest waits until the control feed has read request id, for at
// most feedWait, and returns what it tracks of it; false when the feed
// has not read it by then or ctx ends.
func (w *Worker) fedRequest(ctx context.Context, id string) (tracked, bool) {
	timer := time.NewTimer(feedWait)
	defer timer.Stop()
	for {
		w.mu.Lock()
		t := w.open[id]
		if w.fed == nil {
			w.fed = make(chan struct{})
		}
		fed := w.fed
		var got tracked
		if t != nil {
			got = *t
		}
		w.mu.Unlock()
		if t != nil {
			return got, true
		}
		select {
		case <-fed:
		case <-timer.C:
			return tracked{}, false
		case <-ctx.Done():
			return tracked{}, false
		}
	}
}

// claimTries is how many times claim creates a claim that is gone as
// soon as it is found taken.
const claimTries = 3

// nested reports whether clean absolute paths a and b are the same or
// one lies inside the other.
func nested(a, b string) bool {
	return a == b || a == "/" || b == "/" || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// claim makes this worker the one allowed to start command id. It
// returns verdictStarted when the claim is this worker's.
//
// A claim that exists when created but is gone when read (its holder's
// claim removed, or expired, in between) is created again, up to
// claimTries times in all, before the command is left for a redelivery.
func (w *Worker) claim(ctx context.Context, id string) (verdict, error) {
	var e jetstream.KeyValueEntry
	for try := 1; ; try++ {
		_, err := w.claims.Create(ctx, id, []byte(w.id.ID))
		if err == nil {
			return verdictStarted, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return verdictRetry, fmt.Errorf("claim %s: %w", id, err)
		}
		e, err = w.claims.Get(ctx, id)
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) || try == claimTries {
			return verdictRetry, fmt.Errorf("claim %s: read holder: %w", id, err)
		}
	}
	holder := string(e.Value())
	if holder == w.id.ID {
		return verdictStarted, nil // ours from an earlier delivery
	}
	if dead, _ := w.judge(ctx, holder, "", true); !dead {
		return verdictLater, nil
	}
	if _, err := w.claims.Update(ctx, id, []byte(w.id.ID), e.Revision()); err != nil {
		return verdictLater, nil // someone else took it over first
	}
	w.log.Info("took over claim", "command", id, "from", holder)
	return verdictStarted, nil
}

// spec turns a requested command into what the sandbox runs, or returns
// why it cannot run: a readable reason for command.refused.
func (w *Worker) spec(st command.State) (sandbox.Spec, string) {
	hide, keep := w.hidden()
	return w.specWith(st, hide, keep)
}

// specWith is spec with the hidden paths hide and keep (Worker.hidden),
// read once for the command's admission and its start: an account made
// meanwhile is covered from the next command on.
func (w *Worker) specWith(st command.State, hide, keep []string) (sandbox.Spec, string) {
	mode, err := sandbox.ParseMode(st.Mode)
	if err != nil {
		return sandbox.Spec{}, fmt.Sprintf("invalid: unknown mode %q: want read_only, workspace_write or full_access", st.Mode)
	}
	if err := checkCwd(st.Workspace, st.Cwd, true); err != nil {
		return sandbox.Spec{}, "invalid: " + err.Error()
	}
	return sandbox.Spec{
		Argv: st.Argv, Env: st.Env, Workspace: st.Workspace, Dir: st.Cwd, Mode: mode, TTY: st.TTY,
		Protected: append(slices.Clone(w.cfg.Protected), workspace.ProtectedIn(st.Workspace)...),
		Hidden:    hide, Keep: keep, Ledger: w.cfg.Ledger, Allow: w.cfg.Allow, Grace: w.cfg.Grace, Bwrap: w.cfg.Bwrap,
		Reporter: w.cfg.Reporter,
		Etc:      w.etc, HiddenWatch: w.hiddenWatch,
	}, ""
}

// hidden returns what restricted commands must not see and the
// workspace roots in it: Config.HiddenSet's paths now when it is set,
// else Config.Hidden and Config.Keep.
// hiddenCheck is CheckHidden's verdict on a workspace resolved to ws.
type hiddenCheck struct {
	ws  string
	err error
}

// checkHidden checks workspace ws (absolute, clean), its symbolic links
// resolved as admission resolves them, against the hidden paths
// resolved as h, with keep.
func checkHidden(ws string, h hiddenReals, keep []string) *hiddenCheck {
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	return &hiddenCheck{ws: ws, err: h.check(ws, keep)}
}

func (w *Worker) hidden() (hide, keep []string) {
	if w.cfg.HiddenSet != nil {
		return w.cfg.HiddenSet.Paths()
	}
	return w.cfg.Hidden, w.cfg.Keep
}

// refuse appends command.refused for id with reason; the cause names the
// worker's check (event) that refused it.
func (w *Worker) refuse(ctx context.Context, id, reason, event string) error {
	reason = w.cfg.Redactor.Redact(reason) // it may quote the request (argv[0], cwd)
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	cause := events.Cause{Kind: "worker", Event: event, Detail: w.id.ID, Ref: id}
	_, _, err := w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		return command.Decide(s, command.Refuse{Reason: reason, At: w.now(), Cause: cause})
	})
	if errors.Is(err, events.ErrRejected) {
		return nil // it moved on meanwhile (stopped, evicted, started elsewhere)
	}
	if err != nil {
		return fmt.Errorf("refuse %s: %w", id, err)
	}
	w.log.Info("refused", "command", id, "reason", reason)
	return nil
}

// heldStart is what a restricted command's held start came to: the
// process, whose command waits for Release, or why there is none; held
// says bubblewrap passed its probe and Start was called, held.
type heldStart struct {
	p    *sandbox.Process
	err  error
	held bool
}

// refusal turns a sandbox.Start error into a readable reason.
func refusal(err error) string {
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return "not found: " + err.Error()
	case errors.Is(err, sandbox.ErrRefused):
		return "no boundary: " + err.Error()
	case errors.Is(err, sandbox.ErrInvalidSpec):
		return "invalid: " + err.Error()
	}
	return "cannot start: " + err.Error()
}

// start appends command.started for st and, once it has landed, starts
// the process and appends command.running; see the package documentation
// for the race it settles.
func (w *Worker) start(ctx, procCtx context.Context, st command.State, last uint64, spec sandbox.Spec) (verdict, error) {
	j := &job{
		id: st.ID, session: st.Session, entry: EntryID(st.ID), started: w.cfg.IDs(),
		gate: make(chan struct{}), out: make(chan outChunk, outQueue), pubDone: make(chan struct{}),
		recorded: make(chan struct{}),
	}
	j.maxOut = w.maxOutput()
	j.red = newOutRedactor(w.cfg.Redactor, j.queue)
	// The process's context: a restricted start may wait for another
	// command's workspace, and a stop must end that wait. Canceled when
	// the command's end is recorded, or here if it never started.
	procCtx, j.cancel = context.WithCancel(procCtx)
	started := false
	defer func() {
		if !started {
			j.cancel()
		}
	}()
	w.mu.Lock()
	if w.running[j.id] != nil {
		w.mu.Unlock()
		return verdictLater, nil // a second delivery while the first is being started
	}
	w.running[j.id] = j
	w.mu.Unlock()
	forget := func() {
		w.mu.Lock()
		delete(w.running, j.id)
		w.mu.Unlock()
	}

	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultAppendTimeout)
	defer cancel()
	agg := events.Aggregate{Kind: events.KindCommand, ID: st.ID}
	cause := events.Cause{Kind: "worker", Event: "command.requested", Detail: w.id.ID, Ref: st.ID}
	at := w.now()
	mark(st.ID, StageAdmitted)
	decide := func(s command.State) (events.Decision, error) {
		evs, err := command.Decide(s, command.Start{Worker: w.id.ID, Host: w.id.Host, At: at, Cause: cause})
		if err == nil {
			evs[0].ID = j.started
		}
		return evs, err
	}
	// The session is attached while command.started is appended, the two
	// appends in flight together: the session is working before the
	// process runs, which starts only once both have landed (and
	// command.started won its check). A start that is lost leaves the
	// entry to the worker that won it, or closes it (settleLost).
	attached := make(chan bool, 1)
	go func() { attached <- w.attach(actx, j, st) }()
	// A restricted command's boundary is built while command.started is
	// appended too: bubblewrap starts held (sandbox Spec.Hold), which
	// sets the sandbox up but runs nothing of the command until it is
	// released, after the start has won its check and the session is
	// attached. Its output (bubblewrap's own messages) waits behind
	// j.gate until then; a start that is lost kills the held sandbox
	// unreleased.
	spec.Trace = sandboxTrace(st.ID)
	var held chan heldStart
	if spec.Mode != sandbox.FullAccess {
		held = make(chan heldStart, 1)
		go func(spec sandbox.Spec) {
			var h heldStart
			if h.err = w.probe.check(procCtx, spec.Bwrap); h.err == nil {
				spec.Probed, spec.Hold, h.held = true, true, true
				h.p, h.err = sandbox.Start(procCtx, spec, func(c sandbox.Chunk) { w.emit(j, c) })
			}
			held <- h
		}(spec)
	}
	// dropHeld kills the held sandbox of a start that was not won: it
	// never ran the command, and its output goes nowhere. The process's
	// context ends first, so a held start still waiting for its
	// workspace (another command's, maybe the winner's) stops waiting.
	dropHeld := func() {
		if held == nil {
			return
		}
		j.cancel()
		h := <-held
		if h.p != nil {
			j.discard.Store(true)
			close(j.gate)
			h.p.Stop()
			h.p.Wait()
		}
	}
	// Decide on the state just loaded; only a conflict costs a reload.
	evs, err := decide(st)
	if err == nil {
		var ap events.Appended
		if ap, err = appendAt(actx, w.cfg.Log, w.cfg.Reg, w.cfg.IDs, w.cfg.Host, "logbook-worker", st.Ver, last, evs); err == nil && !ap.Duplicate {
			// The state after the start, for the decisions that follow
			// on this command (command.running, the exit): they decide
			// without reading the log back.
			now := st
			for _, e := range evs {
				now = command.Evolve(now, e)
			}
			w.cmds.Remember(agg, now, now.Ver, ap.Last)
		}
	}
	if errors.Is(err, events.ErrConflict) {
		_, _, err = w.cmds.Execute(actx, agg, decide)
	}
	if err != nil && !errors.Is(err, events.ErrRejected) && !errors.Is(err, events.ErrNotFound) {
		// The start may have landed with its answer lost: the log decides.
		if now, lerr := w.load(actx, st.ID); lerr == nil && now.Status == command.StatusStarted && now.Worker == w.id.ID {
			err = nil
		}
	}
	if err != nil {
		forget()
		dropHeld()
		<-attached
		if errors.Is(err, events.ErrRejected) || errors.Is(err, events.ErrNotFound) {
			w.log.Info("lost the start", "command", st.ID, "why", err)
			if now, lerr := w.load(actx, st.ID); lerr == nil {
				w.settleLost(actx, now)
			}
			return verdictDone, nil
		}
		// Whether the start landed is unknown: the request comes again,
		// and its next delivery starts the command (the entry is open
		// already) or finds it ended (settleLost there).
		return verdictRetry, fmt.Errorf("start %s: %w", st.ID, err)
	}
	mark(st.ID, StageStarted)
	// command.started is this worker's: from here on only this worker may
	// start a process for the command, and every way out records an end.
	// What follows the process's start gets a bound of its own: the
	// start may have taken long (a workspace another command held).
	fresh := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), DefaultAppendTimeout)
	}
	refuseOwn := func(reason, event string) (verdict, error) {
		forget()
		reason = w.cfg.Redactor.Redact(reason) // it may quote the request (argv[0], cwd)
		rctx, cancel := fresh()
		defer cancel()
		err := w.refuseStarted(rctx, st.ID, reason, event)
		w.detach(rctx, st.ID, st.Session, "refused", events.Cause{Kind: "worker", Event: event, Detail: reason, Ref: j.started.String()})
		return verdictDone, err
	}
	// The session first, so it is working before the command runs; a
	// session that has ended gets no command. A restricted command's
	// boundary is being built meanwhile (held, above); the command runs
	// only once released, after the attach; a held sandbox that must not
	// go on is killed unreleased.
	var p *sandbox.Process
	var serr error
	if held != nil {
		h := <-held
		p, serr = h.p, h.err
		if h.held {
			spec.Probed, spec.Hold = true, true
			close(j.gate)
			go w.publish(j) // owned by the supervisor, which waits for it
		}
	}
	abort := func(reason, event string) (verdict, error) {
		if p != nil {
			j.discard.Store(true)
			p.Stop()
			p.Wait()
		}
		if spec.Hold { // the publisher runs
			j.red.close()
			close(j.out)
			<-j.pubDone
		}
		return refuseOwn(reason, event)
	}
	ended := <-attached
	mark(st.ID, StageAttached)
	if ended {
		return abort("session "+st.Session+" has ended", "session.ended")
	}
	if j.stopWanted() {
		return abort("stopped before its process started", "command.stop_requested")
	}
	if serr != nil {
		return abort(refusal(serr), "sandbox.start")
	}
	if p != nil && p.Workspace() != spec.Workspace {
		// Admitted on one folder, about to run on another: a directory
		// along the path was swapped for a link meanwhile.
		return abort("workspace "+spec.Workspace+" resolved to "+p.Workspace()+" by the time its boundary was built", "sandbox.start")
	}
	if p == nil {
		close(j.gate)
		go w.publish(j) // owned by the supervisor, which waits for it
		p, serr = sandbox.Start(procCtx, spec, func(c sandbox.Chunk) { w.emit(j, c) })
		if serr != nil {
			j.red.close()
			close(j.out)
			<-j.pubDone
			return refuseOwn(refusal(serr), "sandbox.start")
		}
	}
	// A release that fails has killed the sandbox: the command never ran,
	// and its exit reports why, as for any start that failed in bubblewrap.
	_ = p.Release()
	mark(st.ID, StageProcess)
	j.setProcess(p)
	j.live.Store(true)
	w.log.Info("started", "command", st.ID, "session", st.Session, "pid", p.Pid(), "mode", st.Mode, "argv", redactArgv(w.cfg.Redactor, st.Argv))
	// command.running is appended while the process runs and its exit
	// is awaited: the supervisor waits for the record only before it
	// appends the exit, which follows it.
	rctx, rcancel := fresh()
	go func() {
		defer close(j.recorded)
		defer rcancel()
		w.recordRunning(rctx, j, p)
	}()
	started = true
	go w.supervise(j, st)
	return verdictStarted, nil
}

// recordRunning appends command.running for j's process p: its pid, start
// time, the boot id and its cgroup, which a worker on this host needs to
// kill the tree if this worker dies. A rejection means the command was
// abandoned meanwhile (this worker was judged dead): the process is
// stopped.
func (w *Worker) recordRunning(ctx context.Context, j *job, p *sandbox.Process) {
	agg := events.Aggregate{Kind: events.KindCommand, ID: j.id}
	cause := events.Cause{Kind: "worker", Event: "process.started", Detail: "pid " + strconv.Itoa(p.Pid()), Ref: j.started.String()}
	run := command.Run{Worker: w.id.ID, Pid: p.Pid(), ProcStart: p.ProcStart(), Boot: w.id.Boot, Cgroup: p.Cgroup(), At: w.now(), Cause: cause}
	var err error
	for attempt := range 5 {
		_, _, err = w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
			return command.Decide(s, run)
		})
		if err == nil || errors.Is(err, events.ErrRejected) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	if errors.Is(err, events.ErrRejected) {
		w.log.Warn("process not recorded; stopping it", "command", j.id, "why", err)
		j.stop()
		return
	}
	if err != nil {
		w.log.Warn("record the process", "command", j.id, "err", err)
	}
}

// refuseStarted appends command.refused for command id that this worker
// started but whose process it did not start, for reason; event names the
// check that refused it.
func (w *Worker) refuseStarted(ctx context.Context, id, reason, event string) error {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	cause := events.Cause{Kind: "worker", Event: event, Detail: w.id.ID, Ref: id}
	_, _, err := w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		return command.Decide(s, command.Refuse{Reason: reason, Worker: w.id.ID, At: w.now(), Cause: cause})
	})
	if errors.Is(err, events.ErrRejected) {
		return nil // abandoned meanwhile
	}
	if err != nil {
		return fmt.Errorf("refuse %s: %w", id, err)
	}
	w.log.Info("refused", "command", id, "reason", reason)
	return nil
}

// EntryID returns the session entry a started command keeps open:
// "cmd-<command id>".
func EntryID(commandID string) string { return "cmd-" + commandID }

// attach opens the command's entry on its session and reports whether
// the session has ended (then no process may start). A session that does
// not exist gets no entry; its command runs anyway. The entry's cause
// names the command by its id: the attach is in flight beside the
// command.started append, which may lose its check and never be stored.
// A session that keeps moving under the attach is tried again
// (sessionRetry) until ctx ends: the process waits for it, so that the
// session is working before anything of the command runs.
func (w *Worker) attach(ctx context.Context, j *job, st command.State) (ended bool) {
	agg := events.Aggregate{Kind: events.KindSession, ID: st.Session}
	cause := events.Cause{Kind: "worker", Event: "command.started", Detail: st.ID, Ref: st.ID}
	activity := "command:" + w.cfg.Redactor.Redact(path.Base(st.Argv[0]))
	at := w.now()
	err := w.sessionRetry(ctx, agg, func(s session.State) (events.Decision, error) {
		ended = false
		if s.Phase == events.PhaseEnded {
			ended = true
			return nil, nil
		}
		return session.Decide(s, session.Attach{EntryID: j.entry, Activity: activity, At: at, Cause: cause})
	})
	if err != nil {
		w.log.Info("not attached to its session", "command", st.ID, "session", st.Session, "why", err)
	}
	return ended
}

// settleLost closes the entry on its session that the attach of a
// start this worker lost may have opened for command st, when no
// worker started the command and it has ended (refused, evicted): no
// one else would close it. An entry of a command another worker started
// is that worker's to close (it attaches the same entry, which is a
// no-op, and detaches it at the end), and a command still requested is
// started, or found ended, at its request's next delivery. The detach
// is a no-op where nothing was opened.
// st is the command as read after the start was lost.
func (w *Worker) settleLost(ctx context.Context, st command.State) {
	if st.Session == "" || !st.Ended() || st.Worker != "" {
		return
	}
	w.detach(ctx, st.ID, st.Session, st.Status, events.Cause{Kind: "worker", Event: "command." + st.Status, Detail: st.ID, Ref: st.ID})
}

// detach closes the command's entry on its session with outcome. A
// session many writers move at once (hooks, other workers' entries) can
// refuse an append again and again: a detach whose attempts all met a
// moved session tries again after a pause that grows, up to
// detachPatience, so that the entry does not stay open, and the session
// working, for good. The detach is a no-op once the entry is closed.
func (w *Worker) detach(ctx context.Context, commandID, sessionID, outcome string, cause events.Cause) {
	if sessionID == "" {
		return
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: sessionID}
	at := w.now()
	err := w.sessionRetry(ctx, agg, func(s session.State) (events.Decision, error) {
		return session.Decide(s, session.Detach{EntryID: EntryID(commandID), Outcome: outcome, At: at, Cause: cause})
	})
	if err != nil {
		w.log.Warn("detach from session", "command", commandID, "session", sessionID, "err", err)
	}
}

// sessionRetry decides on session agg and appends the result, as
// Executor.Execute does; a session many writers move at once (hooks,
// other workers' entries) can refuse an append again and again, so an
// Execute whose attempts all met a moved session is tried again after a
// pause that grows, apart from the other writers (who may be other
// workers pausing too), up to detachPatience or ctx's end. It returns
// Execute's last error: nil once the decision is on the log.
func (w *Worker) sessionRetry(ctx context.Context, agg events.Aggregate, decide func(session.State) (events.Decision, error)) error {
	deadline := time.Now().Add(detachPatience)
	pause := 5 * time.Millisecond
	for {
		_, _, err := w.sessions.Execute(ctx, agg, decide)
		if err == nil || !errors.Is(err, events.ErrConflict) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause/2 + rand.N(pause)):
		}
		pause = min(2*pause, time.Second)
	}
}

// detachPatience is how long an attach or a detach goes on trying a
// session that keeps moving under it (see sessionRetry); an attach is
// bounded by its append's timeout first.
const detachPatience = time.Minute

// supervise waits for j's process, reports its exit and detaches it.
//
// Once the slot is let go, a restricted command offers again the requests
// waiting on its workspace (offerWaiting): the control feed offered them
// when it read the exit, which may come before the boundary's lock and
// the slot are let go, and a take then found the workspace busy or no
// slot free; a request a dead worker's delivery holds would otherwise
// wait for the consumer's ack wait.
func (w *Worker) supervise(j *job, st command.State) {
	defer func() {
		<-w.slots
		if st.Mode != events.ModeFullAccess && w.caughtUp.Load() {
			w.mu.Lock()
			reqs := w.waitingLocked(filepath.Clean(st.Workspace))
			w.mu.Unlock()
			w.offerWaiting(reqs)
		}
	}()
	defer func() {
		w.mu.Lock()
		delete(w.running, j.id)
		w.mu.Unlock()
	}()
	defer j.cancel()
	p := j.process()
	// The exit is reported once the process tree is gone and its output
	// read; what the sandbox left on the host (placeholders, locks,
	// cgroup) goes meanwhile, and the slot is let go once it has.
	defer p.Wait()
	res, werr := p.WaitExit()
	mark(j.id, StageExit)
	if werr != nil {
		w.log.Warn("wait", "command", j.id, "err", werr)
	}
	// Wait returns once every chunk was emitted: store them all before
	// the exit, so a reader that sees the exit has seen the output.
	j.red.close()
	close(j.out)
	<-j.pubDone
	<-j.recorded
	// A stdin write the process took before it ended is recorded before
	// the exit (the command's state takes no stdin once it has exited):
	// the write holds j.stdin until its record is appended. With the
	// process tree gone, a write under way ends at once (the process is
	// gone), so this waits for an append at most.
	j.stdin.Lock()
	j.stdin.Unlock()
	if j.abandoned.Load() {
		return // another worker declared this one dead; the command's end is recorded
	}
	exit := command.Exit{Code: res.ExitCode, Stopped: res.Stopped, DurationMS: res.Duration.Milliseconds(), OutputBytes: j.stored.Load(),
		OutputDropped: j.dropped.Load(), Limits: res.Limits.String(), Lingering: res.Lingering}
	detail := "exit " + strconv.Itoa(res.ExitCode)
	if res.Signal != "" {
		exit.Code, exit.Signal = -1, res.Signal
		detail = "signal " + res.Signal
	}
	if errors.Is(werr, sandbox.ErrRefused) && res.Signal == "" && !res.Stopped {
		// bubblewrap ended without running the command: its boundary
		// was not built, or the exec failed (a script whose interpreter
		// the boundary hides). Its exit status is not the command's.
		exit.NotRun = fmt.Sprintf("bubblewrap exited with status %d before running it; its message is in the output", res.ExitCode)
		detail = "not run"
	}
	exitID := w.cfg.IDs()
	exit.Cause = events.Cause{Kind: "worker", Event: "process.exited", Detail: detail, Ref: j.started.String()}
	agg := events.Aggregate{Kind: events.KindCommand, ID: j.id}
	var err error
	for attempt := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultAppendTimeout)
		exit.At = w.now()
		_, _, err = w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
			evs, err := command.Decide(s, exit)
			if err == nil {
				evs[0].ID = exitID
			}
			return evs, err
		})
		cancel()
		if err == nil || errors.Is(err, events.ErrRejected) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	if err != nil {
		w.log.Warn("report exit", "command", j.id, "err", err)
	} else {
		mark(j.id, StageExited)
	}
	if lost := j.lost.Load(); lost > 0 {
		w.log.Warn("output lost", "command", j.id, "bytes", lost)
	}
	w.log.Info("exited", "command", j.id, "code", exit.Code, "signal", exit.Signal, "stopped", exit.Stopped, "output_bytes", exit.OutputBytes)
	outcome := events.OutcomeOK
	switch {
	case exit.NotRun != "":
		outcome = "not run"
	case res.Stopped:
		outcome = "stopped"
	case exit.Signal != "":
		outcome = "killed by " + exit.Signal
	case exit.Code != 0:
		outcome = "exit " + strconv.Itoa(exit.Code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultAppendTimeout)
	defer cancel()
	w.detach(ctx, j.id, j.session, outcome, events.Cause{Kind: "worker", Event: "command.exited", Detail: j.id, Ref: exitID.String()})
}

// Output batching: what the publisher stores in one go.
const (
	maxOutBatch      = 128     // chunks
	maxOutBatchBytes = 4 << 20 // bytes
	outQueue         = 128     // chunks waiting for the publisher before emit blocks
)

// outChunk is a chunk queued for the publisher, with its position in the
// whole output.
type outChunk struct {
	sandbox.Chunk
	pos int64
}

// emit queues one chunk of j's output for its publisher. It runs on the
// sandbox's emit goroutine, so chunks are queued in order, and it blocks
// while the queue is full: a command that writes faster than the log
// stores is slowed down rather than buffered without bound.
func (w *Worker) emit(j *job, c sandbox.Chunk) {
	<-j.gate
	if j.discard.Load() {
		return
	}
	if !j.output.Swap(true) {
		mark(j.id, StageOutput)
	}
	j.red.write(c)
}

// queue hands one redacted chunk to j's publisher (under j.red's lock).
// Past the cap on stored output the output is still read, so the command
// is not blocked, but only counted.
func (j *job) queue(c sandbox.Chunk) {
	if room := j.maxOut - j.pos; int64(len(c.Data)) > room {
		room = max(room, 0)
		j.dropped.Add(int64(len(c.Data)) - room)
		if room == 0 {
			return
		}
		c.Data = c.Data[:room]
	}
	j.out <- outChunk{Chunk: c, pos: j.pos}
	j.pos += int64(len(c.Data))
}

// maxOutput returns the cap on a command's stored output, in bytes.
func (w *Worker) maxOutput() int64 {
	if w.cfg.MaxOutputBytes > 0 {
		return w.cfg.MaxOutputBytes
	}
	return DefaultMaxOutputBytes
}

// publish stores j's queued output on lb.out.<id> until the queue is
// closed: whatever has queued up while the previous store was in flight
// goes out as one atomic batch (one fsync for all of it), a lone chunk
// as a plain publish. It closes j.pubDone when done.
func (w *Worker) publish(j *job) {
	defer close(j.pubDone)
	var batch []outChunk
	for first := range j.out {
		batch = append(batch[:0], first)
		size := len(first.Data)
	more:
		for len(batch) < maxOutBatch && size < maxOutBatchBytes {
			select {
			case c, ok := <-j.out:
				if !ok {
					break more
				}
				batch = append(batch, c)
				size += len(c.Data)
			default:
				break more
			}
		}
		w.store(j, batch)
	}
}

// store publishes batch, retrying with the same message ids (so nothing
// is stored twice) a few times before it counts the bytes as lost.
func (w *Worker) store(j *job, batch []outChunk) {
	msgs := make([]*nats.Msg, len(batch))
	size := 0
	for i, c := range batch {
		m := nats.NewMsg(natslog.OutputSubject(j.id))
		m.Data = c.Data
		m.Header.Set(HeaderStream, string(c.Stream))
		m.Header.Set(HeaderOffset, strconv.FormatInt(c.Offset, 10))
		m.Header.Set(HeaderPos, strconv.FormatInt(c.pos, 10))
		m.Header.Set(jetstream.MsgIDHeader, j.id+":"+string(c.Stream)+":"+strconv.FormatInt(c.Offset, 10))
		msgs[i] = m
		size += len(c.Data)
	}
	var err error
	for attempt := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if len(msgs) == 1 {
			_, err = w.js.PublishMsg(ctx, msgs[0], jetstream.WithExpectStream(natslog.StreamName))
		} else {
			_, err = jetstreamext.PublishMsgBatch(ctx, w.js, msgs)
			if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok && apiErr.ErrorCode == jetstreamext.JSErrCodeBatchPublishDuplicateMsgID {
				err = nil // committed by an attempt whose answer was lost
			}
		}
		cancel()
		if err == nil {
			j.stored.Add(int64(size))
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	j.lost.Add(int64(size))
	w.log.Warn("store output", "command", j.id, "chunks", len(batch), "bytes", size, "err", err)
}

// checkCwd reports a working directory that is not inside workspace,
// naming it as "cwd <path>" (a relative cwd taken from workspace), as
// CheckCwd does. With resolve, symbolic links are followed (the worker's
// check, on the host that runs the command); without, the check is on
// the cleaned paths alone (a requester's check, which may run on another
// host).
func checkCwd(workspace, cwd string, resolve bool) error {
	if !filepath.IsAbs(workspace) {
		return fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	ws := filepath.Clean(workspace)
	dir := cwd
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	named := dir // as given, a relative one taken from the workspace
	dir = filepath.Clean(dir)
	if resolve {
		if r, err := filepath.EvalSymlinks(ws); err == nil {
			ws = r
		}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
	}
	if dir != ws && !(ws == "/" || len(dir) > len(ws) && dir[:len(ws)] == ws && dir[len(ws)] == '/') {
		return fmt.Errorf("cwd %s is outside the workspace %s", named, workspace)
	}
	return nil
}

// bwrapProbe runs sandbox.Available once per worker rather than before
// every restricted start (a bubblewrap start each, ~20 ms), and remembers
// a success; a failure is not remembered, so bubblewrap installed or
// allowed later is found by the next restricted command.
type bwrapProbe struct {
	mu sync.Mutex
	ok map[string]bool // by Spec.Bwrap
}

// check returns nil once bubblewrap bw has passed a probe, probing now if
// it has not; errors are sandbox.Available's.
func (p *bwrapProbe) check(ctx context.Context, bw string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ok[bw] {
		return nil
	}
	if err := sandbox.Available(ctx, bw); err != nil {
		return err
	}
	if p.ok == nil {
		p.ok = map[string]bool{}
	}
	p.ok[bw] = true
	return nil
}
