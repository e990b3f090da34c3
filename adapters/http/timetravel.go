package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// sessionAt answers GET /v1/sessions/{id}/at?seq=N: the session's state
// as of stream sequence N, folded afresh from the log the way `logbook
// replay --seq N --session ID --json` folds it (replay.StateAt over the
// session's records with Seq ≤ N), in the same JSON (replay.State).
// A missing, non-numeric or zero seq, or one past the log's end, is 400;
// a session with no event up to N is 404.
func (s *Server) sessionAt(w http.ResponseWriter, r *http.Request) {
	id, err := s.resolveSession(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := r.URL.Query().Get("seq")
	if v == "" {
		s.fail(w, r, fmt.Errorf("%w: seq is required: the stream sequence (≥ 1) to fold up to", errBadRequest))
		return
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil || seq == 0 {
		s.fail(w, r, fmt.Errorf("%w: seq %q: want a stream sequence, an integer ≥ 1", errBadRequest, v))
		return
	}
	if err := replay.CheckSeq(r.Context(), s.log, seq); err != nil {
		if se, ok := errors.AsType[*replay.SeqError](err); ok {
			err = fmt.Errorf("%w: %s", errBadRequest, strings.TrimPrefix(se.Error(), "--"))
		}
		s.fail(w, r, err)
		return
	}
	p := replay.Point{Seq: seq, Agg: events.Aggregate{Kind: events.KindSession, ID: id}}
	st, err := replay.StateAt(r.Context(), s.log, p, id)
	if errors.Is(err, events.ErrNotFound) {
		err = fmt.Errorf("session %s at seq %d: %w: it has no event up to that sequence", id, seq, events.ErrNotFound)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// rederive answers GET /v1/sessions/{id}/rederive: today's session
// reducer run over the session's stored observations, and the first one
// whose decisions differ from the recorded ones with both lists
// (replay.Rederive), with the session's events the server's reads left
// out as unattested (replay.RederiveReport, as `logbook replay
// --rederive --session ID --json` prints it). A divergence is an answer
// (200), not an error.
func (s *Server) rederive(w http.ResponseWriter, r *http.Request) {
	id, err := s.resolveSession(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := replay.Rederive(r.Context(), s.log, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	subject := events.Aggregate{Kind: events.KindSession, ID: id}.Subject()
	writeJSON(w, http.StatusOK, replay.NewRederiveReport(rep, unattestedOf(s.log, subject)))
}

// unattestedOf returns the events of subject l's reads left out as
// unattested, in stream order, as far as l remembers them; none when l
// does not judge (no natslog.Log).
func unattestedOf(l events.Log, subject string) []replay.Unattested {
	q, ok := l.(interface {
		Quarantined() ([]natslog.Quarantined, uint64)
	})
	if !ok {
		return nil
	}
	qs, _ := q.Quarantined()
	var out []replay.Unattested
	for _, q := range qs {
		if q.Subject == subject {
			out = append(out, replay.Unattested{Seq: q.Seq, Subject: q.Subject, Type: q.Type, ID: q.ID, At: q.At, Status: string(q.Verdict.Status),
				Key: q.Verdict.Key, Principal: q.Verdict.Principal, Role: string(q.Verdict.Role), Why: q.Verdict.Why})
		}
	}
	return out
}
