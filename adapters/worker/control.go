package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// Reasons of command.abandoned appended by workers.
const (
	// ReasonLost: the worker's heartbeat lapsed.
	ReasonLost = "worker_lost"
	// ReasonGone: the worker ran on this host and its process is gone
	// (it crashed or was killed, and maybe restarted).
	ReasonGone = "worker_gone"
	// ReasonRebooted: the worker ran on this host, which has booted since.
	ReasonRebooted = "host_restarted"
)

// newIdentity returns the identity of a new worker in this process.
func newIdentity(host string) Identity {
	pid := os.Getpid()
	start := ulid.Make()
	id := Identity{
		ID:      fmt.Sprintf("%s-%d-%s", token(host), pid, start),
		Host:    host,
		Pid:     pid,
		Started: start.String(),
		Boot:    bootID(),
	}
	id.ProcStart, _ = sandbox.ProcStart(pid)
	return id
}

// token returns s with every byte outside [A-Za-z0-9_-] replaced by '_'.
func token(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "host"
	}
	return string(b)
}

// bootID returns this host's boot id, "" when unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidOnHost returns the pid worker id names (newIdentity's
// "<host>-<pid>-<ulid>") when the id is of a worker of host.
func pidOnHost(worker, host string) (int, bool) {
	rest, ok := strings.CutPrefix(worker, token(host)+"-")
	if !ok {
		return 0, false
	}
	pidText, start, ok := strings.Cut(rest, "-")
	if !ok || strings.Contains(start, "-") {
		return 0, false
	}
	if _, err := ulid.ParseStrict(start); err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != pidText {
		return 0, false
	}
	return pid, true
}

// putBeat stores the worker's heartbeat.
func (w *Worker) putBeat(ctx context.Context) error {
	b, err := json.Marshal(w.id)
	if err != nil {
		return err
	}
	if _, err := w.beats.Put(ctx, w.id.ID, b); err != nil {
		return fmt.Errorf("put heartbeat %s: %w", w.id.ID, err)
	}
	w.lastBeat.Store(time.Now().UnixNano())
	return nil
}

