package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/logbook-dev/logbook/projections"
)

// Response headers of a read answered from the projection as it stood
// while the log did not answer (Config.LogState): since when (RFC 3339)
// and the last stream sequence the projection had applied. Answers that
// are JSON objects with a checkpoint (the session list, a session) also
// carry them as fields, log_unavailable_since and as_of_seq.
const (
	HeaderLogUnavailableSince = "Logbook-Log-Unavailable-Since"
	HeaderAsOfSeq             = "Logbook-As-Of-Seq"
)

// staleMark is what a stale read adds to an answer: since when the log
// has not answered and the projection's checkpoint then. Both absent
// (the zero value) for a read that caught up with the log.
type staleMark struct {
	LogUnavailableSince *time.Time `json:"log_unavailable_since,omitempty"`
	AsOfSeq             uint64     `json:"as_of_seq,omitempty"`
}

// staleEvery is how often readCaughtUp looks at the log's state while it
// waits for the projection.
const staleEvery = 100 * time.Millisecond

// readCaughtUp is Store.CatchUp for a GET, which only reads: while
// Config.LogState says the log does not answer (now, or from some time
// during the wait) it returns at once, with the headers of a stale
// answer set on w and the mark to put in the answer's body. Any other
// request, or a server without LogState, waits as Store.CatchUp does.
func (s *Server) readCaughtUp(w http.ResponseWriter, r *http.Request) (staleMark, error) {
	if s.cfg.LogState == nil || r.Method != http.MethodGet {
		return staleMark{}, s.store.CatchUp(r.Context(), s.log)
	}
	stale := func() (staleMark, bool) {
		since, _ := s.cfg.LogState()
		if since.IsZero() {
			return staleMark{}, false
		}
		m := staleMark{LogUnavailableSince: &since, AsOfSeq: s.store.Checkpoint()}
		w.Header().Set(HeaderLogUnavailableSince, since.UTC().Format(time.RFC3339))
		w.Header().Set(HeaderAsOfSeq, strconv.FormatUint(m.AsOfSeq, 10))
		return m, true
	}
	return projections.WaitUnless(r.Context(), staleEvery, func(ctx context.Context) error { return s.store.CatchUp(ctx, s.log) }, stale)
}
