// Package lincheck checks that histories of appends and loads recorded
// against an events.Log are linearizable, with porcupine
// (github.com/anishathalye/porcupine). Each aggregate is modelled as a
// register with optimistic concurrency: an append with an expected
// sequence either succeeds (the aggregate's last stream sequence was the
// expected one; the batch's events follow, ending at the sequence the
// append returned) or conflicts (it was not); a load returns the
// aggregate's event ids in order and its last sequence.
//
// A Recorder drives real client operations (events.Log.Append with
// events.Batch.Expect, events.Log.Load), so what is checked is the
// caller's use of the store, not the store's raw protocol. An append
// whose outcome is unknown (natslog.ErrUnknownOutcome, a timeout, a
// broken connection) is settled by the final state of the log, read once
// every writer has stopped: its event ids are there (it took effect at
// some moment after it was called) or they are not (it took effect
// never). This holds because the log is append-only and event ids are
// never reused.
package lincheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/logbook-dev/logbook/events"
)

// Status is how one operation ended.
type Status int

// Operation outcomes.
const (
	// OK: the append was acknowledged, or the load answered.
	OK Status = iota
	// Conflict: the append was refused because the aggregate's last
	// sequence was not the expected one (events.ErrConflict).
	Conflict
	// Unknown: the append may or may not have been stored.
	Unknown
	// Failed: the operation failed before anything was sent (an append)
	// or without an answer (a load); it constrains nothing.
	Failed
)

func (s Status) String() string {
	return [...]string{"ok", "conflict", "unknown", "failed"}[s]
}

// Input is what one operation asked.
type Input struct {
	Agg    string   // the aggregate, as events.Aggregate.String
	Load   bool     // a load; else an append
	Expect uint64   // an append's expected last sequence of Agg
	IDs    []string // an append's event ids, in order
}

// Output is what one operation got.
type Output struct {
	Status Status
	Last   uint64   // an acknowledged append's last sequence; a load's last sequence
	IDs    []string // a load's event ids, in order
	Err    string   // the error, for Conflict, Unknown and Failed
}

// state is one aggregate's register: its event ids (space-separated, in
// order) and its last stream sequence. It is comparable, as porcupine's
// default equality wants.
type state struct {
	ids  string
	last uint64
}

// Model returns the porcupine model: one register per aggregate
// (partitioned by Input.Agg), initially empty at sequence 0.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				a := op.Input.(Input).Agg
				if _, ok := by[a]; !ok {
					keys = append(keys, a)
				}
				by[a] = append(by[a], op)
			}
			var out [][]porcupine.Operation
			for _, k := range keys {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() any { return state{} },
		Step: func(s, in, out any) (bool, any) {
			st, i, o := s.(state), in.(Input), out.(Output)
			if i.Load {
				return o.Last == st.last && strings.Join(o.IDs, " ") == st.ids, st
			}
			switch o.Status {
			case Conflict:
				return st.last != i.Expect, st
			case OK:
				if st.last != i.Expect || o.Last <= st.last {
					return false, st
				}
				ids := strings.Join(i.IDs, " ")
				if st.ids != "" {
					ids = st.ids + " " + ids
				}
				return true, state{ids: ids, last: o.Last}
			}
			return false, st
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(Input), out.(Output)
			if i.Load {
				return fmt.Sprintf("load %s → %d events, last %d", i.Agg, len(o.IDs), o.Last)
			}
			s := fmt.Sprintf("append %s %d events expect %d → %s", i.Agg, len(i.IDs), i.Expect, o.Status)
			if o.Status == OK {
				s += fmt.Sprintf(" last %d", o.Last)
			}
			return s
		},
		DescribeState: func(s any) string {
			st := s.(state)
			return fmt.Sprintf("%d events, last %d", len(strings.Fields(st.ids)), st.last)
		},
	}
}

// Recorder records the operations of concurrent clients into one
// history. Its methods are safe for concurrent use. Times are
// nanoseconds since New on the monotonic clock.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{start: time.Now()} }

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *Recorder) add(client int, in Input, out Output, call, ret int64) {
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	r.mu.Unlock()
}

// Append runs l.Append(ctx, b) as client (a zero-based index) and records
// it: OK, Conflict (an error wrapping events.ErrConflict), Failed (an
// error saying nothing was sent: ctx ended before sending, the log
// closed, a malformed batch) or Unknown (any other error). It returns
// Append's results unchanged.
func (r *Recorder) Append(ctx context.Context, client int, l events.Log, b events.Batch) (events.Appended, error) {
	in := Input{Agg: b.Agg.String(), Expect: b.Expect}
	for _, e := range b.Events {
		in.IDs = append(in.IDs, e.ID.String())
	}
	call := r.now()
	app, err := l.Append(ctx, b)
	ret := r.now()
	out := Output{Status: OK, Last: app.Last}
	switch {
	case err == nil && app.Last == 0:
		// A repeat the server recognised but could not place: the
		// batch's outcome is read from the final state.
		out = Output{Status: Unknown, Err: "duplicate without a sequence"}
	case err == nil:
	case errors.Is(err, events.ErrConflict):
		out = Output{Status: Conflict, Err: err.Error()}
	case notSent(err):
		out = Output{Status: Failed, Err: err.Error()}
	default:
		out = Output{Status: Unknown, Err: err.Error()}
	}
	r.add(client, in, out, call, ret)
	return app, err
}