// beat puts the heartbeat every quarter of the bucket's TTL and, once the
// control feed has caught up, checks the workers of open commands; every
// Config.LedgerSweep it sweeps the ledger.
func (w *Worker) beat(ctx context.Context) error {
	every := max(w.lapse/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	swept := time.Now() // Run swept at the start
	for {
		if w.caughtUp.Load() {
			w.reap(ctx)
		}
		if time.Since(swept) >= w.cfg.LedgerSweep {
			w.sweepPlaceholders()
			swept = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
			continue // the control feed just caught up: check at once
		case <-t.C:
		}
		if err := w.putBeat(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("heartbeat", "err", err)
		}
	}
}

// control follows every command event from the start of the log: it
// keeps the set of commands that have not ended (for reap) and stops the
// commands this worker runs when they get a stop request or are
// abandoned. A feed that fails for good (its ordered consumer could not
// be re-created: a node or the connection gone for longer than the
// client's resets, the stream without a leader) is created again from
// the message after the last one it delivered, after a pause growing to
// controlMaxPause, for as long as the worker runs: the worker never
// stops following stop requests while it may run commands.
func (w *Worker) control(ctx context.Context) error {
	var next uint64 // stream sequence of the next message to read; 0: from the start
	for pause := controlFirstPause; ; pause = min(pause*2, controlMaxPause) {
		delivered, err := w.controlFeed(ctx, &next)
		if ctx.Err() != nil {
			return nil
		}
		if delivered {
			pause = controlFirstPause
		}
		w.log.Warn("control feed: following it again", "from_seq", max(next, 1), "in", pause, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Pauses before the control feed is created again after a failure:
// doubling from controlFirstPause up to controlMaxPause, and back to the
// first once a feed has delivered a message.
const (
	controlFirstPause = 250 * time.Millisecond
	controlMaxPause   = 5 * time.Second
)

// controlFeed runs one ordered consumer of the control feed from *next
// (the start when 0), advancing *next past each message it handles, until
// ctx ends (nil) or the feed fails (the error). delivered reports whether
// it handled a message.
func (w *Worker) controlFeed(ctx context.Context, next *uint64) (delivered bool, err error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:   []string{CommandFilter, SessionFilter},
		DeliverPolicy:    jetstream.DeliverAllPolicy,
		MaxResetAttempts: natslog.ResetAttempts,
	}
	if *next > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, *next
	}
	var cons jetstream.Consumer
	err = untilServed(ctx, w.log, "control feed", func(ctx context.Context) (err error) {
		cons, err = w.js.OrderedConsumer(ctx, natslog.StreamName, cfg)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("worker %s: control feed: %w", w.id.ID, err)
	}
	// Bounded as the intake's pulls are: a writer's admission waits for
	// this feed (earlierWaiting), so a pull the server lost (a feed made
	// as the worker starts, on a loaded cluster) must be pulled again in
	// about 2×requestHeartbeat, not after the ordered consumer's default
	// two missed 5 s heartbeats, during which no writer starts.
	it, err := cons.Messages(jetstream.PullMaxMessages(1000),
		jetstream.PullExpiry(requestExpiry), jetstream.PullHeartbeat(requestHeartbeat))
	if err != nil {
		return false, fmt.Errorf("worker %s: control feed: %w", w.id.ID, err)
	}
	defer it.Stop()
	unwatch := context.AfterFunc(ctx, it.Stop) // Next misses ctx during a reset
	defer unwatch()
	morePending := false // the last message read said more follow it
	for {
		nctx, cancel := ctx, context.CancelFunc(func() {})
		if !w.caughtUp.Load() {
			// With no command event at all nothing arrives: a quiet
			// feed is a caught-up one.
			nctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
		}
		msg, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return delivered, nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				// Quiet for a moment: caught up, unless the last message
				// said more were pending (a pull between batches is not
				// the end of the log). No request to the server here: an
				// ordered consumer's Info holds its lock until answered.
				if !morePending {
					w.setCaughtUp()
				}
				continue
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return delivered, fmt.Errorf("worker %s: control feed closed: %w", w.id.ID, err)
			}
			w.log.Warn("control feed", "err", err)
			continue
		}
		md, mdErr := msg.Metadata()
		if mdErr == nil && md.Sequence.Stream < *next {
			continue // delivered again after a reset: handled already
		}
		if strings.HasPrefix(msg.Subject(), sessionPrefix) && msg.Headers().Get(natslog.HeaderType) != sessionEnded {
			// Of a session's events only its end matters here.
		} else if e, err := w.cfg.Reg.Decode(msg.Data()); err != nil {
			w.log.Warn("control feed: undecodable event", "subject", msg.Subject(), "err", err)
		} else if e.Agg.Kind == events.KindSession {
			w.sessionEnded(ctx, e)
		} else if freed := w.observe(e); len(freed) > 0 && w.caughtUp.Load() {
			// Ends read while catching up are history: what waits
			// then is offered once the feed has caught up (intake).
			w.offerWaiting(freed[:1])
		}
		delivered = true
		if mdErr == nil {
			*next = md.Sequence.Stream + 1
			morePending = md.NumPending > 0
			if md.NumPending == 0 {
				w.setCaughtUp()
			}
		}
	}
}

// setCaughtUp records that the control feed has read the log's command
// events once, and has the liveness check run at once the first time.
func (w *Worker) setCaughtUp() {
	if w.caughtUp.CompareAndSwap(false, true) {
		close(w.caught)
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// waiting is a request the control feed has read that has not started:
// its command, session and place among the requests.
type waiting struct {
	id, session string
	order       uint64
}

// waitingLocked returns the requests that have not started, in request
// order: when ws is "", every full_access one and, of the restricted
// ones, the first on each workspace (cleaned, as requested); else the
// restricted ones whose workspace is ws, one above it or one below it.
// w.mu is held.
func (w *Worker) waitingLocked(ws string) []waiting {
	var reqs []waiting
	for id, t := range w.open {
		if t.started || ws != "" && (t.mode == events.ModeFullAccess || !nested(t.workspace, ws)) {
			continue
		}
		reqs = append(reqs, waiting{id, t.session, t.order})
	}
	slices.SortFunc(reqs, func(a, b waiting) int { return cmp.Compare(a.order, b.order) })
	if ws != "" {
		return reqs
	}
	kept := reqs[:0]
	first := map[string]bool{} // workspaces whose first restricted request is kept
	for _, r := range reqs {
		t := w.open[r.id]
		if t.mode != events.ModeFullAccess {
			if first[t.workspace] {
				continue
			}
			first[t.workspace] = true
		}
		kept = append(kept, r)
	}
	return kept
}

// offerWaiting takes requests that may start now, as a Client's
// appended request is taken (Handoff), rather than leaving them to
// their next delivery: a request put back to wait for its workspace is
// delivered again a moment later, but one delivered to a worker that
// died (serve killed and started again) only once the consumer's ack
// wait has passed. Once its control feed has caught up, the feed calls
// it when a restricted command leaves the open set (its workspace
// freed, or an earlier writer gone) with the first request waiting on
// that workspace; the intake calls it once the feed has caught up with
// every full_access request not started and the first restricted one
// of each workspace (waitingLocked). The rest follow as those end. A
// request another live worker holds, or whose workspace is still busy,
// is left to its delivery, as any take leaves it; one being taken in
// this process is not taken twice, but judged again once that take
// ends unsettled (Handoff.begin). Nothing is taken while the intake
// takes no requests or has no free slot.
func (w *Worker) offerWaiting(reqs []waiting) {
	for _, r := range reqs {
		w.offer(w.cfg.Handoff, r.id, r.session)
	}
}

// Session events on the control feed.
const (
	// SessionFilter is the subject filter of session events, which the
	// control feed follows for session.ended.
	SessionFilter = events.SubjectEvents + "." + events.KindSession + ".>"
	sessionPrefix = events.SubjectEvents + "." + events.KindSession + "."
	sessionEnded  = "session.ended"
)

// sessionEnded appends the stop that the end of a session asks of each of
// its commands that has not ended (command.StopForSessionEnd), with the
// end as its cause; the worker running each then stops it (the stop comes
// back on the control feed). Every worker does this for every end it
// reads, from the start of the log: the first stop of a command lands and
// the others are rejected, and after a crash between the end and the
// stops the next worker to read the log appends them. Commands requested
// after the end are refused when a worker takes them (see start).
func (w *Worker) sessionEnded(ctx context.Context, end events.Envelope) {
	w.mu.Lock()
	var ids []string
	for id, t := range w.open {
		if t.session == end.Agg.ID {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()
	for _, id := range ids {
		agg := events.Aggregate{Kind: events.KindCommand, ID: id}
		_, _, err := w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
			stop, due := command.StopForSessionEnd(s, end)
			if !due {
				return nil, nil
			}
			return command.Decide(s, stop)
		})
		if err != nil && !errors.Is(err, events.ErrRejected) && ctx.Err() == nil {
			w.log.Warn("stop for the session's end", "command", id, "session", end.Agg.ID, "err", err)
		}
	}
}

// observe folds one command event into the open set and acts on the
// commands this worker runs. When a restricted command leaves the open
// set it returns the requests waiting on its workspace (see
// offerWaiting), in request order.
func (w *Worker) observe(e events.Envelope) (freed []waiting) {
	id := e.Agg.ID
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.open[id]
	defer func() {
		if t != nil && t.mode != events.ModeFullAccess && w.open[id] == nil {
			freed = w.waitingLocked(t.workspace)
		}
	}()
	switch d := e.Data.(type) {
	case events.CommandRequested:
		w.requests++
		w.open[id] = &tracked{session: d.Session, workspace: filepath.Clean(d.Workspace), mode: d.Mode, order: w.requests}
		if w.fed != nil {
			close(w.fed)
		}
		w.fed = make(chan struct{})
	case events.CommandStarted:
		if t != nil {
			t.started, t.worker, t.host, t.pid = true, d.Worker, d.Host, d.Pid
		}
	case events.CommandRunning:
		if t != nil {
			t.pid, t.procStart, t.boot, t.cgroup = d.Pid, d.ProcStart, d.Boot, d.Cgroup
		}
	case events.CommandEvicted:
		if t != nil && !t.started {
			delete(w.open, id)
		}
	case events.CommandExited, events.CommandRefused:
		delete(w.open, id)
	case events.CommandAbandoned:
		delete(w.open, id)
		if j := w.running[id]; j != nil {
			j.abandoned.Store(true)
			j.stop()
			w.log.Warn("abandoned by another worker; stopping it", "command", id, "reason", d.Reason)
		}
	case events.CommandStopRequested:
		if j := w.running[id]; j != nil {
			j.stop()
			w.log.Info("stop requested", "command", id, "by", d.By, "reason", d.Reason)
		}
	}
	return nil // freed, by the deferred func
}

// reap abandons the open commands whose worker is known dead. It does
// nothing while this worker's own heartbeat is late (then this worker may
// be the one cut off).
func (w *Worker) reap(ctx context.Context) {
	if time.Since(time.Unix(0, w.lastBeat.Load())) > w.lapse/2 {
		return
	}
	type victim struct {
		id string
		t  tracked
	}
	var cands []victim
	w.mu.Lock()
	for id, t := range w.open {
		if t.started && t.worker != w.id.ID {
			cands = append(cands, victim{id, *t})
		}
	}
	w.mu.Unlock()
	verdicts := map[string]string{} // worker → reason it is dead, "" alive
	for _, v := range cands {
		reason, ok := verdicts[v.t.worker]
		if !ok {
			dead, why := w.judge(ctx, v.t.worker, v.t.host, false)
			if dead {
				reason = why
			}
			verdicts[v.t.worker] = reason
		}
		if reason != "" {
			w.abandon(ctx, v.id, v.t, reason)
		}
	}
	// Forget the lapses of workers no open command names any more.
	w.mu.Lock()
	for worker := range w.missing {
		if _, ok := verdicts[worker]; !ok {
			delete(w.missing, worker)
		}
	}
	w.mu.Unlock()
}

// judge reports whether worker is dead, and why. A worker whose key is
// missing is dead once it has been missing for half the TTL as seen by
// this worker (so a server restart that lost or expired every key does
// not kill live workers), or at once with now set. A worker on this host
// is dead as soon as its process is: by its key's identity while the
// key lives, and, once it has lapsed, when host (the host its command
// started on, as command.started says; "" when not known) is this
// worker's and no process has the pid the worker's id names
// (pidOnHost).
func (w *Worker) judge(ctx context.Context, worker, host string, now bool) (bool, string) {
	e, err := w.beats.Get(ctx, worker)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		if pid, ok := pidOnHost(worker, w.id.Host); ok && host == w.id.Host {
			// Its key lapsed, but it ran here, and no process has its
			// pid: it is gone, whenever this worker came to look.
			if _, err := sandbox.ProcStart(pid); errors.Is(err, fs.ErrNotExist) {
				return true, ReasonGone
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		since, seen := w.missing[worker]
		if !seen {
			since = time.Now()
			w.missing[worker] = since
		}
		if now || time.Since(since) >= w.lapse/2 {
			return true, ReasonLost
		}
		return false, ""
	}
	if err != nil {
		return false, "" // cannot tell: assume alive
	}
	w.mu.Lock()
	delete(w.missing, worker)
	w.mu.Unlock()
	var id Identity
	if json.Unmarshal(e.Value(), &id) != nil || id.Host != w.id.Host {
		return false, ""
	}
	if id.Boot != "" && w.id.Boot != "" && id.Boot != w.id.Boot {
		return true, ReasonRebooted
	}
	ps, err := sandbox.ProcStart(id.Pid)
	if err != nil || id.ProcStart != 0 && ps != id.ProcStart {
		return true, ReasonGone
	}
	return false, ""
}

// abandon kills what is left of command id's tree when it ran on this
// host, then appends command.abandoned for it, started by the dead worker
// t.worker, and detaches it from its session. The kill comes first, so
// the log never says abandoned while a tree this worker could have
// killed still runs.
func (w *Worker) abandon(ctx context.Context, id string, t tracked, reason string) {
	sessionID, worker := t.session, t.worker
	if t.host == w.id.Host && t.pid > 0 {
		killed, err := killTree(t)
		switch {
		case err != nil:
			w.log.Warn("kill the dead worker's command", "command", id, "pid", t.pid, "err", err)
		case killed > 0:
			w.log.Warn("killed the dead worker's command", "command", id, "pid", t.pid, "processes", killed)
		}
	}
	if t.host == w.id.Host {
		// A tree started before its record names no pid or cgroup.
		w.sweepCgroups()
		w.sweepPlaceholders()
	}
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	cause := events.Cause{Kind: "worker", Event: "worker.dead", Detail: reason + ", judged by " + w.id.ID, Ref: worker}
	abandonID := w.cfg.IDs()
	stored := w.storedOutput(ctx, id)
	_, _, err := w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		evs, err := command.Decide(s, command.Abandon{Reason: reason, Worker: worker, OutputBytes: stored, At: w.now(), Cause: cause})
		if err == nil {
			evs[0].ID = abandonID
		}
		return evs, err
	})
	if errors.Is(err, events.ErrRejected) {
		return // it ended, or another worker abandoned it first
	}
	if err != nil {
		w.log.Warn("abandon", "command", id, "err", err)
		return
	}
	w.log.Warn("abandoned", "command", id, "dead_worker", worker, "reason", reason)
	w.detach(ctx, id, sessionID, "abandoned: "+reason, events.Cause{Kind: "worker", Event: "command.abandoned", Detail: id, Ref: abandonID.String()})
}

// storedOutput returns how many bytes of command id's output are stored
// on its output subject: the end (HeaderPos plus length) of the last
// chunk there, 0 when there is none or it cannot be read (said at WARN).
// The dead worker stored its chunks one batch after another, in order,
// so the last one ends the output.
func (w *Worker) storedOutput(ctx context.Context, id string) int64 {
	ctx, cancel := context.WithTimeout(ctx, DefaultAppendTimeout)
	defer cancel()
	stream, err := w.js.Stream(ctx, natslog.StreamName)
	var m *jetstream.RawStreamMsg
	if err == nil {
		m, err = stream.GetLastMsgForSubject(ctx, natslog.OutputSubject(id))
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0
	}
	if err != nil {
		w.log.Warn("output stored by the dead worker's command: counted as 0", "command", id, "err", err)
		return 0
	}
	pos, err := strconv.ParseInt(m.Header.Get(HeaderPos), 10, 64)
	if err != nil || pos < 0 {
		w.log.Warn("output stored by the dead worker's command: counted as 0", "command", id, "err", fmt.Sprintf("last chunk (seq %d) has %s %q", m.Sequence, HeaderPos, m.Header.Get(HeaderPos)))
		return 0
	}
	return pos + int64(len(m.Data))
}

// sweepCgroups kills and removes what dead workers of this host left in
// cgroups of their own making, including trees started before their
// record (see sandbox.SweepCgroups).
//
// Any dead worker's: a worker of another serve (another data dir) on
// this host, run by the same user or by root, left them as well; each
// cgroup that still held processes is named with the dead worker's pid.
func (w *Worker) sweepCgroups() {
	_, _, err := sandbox.SweepCgroups(func(c sandbox.SweptCgroup) {
		if c.Processes > 0 {
			w.log.Warn("killed what a dead worker left", "worker_pid", c.Owner, "cgroup", c.Path, "processes", c.Processes)
		}
	})
	if err != nil {
		w.log.Warn("sweep cgroups of dead workers", "err", err)
	}
}

// sweepPlaceholders kills what dead processes' bubblewrap left running
// on this host (see sandbox.SweepBoundaries) and removes the
// placeholders that dead worker processes of this host recorded in the
// ledger and left in workspaces (see sandbox.SweepPlaceholders, which
// kills the former first). Without a ledger it does the former alone.
func (w *Worker) sweepPlaceholders() {
	if w.cfg.Ledger == "" {
		killed, err := sandbox.SweepBoundaries()
		if err != nil {
			w.log.Warn("sweep sandboxes of dead workers", "err", err)
		}
		if killed > 0 {
			w.log.Warn("killed what dead workers' sandboxes left running", "processes", killed)
		}
		return
	}
	removed, killed, err := sandbox.SweepPlaceholders(w.cfg.Ledger)
	if err != nil {
		w.log.Warn("sweep placeholders of dead workers", "err", err)
	}
	if killed > 0 {
		w.log.Warn("killed what dead workers' sandboxes left running", "processes", killed)
	}
	if removed > 0 {
		w.log.Warn("removed placeholders dead workers left", "placeholders", removed)
	}
}

// killTree kills the process tree of a command that a dead worker ran on
// this host: the cgroup recorded for it when it has one (the whole tree,
// whatever it did), else the tree sandbox.KillTree finds from the
// recorded pid, start time and boot id (nothing if the pid was
// recycled or the host has booted since). It returns how many processes
// it signalled.
func killTree(t tracked) (int, error) {
	if t.cgroup != "" {
		if n, err := sandbox.KillCgroup(t.cgroup); err == nil {
			return n, nil
		}
	}
	if t.procStart == 0 {
		return 0, nil // an old record without a start time: the pid alone proves nothing
	}
	return sandbox.KillTree(t.pid, t.procStart, t.boot)
}
