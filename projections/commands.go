package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/events"
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
)

// CommandView is the "commands" view, schema version 2: one row per
// command aggregate holding the JSON of its reducers/command.State, kept
// by loading the row, folding the record with command.Evolve and storing
// it, plus the session index. Events of other aggregate kinds are ignored;
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
func (CommandView) Version() int { return 2 } // 2: the process fields of command.running, lingering

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
	before := st.Session
	st = command.Evolve(st, r.Envelope)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode command row %s: %w", r.Agg.ID, err)
	}
	if err := tx.Set(CommandPrefix+r.Agg.ID, b); err != nil {
		return err
	}
	if st.Session != "" && st.Session != before {
		return tx.Set(CommandSessionPrefix+st.Session+"/"+r.Agg.ID, nil)
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
	sn, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("commands of session %q: %w", session, err)
	}
	defer sn.Close()
	var out []command.State
	keep := func(key string, v []byte) error {
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
			return fmt.Errorf("decode %s: %w", key, err)
		}
		if st.Exists() && (!activeOnly || st.Active()) {
			out = append(out, st)
		}
		return nil
	}
	if session == "" {
		err = sn.scan(CommandPrefix, keep)
	} else {
		prefix := CommandSessionPrefix + session + "/"
		var ids []string
		err = sn.scan(prefix, func(key string, _ []byte) error {
			ids = append(ids, strings.TrimPrefix(key, prefix))
			return nil
		})
		for _, id := range ids {
			if err != nil {
				break
			}
			v, ok, gerr := sn.Get(CommandPrefix + id)
			switch {
			case gerr != nil:
				err = gerr
			case !ok:
				err = fmt.Errorf("index key %s%s has no row", prefix, id)
			default:
				err = keep(CommandPrefix+id, v)
			}
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
// no top-level status, which the caller then decodes whole.
func rowStatus(v []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(v))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return "", false
		}
		if k == "status" {
			var status string
			if err := d.Decode(&status); err != nil {
				return "", false
			}
			return status, true
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
