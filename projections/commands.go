package projections

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/events/jsonlex"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Keys of the command view.
const (
	// CommandPrefix prefixes command rows: commands/<id> = JSON of
	// command.State after folding the command's events.
	CommandPrefix = "commands/"
	// CommandSessionPrefix prefixes the session index:
	// commands-by-session/<session>/<id>, empty value, for every
	// requested command. A command's session never changes, so its index
	// key is written once, with the request.
	CommandSessionPrefix = "commands-by-session/"
	// CommandActivePrefix prefixes the index of active commands:
	// commands-active/<session>/<id> = <id> (<session> empty for a row
	// no request has named a session for yet), for every command whose
	// row is active (command.State.Active: requested or started, not
	// evicted), removed when it is no longer. A session's active
	// commands are read from it (Commands with activeOnly) at the cost
	// of those commands, not of every command the session ever ran.
	CommandActivePrefix = "commands-active/"
)

// CommandView is the "commands" view, schema version 3: one row per
// command aggregate holding the JSON of its reducers/command.State, kept
// by loading the row, folding the record with command.Evolve and storing
// it, plus the session index and the index of active commands. Events of other aggregate kinds are ignored;
// command events the reducer does not know only advance the row's ver.
//
// Rows hold facts only (times from envelopes, the worker's reports), so
// the view is deterministic and its rows take part in the state hash like
// the session view's. It writes through on every Apply: commands have few
// events, and their bulk output is not an event.
type CommandView struct{}

var _ View = CommandView{}

// Name implements View: "commands".
func (CommandView) Name() string { return "commands" }

// Version implements View. Bump it when command.State's JSON or the
// view's keys change.
//
// 2: the process fields of command.running, lingering; 3: the index of
// active commands (CommandActivePrefix).
func (CommandView) Version() int { return 3 }

// Apply implements View.
func (CommandView) Apply(tx *Tx, r events.Record) error {
	if r.Agg.Kind != events.KindCommand {
		return nil
	}
	st := command.Init(r.Agg)
	v, found, err := tx.Get(CommandPrefix + r.Agg.ID)
	if err != nil {
		return err
	}
	if found {
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decode command row %s: %w", r.Agg.ID, err)
		}
	}
	// The key the row is indexed under as active, "" for none.
	before, was := st.Session, ""
	if found && st.Active() {
		was = CommandActivePrefix + st.Session + "/" + r.Agg.ID
	}
	st = command.Evolve(st, r.Envelope)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode command row %s: %w", r.Agg.ID, err)
	}
	if err := tx.Set(CommandPrefix+r.Agg.ID, b); err != nil {
		return err
	}
	if st.Session != "" && st.Session != before {
		if err := tx.Set(CommandSessionPrefix+st.Session+"/"+r.Agg.ID, nil); err != nil {
			return err
		}
	}
	// The index follows the row as folded, whatever order its events
	// came in: a row active before a request names its session is
	// indexed under none (commands-active//<id>, among every session's
	// active commands), then under the one its request names; one a
	// later request moves to another session (the reducer takes it)
	// moves with it.
	now := ""
	if st.Active() {
		now = CommandActivePrefix + st.Session + "/" + r.Agg.ID
	}
	if now == was {
		return nil
	}
	if was != "" {
		if err := tx.Delete(was); err != nil {
			return err
		}
	}
	if now != "" {
		return tx.Set(now, []byte(r.Agg.ID))
	}
	return nil
}

// Command returns the committed row of command id. The error wraps
// events.ErrNotFound if the store has no row for id (never requested, or
// not projected yet), ErrClosed if the store is closed.
func (s *Store) Command(id string) (command.State, error) {
	return rowOf[command.State](s, "command", CommandPrefix, id)
}

