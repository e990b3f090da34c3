package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Keys of the session view.
const (
	// SessionPrefix prefixes session rows: sessions/<id> = JSON of
	// session.State after folding the session's events.
	SessionPrefix = "sessions/"
	// PhasePrefix prefixes the phase index: sessions-by-phase/<phase>/<id>,
	// empty value, for every session whose phase is set.
	PhasePrefix = "sessions-by-phase/"
	// ParentPrefix prefixes the parent index:
	// sessions-by-parent/<parent>/<child>, empty value, for every session
	// with a parent.
	ParentPrefix = "sessions-by-parent/"
	// SummaryPrefix prefixes the list rows: sessions-summary/<id> = JSON
	// of session.Summarize of the session's row, for every started
	// session: what lists of thousands of sessions read instead of the
	// whole rows.
	SummaryPrefix = "sessions-summary/"
	// ActivityPrefix prefixes the activity index:
	// sessions-by-activity/<ActivityKey of its last activity>/<id>, empty
	// value, for every started session: the most recently active first,
	// ties by id.
	ActivityPrefix = "sessions-by-activity/"
)

// ActivityKey returns the activity index's key part for a session last
// active at t: 19 decimal digits of math.MaxInt64 minus t in Unix
// nanoseconds, so that keys sort the most recent first. Times before 1970
// (the zero time among them) sort last, as 1970 does.
func ActivityKey(t time.Time) string {
	n := int64(0)
	if t.After(time.Unix(0, 0)) {
		n = t.UnixNano()
	}
	return fmt.Sprintf("%019d", int64(math.MaxInt64)-n)
}

// activityKey is the activity index key part of a session in state s,
// "" for a session not started.
func activityKey(s session.State) string {
	if !s.Exists() {
		return ""
	}
	return ActivityKey(session.Summarize(s).LastActivity())
}

// SessionView is the "sessions" view (schema: Version): one row per
// session aggregate holding the JSON of its reducers/session.State, kept
// by loading the row, folding the record with session.Evolve and storing
// it, plus the phase and parent indexes and the summary rows in step with
// the rows. Events of other aggregate kinds are ignored; session events
// the reducer does not know only advance the row's ver and updated_at.
//
// Rows hold the times of facts only (started_at, updated_at, each open
// entry's opened_at, all from envelopes); ages are computed at query time
// by the reader, e.g. now.Sub(entry.OpenedAt), so no projection time
// reaches a row.
//
// It implements Flusher: it keeps each touched session's State decoded in
// Tx.Memo and writes the rows a batch changed once at its end. This
// relies on session.State's JSON round trip being exact, which the batch
// size tests check.
type SessionView struct{}

var _ Flusher = SessionView{}

// Name implements View: "sessions".
func (SessionView) Name() string { return "sessions" }

// Version implements View. Bump it when session.State's JSON or the
// view's keys change.
func (SessionView) Version() int { return 16 } // 16: the held transcript line in the summary; 15: observed_at never past the receipt of the observation it was taken from (a projection folded before may hold one months ahead, and keeps it: it only moves forward); 14: the agent types of the subagents a session started; 5: gate reviews, refusals; 6: summary rows; 7: usage and plan limits; 8: activity index; 9: breaker run restarted by a prompt, window by a reset; 10: observed_at on the server's clock, receipts and the agent clock offset; 11: usage per minute, tier and band, context, agent totals; 12: line uuids, the turn's prompt sum and calls; 13: depth, last said, backgrounded tasks, card fields in the summary

// sessionRow is one session being folded.
type sessionRow struct {
	state                   session.State
	phase, parent, activity string // as the stored row (and its index keys) have them
	dirty                   bool   // state changed in this batch: Flush writes it
}

// Apply implements View.
func (SessionView) Apply(tx *Tx, r events.Record) error {
	if r.Agg.Kind != events.KindSession {
		return nil
	}
	memo := tx.Memo()
	row, ok := memo[r.Agg.ID].(*sessionRow)
	if !ok {
		row = &sessionRow{}
		v, found, err := tx.Get(SessionPrefix + r.Agg.ID)
		if err != nil {
			return err
		}
		if found {
			if err := json.Unmarshal(v, &row.state); err != nil {
				return fmt.Errorf("decode session row %s: %w", r.Agg.ID, err)
			}
			row.phase, row.parent, row.activity = row.state.Phase, row.state.Parent, activityKey(row.state)
		}
		memo[r.Agg.ID] = row
	}
	row.state.Evolve(r.Envelope)
	row.dirty = true
	return nil
}

