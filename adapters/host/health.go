package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/projections"
)

// LogHealth is what serve knows of its log's availability: since when it
// has not answered (a cluster that lost its quorum, a stream leader being
// elected for longer than a read waits) and why. serve keeps running
// meanwhile: hooks go into its journal, reads are answered from its
// projection, and the journal is appended, in order, once the log
// answers again. The zero value is a log that answers. Safe for
// concurrent use.
type LogHealth struct {
	// Reader is a follower's (serve --role reader): it takes no hooks,
	// so what Probe says while the log is away names no journal.
	Reader bool
	mu     sync.Mutex
	since  time.Time       // zero while the log answers
	why    string          // the last error that said it does not
	lost   natslog.Missing // what CheckWhole found missing; Whole for nothing
}

// Hole returns what CheckWhole found missing from the log as a
// *merkle.GapError, nil when it found nothing (or has not finished): the
// writer's checkpoints stop on it (merkle.Checkpointer.Hole), so that
// none is signed over a log with a hole.
func (h *LogHealth) Hole() *merkle.GapError {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost.Whole() {
		return nil
	}
	gap := &merkle.GapError{Found: h.lost.String()}
	if len(h.lost.Seqs) > 0 { // FindMissing names the first of any it counts
		gap.Seq = h.lost.Seqs[0]
	}
	return gap
}

// Missing records m, a walk of the whole log (CheckWhole), for the status
// reply (api.StatusReply.LogMissing).
func (h *LogHealth) Missing(m natslog.Missing) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = m
}

// CheckWhole walks the whole log l once (natslog.Log.FindMissing) and,
// when its stream lost more messages than a start accepted (accepted:
// stream.json's gone, after serve --accept-stream-loss, whose later
// starts are quiet), says so at ERROR through say, naming
// how many and the first sequences and pointing to `logbook verify`,
// and records it in h. serve goes on: the rest of the log is good. The
// server's own counts miss a message damaged in place, so serve's check
// at start (OpenViews) cannot see one; this read does, while serve
// runs. A walk that fails is said at WARN; one ctx ended says nothing.
func (h *LogHealth) CheckWhole(ctx context.Context, l *natslog.Log, accepted uint64, say func(format string, args ...any)) {
	m, err := l.FindMissing(ctx)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		say("WARN: the walk of the whole log for lost messages stopped: %v", err)
	case m.Count > accepted:
		h.Missing(m)
		say("ERROR: %s (lost under its server: a block file damaged or cut short); folds, replays and tails pass over them, and a session whose last event one was lacks it%s", m, natslog.VerifyHint)
	}
}

// Failed records err, an error natslog.Unavailable names, as the log not
// answering (since now, unless it already was not).
func (h *LogHealth) Failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since.IsZero() {
		h.since = time.Now().UTC()
	}
	h.why = err.Error()
}

// OK records that the log answered; it reports whether it had not.
func (h *LogHealth) OK() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := !h.since.IsZero()
	h.since, h.why = time.Time{}, ""
	return was
}

// State returns since when the log has not answered (zero: it answers;
// UTC otherwise) and the last error that said so. Its shape is
// api.Service.LogState's.
func (h *LogHealth) State() (time.Time, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.why
}

// LogProbeEvery is how often Probe asks the log whether it answers, and
// LogProbeWait how long one ask may take: past it the log is unavailable.
const (
	LogProbeEvery = time.Second
	LogProbeWait  = 5 * time.Second
)

// Probe asks l for its last sequence every LogProbeEvery until ctx ends
// and records the outcome in h, saying (through say, on Probe's
// goroutine) when the log stops and starts answering. It blocks until
// ctx is done.
func (h *LogHealth) Probe(ctx context.Context, l *natslog.Log, say func(format string, args ...any)) {
	t := time.NewTicker(LogProbeEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, LogProbeWait)
		_, err := l.LastSeq(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			if since, _ := h.State(); !since.IsZero() && h.OK() {
				if h.Reader {
					say("log available again after %s unavailable", time.Since(since).Round(time.Second))
				} else {
					say("log available again after %s unavailable; appending what waits in the journal", time.Since(since).Round(time.Second))
				}
			}
		case natslog.Unavailable(err):
			if since, _ := h.State(); since.IsZero() {
				if h.Reader {
					say("log unavailable (%v); answering reads from the projection until it answers again", err)
				} else {
					say("log unavailable (%v); taking hooks into the journal and answering reads from the projection until it answers again", err)
				}
			}
			h.Failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// StatusReply answers the status verb: with the log's last sequence
// while it answers, after waitIntake (the hooks taken on the socket
// before the call are then in it; api.Service.WaitIntakeToRead), else at
// once from store's checkpoint with since when the log is unavailable (a
// status never waits out a lost quorum). When waitIntake did not wait
// because appends are paused, it returns since when, and the reply says
// so (AppendsPausedSince). durability is copied into the reply. An error
// is waitIntake's or the log's, other than its being unavailable.
func (h *LogHealth) StatusReply(ctx context.Context, l *natslog.Log, store *projections.Store, durability string, waitIntake func(context.Context) (time.Time, error)) (api.StatusReply, error) {
	reply := api.StatusReply{Checkpoint: store.Checkpoint(), Durability: durability}
	h.mu.Lock()
	reply.LogMissing = h.lost.String()
	h.mu.Unlock()
	if since, why := h.State(); !since.IsZero() {
		reply.LogUnavailableSince, reply.LogError = &since, why
		return reply, nil
	}
	paused, err := waitIntake(ctx)
	if err != nil {
		return reply, err
	}
	if !paused.IsZero() {
		reply.AppendsPausedSince = &paused
	}
	last, err := l.LastSeq(ctx)
	if natslog.Unavailable(err) && ctx.Err() == nil { // not the caller's own deadline
		h.Failed(err)
		since, why := h.State()
		reply.LogUnavailableSince, reply.LogError = &since, why
		return reply, nil
	}
	reply.LastSeq = last
	return reply, err
}

// UnavailableText is the line status and doctor print for a log that
// does not answer: "log unavailable since 2026-12-02T04:01:02Z (1m3s): …",
// the duration up to now rounded to the second.
func UnavailableText(since time.Time, why string) string {
	return fmt.Sprintf("log unavailable since %s (%s): %s", since.Format(time.RFC3339), time.Since(since).Round(time.Second), why)
}

// Gauge returns logbook_log_unavailable_seconds: how long the log has
// not answered, in seconds, 0 while it answers. Register it once.
func (h *LogHealth) Gauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_log_unavailable_seconds",
		Help: "How long the log has not answered (a cluster without quorum; reads come from the projection, hooks wait in the journal); 0 while it answers.",
	}, func() float64 {
		since, _ := h.State()
		if since.IsZero() {
			return 0
		}
		return time.Since(since).Seconds()
	})
}