// Commands returns the commands of session (every command when session
// is ""), only the active ones (command.State.Active) when activeOnly is
// set, oldest first: by request time, then by id, the order
// command.ActiveIDs uses. It reads one snapshot; none is not an error.
func (s *Store) Commands(session string, activeOnly bool) ([]command.State, error) {
	// A stale store (an older schema, answering with its rows until it
	// is rebuilt) may have no index of active commands: its rows say
	// which are. Asked first: a store once rebuilt is never stale again.
	stale := s.Stale()
	sn, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("commands of session %q: %w", session, err)
	}
	defer sn.Close()
	var out []command.State
	keep := func(v []byte) error {
		if activeOnly {
			// Most of a session's rows are of commands long ended:
			// their status, the row's fourth field, says so without
			// decoding the rest (argv, environment, output figures).
			if status, ok := rowStatus(v); ok && status != command.StatusRequested && status != command.StatusStarted {
				return nil
			}
		}
		var st command.State
		if err := json.Unmarshal(v, &st); err != nil {
			return err
		}
		if st.Exists() && (!activeOnly || st.Active()) {
			out = append(out, st)
		}
		return nil
	}
	switch {
	case activeOnly && !stale:
		// The active index names them: its value is the id.
		prefix := CommandActivePrefix
		if session != "" {
			prefix += session + "/"
		}
		var ids []string
		err = sn.scan(prefix, func(_ string, v []byte) error {
			ids = append(ids, string(v))
			return nil
		})
		if err == nil {
			slices.Sort(ids)
			err = sn.rows(CommandPrefix, ids, func(id string, v []byte) error {
				if err := keep(v); err != nil {
					return fmt.Errorf("decode %s%s: %w", CommandPrefix, id, err)
				}
				return nil
			})
		}
	case session == "":
		err = sn.scan(CommandPrefix, func(key string, v []byte) error {
			if err := keep(v); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
			}
			return nil
		})
	default:
		prefix := CommandSessionPrefix + session + "/"
		var ids []string
		err = sn.scan(prefix, func(key string, _ []byte) error {
			ids = append(ids, strings.TrimPrefix(key, prefix))
			return nil
		})
		if err == nil {
			err = sn.rows(CommandPrefix, ids, func(id string, v []byte) error {
				if err := keep(v); err != nil {
					return fmt.Errorf("decode %s%s: %w", CommandPrefix, id, err)
				}
				return nil
			})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("commands of session %q: %w", session, err)
	}
	slices.SortStableFunc(out, func(a, b command.State) int {
		if c := a.RequestedAt.Compare(b.RequestedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// rowStatus returns the status of command row v (a command.State's
// JSON) by reading its top-level fields only as far as "status", and
// whether it found it: false for a row that is not a JSON object or has
// no top-level status, which the caller then decodes whole. It reads the
// row in place with jsonlex, passing over the values before the status
// (argv, environment) without decoding them, and allocates nothing when
// the status is one of command's Status values.
func rowStatus(v []byte) (string, bool) {
	i := jsonlex.Space(v, 0)
	if i >= len(v) || v[i] != '{' {
		return "", false
	}
	for i = jsonlex.Space(v, i+1); i < len(v) && v[i] == '"'; {
		k := i
		next, esc, _, ok := jsonlex.String(v, i)
		if !ok {
			return "", false
		}
		key := v[k+1 : next-1]
		if i = jsonlex.Space(v, next); i >= len(v) || v[i] != ':' {
			return "", false
		}
		i = jsonlex.Space(v, i+1)
		if !esc && string(key) == "status" {
			if i >= len(v) || v[i] != '"' {
				return "", false
			}
			end, esc, high, ok := jsonlex.String(v, i)
			if !ok || esc || high {
				return "", false // a status is plain ASCII; anything else is decoded whole
			}
			return statusOf(v[i+1 : end-1]), true
		}
		if i, ok = skipValue(v, i, 0); !ok {
			return "", false
		}
		if i = jsonlex.Space(v, i); i < len(v) && v[i] == ',' {
			i = jsonlex.Space(v, i+1)
			continue
		}
		return "", false // the object's end, or text that is not JSON
	}
	return "", false
}

// statuses are the command.Status values rowStatus returns without
// allocating.
var statuses = []string{command.StatusRequested, command.StatusStarted, command.StatusExited, command.StatusAbandoned, command.StatusRefused, command.StatusEvicted}

// statusOf returns b as a string: one of statuses when it is one.
func statusOf(b []byte) string {
	for _, st := range statuses {
		if string(b) == st {
			return st
		}
	}
	return string(b)
}

// skipValue returns the index just past the JSON value at v[i] (white
// space before it already passed over), at nesting depth depth, and
// whether it is well formed; a value nested deeper than jsonlex.MaxDepth
// is not.
func skipValue(v []byte, i, depth int) (int, bool) {
	if i >= len(v) {
		return i, false
	}
	switch c := v[i]; {
	case c == '"':
		next, _, _, ok := jsonlex.String(v, i)
		return next, ok
	case c == '{' || c == '[':
		if depth >= jsonlex.MaxDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = jsonlex.Space(v, i+1)
		if i < len(v) && v[i] == end {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(v) || v[i] != '"' {
					return i, false
				}
				next, _, _, ok := jsonlex.String(v, i)
				if !ok {
					return i, false
				}
				if i = jsonlex.Space(v, next); i >= len(v) || v[i] != ':' {
					return i, false
				}
				i = jsonlex.Space(v, i+1)
			}
			var ok bool
			if i, ok = skipValue(v, i, depth+1); !ok {
				return i, false
			}
			if i = jsonlex.Space(v, i); i >= len(v) {
				return i, false
			}
			switch v[i] {
			case ',':
				i = jsonlex.Space(v, i+1)
			case end:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == 't':
		return jsonlex.Literal(v, i, "true")
	case c == 'f':
		return jsonlex.Literal(v, i, "false")
	case c == 'n':
		return jsonlex.Literal(v, i, "null")
	default:
		return jsonlex.Number(v, i)
	}
}
