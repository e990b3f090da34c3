package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
)

// DefaultCheckGrace is how long past a check run's deadline (its start
// plus its timeout) its runner is given to record a verdict before the
// reconciler takes the runner for vanished: the runner stops the check's
// tree with SIGTERM at the timeout and SIGKILL 2 s later, and may take up
// to 30 s to record the verdict on a slow log.
const DefaultCheckGrace = 45 * time.Second

// EndVanishedChecks ends, as error ("runner vanished: …", check.Vanish),
// each running run of runs whose runner can no longer record a verdict,
// and returns how many it ended and the first error. A run is ended only
// when both hold:
//   - on the log's own record, its start plus its timeout plus grace has
//     passed by this host's clock (a live runner kills the check's whole
//     tree at the timeout, then records its verdict);
//   - and either its runner is a process of this host found gone (the
//     same pid with the same start time no longer runs), or this manager
//     has itself seen the run running for its timeout plus grace on its
//     monotonic clock, so a runner's clock behind this host's (a start
//     that looks older than it is) does not end a live run early.
//
// Runs of runs that have ended are forgotten; a run that ended meanwhile
// is left as it is. Safe for one caller at a time (the reconciler).
func (m *Manager) EndVanishedChecks(ctx context.Context, runs []check.State, grace time.Duration) (int, error) {
	m.watchMu.Lock()
	defer m.watchMu.Unlock()
	if m.watched == nil {
		m.watched = map[string]time.Time{}
	}
	live := map[string]bool{}
	n := 0
	var first error
	for _, r := range runs {
		if r.Status != events.CheckRunning {
			continue
		}
		live[r.ID] = true
		seen, ok := m.watched[r.ID]
		if !ok {
			seen = time.Now()
			m.watched[r.ID] = seen
		}
		now := m.now()
		limit := time.Duration(r.TimeoutMS) * time.Millisecond
		if now.Before(r.Deadline().Add(grace)) {
			continue
		}
		var evidence string
		switch {
		case runnerOf(r.Runner) == m.cfg.Host && !RunnerAlive(r.Runner, m.cfg.Host):
			evidence = fmt.Sprintf("its runner %s, a process of this host, is gone", r.Runner)
		case time.Since(seen) >= limit+grace:
			evidence = fmt.Sprintf("no verdict came while %s watched it for %s", m.runner, time.Since(seen).Round(time.Second))
		default:
			continue
		}
		cmd := check.Vanish{Grace: grace, Evidence: evidence, At: now, Cause: events.Cause{Kind: "system", Event: "reconcile", Detail: "check runner vanished", Ref: m.cfg.IDs().String()}}
		agg := events.Aggregate{Kind: events.KindCheck, ID: r.ID}
		_, _, err := m.checks.Execute(ctx, agg, func(s check.State) (events.Decision, error) { return check.Decide(s, cmd) })
		switch {
		case err == nil:
			n++
			delete(m.watched, r.ID)
		case errors.Is(err, events.ErrRejected):
			// It ended meanwhile, or its start is not what the row said.
		case first == nil:
			first = fmt.Errorf("end check run %s: %w", r.ID, err)
		}
	}
	for id := range m.watched {
		if !live[id] {
			delete(m.watched, id)
		}
	}
	return n, first
}

// runnerOf returns the host part of a runner id.
func runnerOf(runner string) string {
	host, _, _ := strings.Cut(runner, "/")
	return host
}