// Flush implements Flusher: it writes the session rows the batch changed
// in id order and moves their index keys.
func (SessionView) Flush(tx *Tx) error {
	memo := tx.Memo()
	var dirty []string
	for id, row := range memo {
		if row.(*sessionRow).dirty {
			dirty = append(dirty, id)
		}
	}
	slices.Sort(dirty)
	for _, id := range dirty {
		row := memo[id].(*sessionRow)
		row.dirty = false
		b, err := json.Marshal(row.state)
		if err != nil {
			return fmt.Errorf("encode session row %s: %w", id, err)
		}
		if err := tx.Set(SessionPrefix+id, b); err != nil {
			return err
		}
		if row.state.Exists() {
			sum, err := json.Marshal(session.Summarize(row.state))
			if err != nil {
				return fmt.Errorf("encode session summary %s: %w", id, err)
			}
			if err := tx.Set(SummaryPrefix+id, sum); err != nil {
				return err
			}
		}
		if err := moveIndex(tx, PhasePrefix, row.phase, row.state.Phase, id); err != nil {
			return err
		}
		if err := moveIndex(tx, ParentPrefix, row.parent, row.state.Parent, id); err != nil {
			return err
		}
		activity := activityKey(row.state)
		if err := moveIndex(tx, ActivityPrefix, row.activity, activity, id); err != nil {
			return err
		}
		row.phase, row.parent, row.activity = row.state.Phase, row.state.Parent, activity
	}
	return nil
}

// moveIndex replaces index key prefix<from>/<id> with prefix<to>/<id>;
// an empty from or to means no key.
func moveIndex(tx *Tx, prefix, from, to, id string) error {
	if from == to {
		return nil
	}
	if from != "" {
		if err := tx.Delete(prefix + from + "/" + id); err != nil {
			return err
		}
	}
	if to != "" {
		return tx.Set(prefix+to+"/"+id, nil)
	}
	return nil
}

// Session returns the committed row of session id. The error wraps
// events.ErrNotFound if the store has no row for id, ErrClosed if the
// store is closed.
func (s *Store) Session(id string) (session.State, error) {
	return rowOf[session.State](s, "session", SessionPrefix, id)
}

// SessionHead returns the committed row of session id without what
// grows with the session's life: the ids it remembers to settle
// duplicates (RecentKeys, RecentClosed, Calls, LineIDs, Unfinished,
// Inferred) and its Usage are left zero, never decoded. It is what a
// reader of the session's phase, mode and owner asks (an exec's
// checks): a long session's row is tens of KB, nearly all of it those
// fields. Errors are Session's.
func (s *Store) SessionHead(id string) (session.State, error) {
	h, err := rowOf[sessionHead](s, "session", SessionPrefix, id)
	return h.State, err
}

// sessionHead decodes a session row into State, its fields named here
// passed over: each shadows State's field of the same JSON name, and
// skipJSON keeps nothing of its value.
type sessionHead struct {
	session.State
	RecentKeys   skipJSON `json:"recent_keys"`
	RecentClosed skipJSON `json:"recent_closed"`
	Calls        skipJSON `json:"calls"`
	LineIDs      skipJSON `json:"line_ids"`
	Unfinished   skipJSON `json:"unfinished"`
	Inferred     skipJSON `json:"inferred"`
	Usage        skipJSON `json:"usage"`
}

// skipJSON is a field whose JSON value is read past and kept nowhere.
type skipJSON struct{}