// notSent tells an append error that means nothing was sent. natslog
// says "not sent" for a ctx that ended before sending; a validation
// error wraps an events sentinel.
func notSent(err error) bool {
	return strings.Contains(err.Error(), "not sent:") ||
		errors.Is(err, events.ErrMalformed) || errors.Is(err, events.ErrUnknownType) ||
		errors.Is(err, events.ErrUnknownVersion) || errors.Is(err, events.ErrMissingCause)
}

// Load runs l.Load(ctx, agg) as client and records it (OK, or Failed on
// an error). It returns Load's results unchanged.
func (r *Recorder) Load(ctx context.Context, client int, l events.Log, agg events.Aggregate) ([]events.Record, uint64, error) {
	call := r.now()
	recs, last, err := l.Load(ctx, agg)
	ret := r.now()
	out := Output{Status: OK, Last: last}
	if err != nil {
		out = Output{Status: Failed, Err: err.Error()}
	}
	for _, rec := range recs {
		out.IDs = append(out.IDs, rec.ID.String())
	}
	r.add(client, Input{Agg: agg.String(), Load: true}, out, call, ret)
	return recs, last, err
}

// Len returns the number of operations recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Final is the log's state after every client stopped: for each
// aggregate (events.Aggregate.String) the stream sequence of each of its
// event ids.
type Final map[string]map[string]uint64

// LoadFinal loads aggs from l into a Final.
func LoadFinal(ctx context.Context, l events.Log, aggs []events.Aggregate) (Final, error) {
	f := Final{}
	for _, a := range aggs {
		recs, _, err := l.Load(ctx, a)
		if err != nil {
			return nil, fmt.Errorf("lincheck: final load of %s: %w", a, err)
		}
		m := map[string]uint64{}
		for _, rec := range recs {
			m[rec.ID.String()] = rec.Seq
		}
		f[a.String()] = m
	}
	return f, nil
}

// Settle returns the history to check: failed operations dropped, and
// each Unknown append settled by final: if its last event id is stored,
// it becomes OK with that sequence and a return at the end of the
// history (it took effect at some moment after its call); if none of its
// ids is stored, it is dropped (it never took effect). An append stored
// in part is an error: batches are atomic.
func (r *Recorder) Settle(final Final) ([]porcupine.Operation, error) {
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	end := int64(0)
	for _, op := range ops {
		end = max(end, op.Return)
	}
	var out []porcupine.Operation
	for _, op := range ops {
		in, o := op.Input.(Input), op.Output.(Output)
		switch {
		case o.Status == Failed:
			continue
		case o.Status == Unknown:
			m := final[in.Agg]
			n := 0
			for _, id := range in.IDs {
				if _, ok := m[id]; ok {
					n++
				}
			}
			if n == 0 {
				continue
			}
			if n != len(in.IDs) {
				return nil, fmt.Errorf("lincheck: append to %s stored %d of its %d events", in.Agg, n, len(in.IDs))
			}
			op.Output = Output{Status: OK, Last: m[in.IDs[len(in.IDs)-1]], Err: o.Err}
			op.Return = end + 1
		}
		out = append(out, op)
	}
	return out, nil
}

// Result is the verdict on one history.
type Result struct {
	Ops     int    // operations checked (after Settle)
	Unknown int    // of them, appends whose outcome was settled by the final state
	Verdict string // porcupine's: "Ok", "Illegal" or "Unknown" (timed out)
	Viz     string // the visualization file written for an Illegal or Unknown verdict, else ""
}

// Check checks history (from Settle) against Model within timeout. When
// the verdict is not Ok it writes porcupine's visualization into dir
// (created if absent; os.TempDir() if dir is "") as
// lincheck-<name>-*.html and names it in Result.Viz.
func Check(history []porcupine.Operation, name, dir string, timeout time.Duration) (Result, error) {
	m := Model()
	res, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	r := Result{Ops: len(history), Verdict: verdict(res)}
	for _, op := range history {
		if op.Output.(Output).Err != "" && op.Output.(Output).Status == OK {
			r.Unknown++
		}
	}
	if res == porcupine.Ok {
		return r, nil
	}
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, fmt.Errorf("lincheck: visualization dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "lincheck-"+strings.NewReplacer("/", "-", " ", "-").Replace(name)+"-*.html")
	if err != nil {
		return r, fmt.Errorf("lincheck: visualization: %w", err)
	}
	defer f.Close()
	if err := porcupine.Visualize(m, info, f); err != nil {
		return r, fmt.Errorf("lincheck: visualization %s: %w", f.Name(), err)
	}
	r.Viz, _ = filepath.Abs(f.Name())
	return r, nil
}

func verdict(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "Ok"
	case porcupine.Illegal:
		return "Illegal"
	}
	return "Unknown"
}
