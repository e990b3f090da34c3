package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/projections"
)

// Stale marks an answer read from the projection as it stood instead of
// after catching up with everything the server took: while the server's
// log did not answer (a cluster that lost its quorum: since when, why,
// LogUnavailableSince), or while its appends were paused by a full disk
// and hook payloads it took waited in its journal (AppendsPausedSince,
// HooksWaiting, LogError the pause's reason); and the last stream
// sequence the projection had applied. The zero value, whose fields are
// absent on the wire, means the answer caught up first. Its fields come
// after the fields a client of an older version reads (a sessions page's
// "rows"), and such a client ignores them.
type Stale struct {
	LogUnavailableSince *time.Time `json:"log_unavailable_since,omitempty"`
	// AppendsPausedSince is since when serve's appends wait for disk
	// space (diskfull.Pause); nil while they go on.
	AppendsPausedSince *time.Time `json:"appends_paused_since,omitempty"`
	// HooksWaiting is how many hook payloads serve took (acknowledged to
	// their hooks) were not in the log when the answer was read: they
	// wait in serve's journal for the disk, and the answer does not show
	// them.
	HooksWaiting int `json:"hooks_waiting,omitempty"`
	// HooksSpooled is how many hook payloads waited in the data dir's
	// spool, not yet taken by serve (their hooks could not hand them over
	// in time), when appends are paused.
	HooksSpooled int    `json:"hooks_spooled,omitempty"`
	AsOfSeq      uint64 `json:"as_of_seq,omitempty"`
	LogError     string `json:"log_error,omitempty"`
}

// IsStale reports whether the answer was read without catching up.
func (s Stale) IsStale() bool { return s.LogUnavailableSince != nil || s.AppendsPausedSince != nil }

// StaleInfo returns s; every answer that embeds a Stale has it, so a
// client can ask any answer whether it is stale.
func (s Stale) StaleInfo() Stale { return s }

// Text is the line a person reads for a stale answer, as of now: "log
// unavailable since 2026-12-02T06:00:00Z (42s): showing the projection
// as of sequence 1234 (why)", or, appends paused, "appends paused since
// 2026-12-02T06:00:00Z (42s): 3 hook payloads serve took wait in its
// journal, not shown; 2 more wait in the spool, not yet taken; showing
// the projection as of sequence 1234 (why)".
// It is "" for an answer that is not stale.
func (s Stale) Text(now time.Time) string {
	var t string
	switch {
	case s.LogUnavailableSince != nil:
		t = fmt.Sprintf("log unavailable since %s (%s): showing the projection as of sequence %d",
			s.LogUnavailableSince.UTC().Format(time.RFC3339), now.Sub(*s.LogUnavailableSince).Round(time.Second), s.AsOfSeq)
	case s.AppendsPausedSince != nil:
		t = fmt.Sprintf("appends paused since %s (%s): ", s.AppendsPausedSince.UTC().Format(time.RFC3339), now.Sub(*s.AppendsPausedSince).Round(time.Second))
		switch {
		case s.HooksWaiting == 1:
			t += "1 hook payload serve took waits in its journal, not shown; "
		case s.HooksWaiting > 1:
			t += fmt.Sprintf("%d hook payloads serve took wait in its journal, not shown; ", s.HooksWaiting)
		}
		switch {
		case s.HooksSpooled > 0 && s.HooksWaiting > 0:
			t += fmt.Sprintf("%d more %s in the spool, not yet taken; ", s.HooksSpooled, plural(s.HooksSpooled, "waits", "wait"))
		case s.HooksSpooled == 1:
			t += "1 hook payload waits in the spool, not yet taken by serve; "
		case s.HooksSpooled > 1:
			t += fmt.Sprintf("%d hook payloads wait in the spool, not yet taken by serve; ", s.HooksSpooled)
		}
		t += fmt.Sprintf("showing the projection as of sequence %d", s.AsOfSeq)
	default:
		return ""
	}
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
	if s.PausedSince != nil && staleAllowed(ctx) {
		if since := s.PausedSince(); !since.IsZero() {
			return s.pausedRead(ctx, since)
		}
	}
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

// WaitIntakeToRead is WaitIntake for a request that only reads (the
// status a read asks for before it reads, host.LogDown): when ctx allows
// a stale answer (AllowStale) and serve's appends wait for disk space
// (PausedSince), it returns at once, with since when they wait, rather
// than wait for the hook payloads the intake took: those stay in serve's
// journal until the disk is freed, and the read's own answer says it
// does not show them (pausedRead). Otherwise it is WaitIntake and
// returns the zero time.
func (s *Service) WaitIntakeToRead(ctx context.Context) (time.Time, error) {
	if s.PausedSince != nil && staleAllowed(ctx) {
		if since := s.PausedSince(); !since.IsZero() {
			return since, nil
		}
	}
	return time.Time{}, s.WaitIntake(ctx)
}

// staleNow is the Stale of a read that does not catch up (a later page
// of a list whose first page did), as things stand: the log not
// answering (LogState), or appends paused with hook payloads waiting in
// the intake; the zero Stale otherwise.
func (s *Service) staleNow() Stale {
	if s.LogState != nil {
		if since, why := s.LogState(); !since.IsZero() {
			return Stale{LogUnavailableSince: &since, LogError: why, AsOfSeq: s.Store.Checkpoint()}
		}
	}
	if s.PausedSince != nil {
		if since := s.PausedSince(); !since.IsZero() {
			if st := s.pausedStale(since); st.HooksWaiting > 0 || st.HooksSpooled > 0 {
				return st
			}
		}
	}
	return Stale{}
}

// pausedStale is the Stale of a read while appends have been paused
// since since: how many hook payloads wait in the intake, the pause's
// reason and the projection's checkpoint.
func (s *Service) pausedStale(since time.Time) Stale {
	st := Stale{AppendsPausedSince: &since, AsOfSeq: s.Store.Checkpoint()}
	if in := s.intake.Load(); in != nil {
		st.HooksWaiting = in.Pending()
	}
	if s.Spooled != nil {
		st.HooksSpooled = s.Spooled()
	}
	if s.Paused != nil {
		// "disk full since … (dir: why)": the line says appends are
		// paused already.
		st.LogError = strings.TrimPrefix(s.Paused(), "appends paused: ")
	}
	return st
}

// pausedCatchUp bounds how long a read that may be stale waits, while
// appends are paused, for the projection to catch up with the log: a
// projection whose own disk is full does not move until it is freed.
const pausedCatchUp = 2 * time.Second

// pausedRead is readCaughtUp while serve's appends have waited for disk
// space since since: the hook payloads its intake took wait in its
// journal until the disk is freed, so the read does not wait for them
// (CaughtUp would, and fail after IntakeWait). It waits for the
// projection to apply the log as it is, for pausedCatchUp at most, and
// answers marked stale when payloads wait or the projection did not
// catch up in time; caught up with nothing waiting, it is not stale.
func (s *Service) pausedRead(ctx context.Context, since time.Time) (Stale, error) {
	deadline := time.Now().Add(pausedCatchUp)
	st, err := projections.WaitUnless(ctx, staleEvery, func(ctx context.Context) error { return s.Store.CatchUp(ctx, s.Log) },
		func() (Stale, bool) { return s.pausedStale(since), time.Now().After(deadline) })
	if err != nil || st.IsStale() {
		return st, err
	}
	if st := s.pausedStale(since); st.HooksWaiting > 0 {
		return st, nil
	}
	return Stale{}, nil
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