// UnmarshalJSON keeps nothing of b.
func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// Sessions returns the started sessions in phase (an events.Phase
// constant), or every started session when phase is "", ordered by id,
// from one snapshot.
func (s *Store) Sessions(phase string) ([]session.State, error) {
	if phase == "" {
		var out []session.State
		err := s.scanRows(SessionPrefix, func(_ string, st session.State) {
			if st.Exists() {
				out = append(out, st)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		return out, nil
	}
	out, err := s.indexed(PhasePrefix + phase + "/")
	if err != nil {
		return nil, fmt.Errorf("sessions in phase %s: %w", phase, err)
	}
	return out, nil
}

// SessionRows calls fn with the id and the stored row (the JSON of its
// session.State, the caller's to keep) of each started session in phase
// (an events.Phase constant; "" for every phase) whose id sorts after
// after ("": from the first), in id order, from one snapshot, until fn
// returns false or an error, which SessionRows returns. With a phase it
// walks the phase index, so its cost follows the rows fn takes, not the
// number of sessions.
func (s *Store) SessionRows(phase, after string, fn func(id string, row []byte) (bool, error)) error {
	return s.sessionRows(SessionPrefix, phase, after, fn)
}

// SessionSummaries is SessionRows over the summary rows: fn gets the JSON
// of each session's session.Summary instead of its whole State.
func (s *Store) SessionSummaries(phase, after string, fn func(id string, row []byte) (bool, error)) error {
	return s.sessionRows(SummaryPrefix, phase, after, fn)
}

// SessionSummariesByActivity calls fn with the id, the activity index
// cursor ("<ActivityKey>/<id>") and the summary row (the JSON of its
// session.Summary, the caller's to keep) of each started session in
// phase ("" for every phase), the most recently active first, starting
// after the cursor after ("": from the most recent), from one snapshot,
// until fn returns false or an error, which it returns. Its cost follows
// the rows walked, not the number of sessions.
func (s *Store) SessionSummariesByActivity(phase, after string, fn func(id, cursor string, row []byte) (bool, error)) error {
	sn, err := s.Snapshot()
	if err != nil {
		return fmt.Errorf("sessions by activity: %w", err)
	}
	defer sn.Close()
	err = sn.scanAfter(ActivityPrefix, after, func(key string, _ []byte) (bool, error) {
		cursor := strings.TrimPrefix(key, ActivityPrefix)
		_, id, ok := strings.Cut(cursor, "/")
		if !ok {
			return false, fmt.Errorf("index key %s has no id", key)
		}
		v, ok, err := sn.Get(SummaryPrefix + id)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, fmt.Errorf("index key %s has no row", key)
		}
		if phase != "" {
			p, err := rowPhase(v)
			if err != nil {
				return false, fmt.Errorf("decode %s: %w", SummaryPrefix+id, err)
			}
			if p != phase {
				return true, nil
			}
		}
		return fn(id, cursor, v)
	})
	if err != nil {
		return fmt.Errorf("sessions by activity: %w", err)
	}
	return nil
}

// sessionRows walks the rows under rowPrefix (SessionPrefix or
// SummaryPrefix) as SessionRows describes.
func (s *Store) sessionRows(rowPrefix, phase, after string, fn func(id string, row []byte) (bool, error)) error {
	sn, err := s.Snapshot()
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	defer sn.Close()
	if phase == "" {
		err = sn.scanAfter(rowPrefix, after, func(key string, v []byte) (bool, error) {
			if rowPrefix == SessionPrefix {
				phase, err := rowPhase(v)
				if err != nil {
					return false, fmt.Errorf("decode %s: %w", key, err)
				}
				if phase == "" {
					return true, nil // not started
				}
			}
			return fn(strings.TrimPrefix(key, rowPrefix), v)
		})
		if err != nil {
			return fmt.Errorf("sessions: %w", err)
		}
		return nil
	}
	prefix := PhasePrefix + phase + "/"
	err = sn.scanAfter(prefix, after, func(key string, _ []byte) (bool, error) {
		id := strings.TrimPrefix(key, prefix)
		v, ok, err := sn.Get(rowPrefix + id)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, fmt.Errorf("index key %s has no row", key)
		}
		return fn(id, v)
	})
	if err != nil {
		return fmt.Errorf("sessions in phase %s: %w", phase, err)
	}
	return nil
}

// rowPhase returns the phase of a stored session row. Rows are the JSON
// of session.State, whose third field is the phase: a JSON string of
// plain letters, first found as the top-level key it is (a quote after a
// comma outside a string is never inside one), so the row need not be
// decoded. A row not shaped so is decoded.
func rowPhase(row []byte) (string, error) {
	const key = `,"phase":"`
	if i := bytes.Index(row, []byte(key)); i > 0 {
		rest := row[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return string(rest[:j]), nil
		}
	}
	var head struct {
		Phase string `json:"phase"`
	}
	err := json.Unmarshal(row, &head)
	return head.Phase, err
}

// Children returns the sessions whose parent is session id (subagents),
// ordered by id, from one snapshot; none is not an error.
func (s *Store) Children(id string) ([]session.State, error) {
	out, err := s.indexed(ParentPrefix + id + "/")
	if err != nil {
		return nil, fmt.Errorf("children of session %s: %w", id, err)
	}
	return out, nil
}

// scanRows decodes every session row under prefix.
func (s *Store) scanRows(prefix string, fn func(id string, st session.State)) error {
	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Close()
	return sn.scan(prefix, func(key string, v []byte) error {
		var st session.State
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		fn(strings.TrimPrefix(key, prefix), st)
		return nil
	})
}

// indexed returns the session rows named by the index keys under prefix
// (<prefix><id>), from one snapshot.
func (s *Store) indexed(prefix string) ([]session.State, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	defer sn.Close()
	var ids []string
	err = sn.scan(prefix, func(key string, _ []byte) error {
		ids = append(ids, strings.TrimPrefix(key, prefix))
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]session.State, 0, len(ids))
	for _, id := range ids {
		v, ok, err := sn.Get(SessionPrefix + id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("index key %s%s has no row", prefix, id)
		}
		var st session.State
		if err := json.Unmarshal(v, &st); err != nil {
			return nil, fmt.Errorf("decode %s%s: %w", SessionPrefix, id, err)
		}
		out = append(out, st)
	}
	return out, nil
}
