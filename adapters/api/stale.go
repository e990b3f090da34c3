package api

import (
	"context"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/projections"
)

// Stale marks an answer read from the projection as it stood while the
// server's log did not answer (a cluster that lost its quorum), instead
// of after catching up with the log: since when the log has not
// answered, why, and the last stream sequence the projection had
// applied. The zero value, whose fields are absent on the wire, means
// the answer caught up with the log first. Its fields come after the
// fields a client of an older version reads (a sessions page's "rows"),
// and such a client ignores them.
type Stale struct {
	LogUnavailableSince *time.Time `json:"log_unavailable_since,omitempty"`
	AsOfSeq             uint64     `json:"as_of_seq,omitempty"`
	LogError            string     `json:"log_error,omitempty"`
}

// IsStale reports whether the answer was read without catching up.
func (s Stale) IsStale() bool { return s.LogUnavailableSince != nil }

// StaleInfo returns s; every answer that embeds a Stale has it, so a
// client can ask any answer whether it is stale.
func (s Stale) StaleInfo() Stale { return s }

// Text is the line a person reads for a stale answer, as of now: "log
// unavailable since 2026-12-02T06:00:00Z (42s): showing the projection
// as of sequence 1234 (why)". It is "" for an answer that is not stale.
func (s Stale) Text(now time.Time) string {
	if !s.IsStale() {
		return ""
	}
	t := fmt.Sprintf("log unavailable since %s (%s): showing the projection as of sequence %d",
		s.LogUnavailableSince.UTC().Format(time.RFC3339), now.Sub(*s.LogUnavailableSince).Round(time.Second), s.AsOfSeq)
	if s.LogError != "" {
		t += " (" + s.LogError + ")"
	}
	return t
}

// LogState reports since when a server's log has not answered (zero
// time: it answers) and the last error that said so. It must be safe for
// concurrent use and return at once.
type LogState func() (since time.Time, why string)

// staleOK is the context key of AllowStale.
type staleOK struct{}

// headerStaleOK, on a request, carries AllowStale to the server.
const headerStaleOK = "Logbook-Stale-Ok"

// AllowStale returns a context whose requests may be answered from the
// projection as it stands while the server's log does not answer,
// marked with a Stale, instead of waiting for the projection to catch up
// with a log that cannot say where it ends. Only a command that prints
// what it reads passes it (the read verbs: sessions, session show,
// commands, workspace list): one that decides or appends on what it
// reads (the gate, the reconciler, a writer) never does, and keeps
// waiting or failing while the log is unavailable. Call sends it to the
// server as a request header; Local passes the context on as it is.
func AllowStale(ctx context.Context) context.Context {
	return context.WithValue(ctx, staleOK{}, true)
}

// staleAllowed reports whether ctx came through AllowStale.
func staleAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(staleOK{}).(bool)
	return ok
}

// staleEvery is how often readCaughtUp looks at the log's state while it
// waits for the projection to catch up.
const staleEvery = 100 * time.Millisecond

// readCaughtUp is CaughtUp for an answer that only reads: when ctx
// allows it (AllowStale) and the service's LogState says the log does
// not answer, now or while CaughtUp waits, it returns at once with the
// projection's checkpoint as a Stale instead. Without either it is
// CaughtUp.
func (s *Service) readCaughtUp(ctx context.Context) (Stale, error) {
	state := s.LogState
	if state == nil || !staleAllowed(ctx) {
		return Stale{}, s.CaughtUp(ctx)
	}
	stale := func() (Stale, bool) {
		since, why := state()
		if since.IsZero() {
			return Stale{}, false
		}
		return Stale{LogUnavailableSince: &since, LogError: why, AsOfSeq: s.Store.Checkpoint()}, true
	}
	// The log may stop answering while CaughtUp waits on it: its own wait
	// for a leader is far longer than a person waits for a list.
	return projections.WaitUnless(ctx, staleEvery, s.CaughtUp, stale)
}
