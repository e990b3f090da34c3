package command_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// session is one session's commands as the command projection holds them,
// driven the way a caller of DecideRequest drives the log.
type session struct {
	t    *testing.T
	rows map[string]command.State
	n    int // requests so far; request i is at t0 + i s
}

func newSession(t *testing.T) *session {
	return &session{t: t, rows: map[string]command.State{}}
}

func cmdID(i int) string { return fmt.Sprintf("cmd-%03d", i) }

func (w *session) all() []command.State {
	var out []command.State
	for _, s := range w.rows {
		out = append(out, s)
	}
	return out
}

func (w *session) active() []string { return command.ActiveIDs(w.all()) }

func (w *session) state(id string) command.State {
	if s, ok := w.rows[id]; ok {
		return s
	}
	return command.Init(events.Aggregate{Kind: events.KindCommand, ID: id})
}

// apply stamps evs and folds them into id's row, validating each.
func (w *session) apply(id string, evs []events.Envelope) {
	w.t.Helper()
	reg := events.NewRegistry()
	s := w.state(id)
	for _, e := range evs {
		e.ID = ulidOf(w.n, int(s.Ver)+1)
		e.Ver = s.Ver + 1
		if err := reg.Validate(e); err != nil {
			w.t.Fatalf("%s: %v", id, err)
		}
		s = command.Evolve(s, e)
	}
	w.rows[id] = s
}

// admit decides the next request against the active list given (nil: the
// current one), without applying it.
func (w *session) admit(active []string) (string, command.Admission) {
	w.t.Helper()
	w.n++
	id := cmdID(w.n)
	if active == nil {
		active = w.active()
	}
	req := request
	req.At = t0.Add(time.Duration(w.n) * time.Second)
	a, err := command.DecideRequest(w.state(id), active, req)
	if err != nil {
		w.t.Fatalf("request %s: %v", id, err)
	}
	return id, a
}

// land appends an admission: the request, then each eviction decided on
// the evicted command's current state. A rejected eviction (that command
// ended or was evicted meanwhile) is skipped.
func (w *session) land(id string, a command.Admission) {
	w.t.Helper()
	w.apply(id, a.Events)
	for _, ev := range a.Evictions {
		evs, err := command.Decide(w.state(ev.Command), ev.Evict)
		if errors.Is(err, events.ErrRejected) {
			continue
		}
		if err != nil {
			w.t.Fatalf("evict %s: %v", ev.Command, err)
		}
		w.apply(ev.Command, evs)
	}
}

// request admits and lands the next request; even-numbered commands start.
func (w *session) request() command.Admission {
	id, a := w.admit(nil)
	w.land(id, a)
	if w.n%2 == 0 {
		evs, err := command.Decide(w.rows[id], command.Start{Worker: "w1", Host: "build-3", At: t1, Cause: cause})
		if err != nil {
			w.t.Fatalf("start %s: %v", id, err)
		}
		w.apply(id, evs)
	}
	return a
}

func ulidOf(n, ver int) (u ulid.ULID) {
	u[13], u[14], u[15] = byte(n>>8), byte(n), byte(ver)
	return u
}

func evictedIDs(a command.Admission) []string {
	var out []string
	for _, ev := range a.Evictions {
		out = append(out, ev.Command)
	}
	return out
}

func TestDecideRequest_EvictsTheOldest(t *testing.T) {
	w := newSession(t)
	for range command.MaxActive {
		if a := w.request(); len(a.Evictions) != 0 {
			t.Fatalf("request %d evicted %v below the limit", w.n, evictedIDs(a))
		}
	}
	if got := len(w.active()); got != command.MaxActive {
		t.Fatalf("%d active, want %d", got, command.MaxActive)
	}

	a := w.request() // the 65th
	if diff := cmp.Diff([]string{cmdID(1)}, evictedIDs(a)); diff != "" {
		t.Fatalf("evicted (-want +got):\n%s", diff)
	}
	ev := a.Evictions[0].Evict
	if ev.By != cmdID(65) || ev.Cause.Ref != cmdID(65) || ev.Cause.Event != "command.requested" || !ev.At.Equal(t0.Add(65*time.Second)) {
		t.Errorf("eviction %+v: want by and ref %s at the request's time", ev, cmdID(65))
	}
	if got := len(w.active()); got != command.MaxActive {
		t.Errorf("%d active after the 65th, want %d", got, command.MaxActive)
	}
	// The evicted command never started: it is evicted, and readable.
	old := w.rows[cmdID(1)]
	if old.Status != command.StatusEvicted || old.EvictedBy != cmdID(65) || old.Argv[0] != "go" || old.Active() {
		t.Errorf("evicted row: %+v", old)
	}

	a = w.request() // the 66th evicts cmd-002, which runs: it is asked to stop
	if diff := cmp.Diff([]string{cmdID(2)}, evictedIDs(a)); diff != "" {
		t.Fatalf("evicted (-want +got):\n%s", diff)
	}
	old = w.rows[cmdID(2)]
	want := command.State{Status: command.StatusStarted, Evicted: true, EvictedBy: cmdID(66), StopRequested: true, StopBy: cmdID(66), StopReason: "evicted", Worker: "w1"}
	got := command.State{Status: old.Status, Evicted: old.Evicted, EvictedBy: old.EvictedBy, StopRequested: old.StopRequested, StopBy: old.StopBy, StopReason: old.StopReason, Worker: old.Worker}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evicted running row (-want +got):\n%s", diff)
	}
	// Its worker still reports the exit, which completes the row.
	evs, err := command.Decide(old, command.Exit{Code: -1, Signal: "SIGTERM", Stopped: true, At: t1, Cause: cause})
	if err != nil {
		t.Fatalf("exit of an evicted command: %v", err)
	}
	w.apply(cmdID(2), evs)
	if s := w.rows[cmdID(2)]; s.Status != command.StatusExited || !s.Evicted || !s.Stopped {
		t.Errorf("after exit: status %s evicted %v stopped %v", s.Status, s.Evicted, s.Stopped)
	}
}

func TestDecideRequest_RaceOvershootsThenHeals(t *testing.T) {
	w := newSession(t)
	for range command.MaxActive - 1 {
		w.request()
	}
	// Two requests decided against the same 63 active commands: neither
	// evicts, and both land.
	snapshot := w.active()
	idA, a := w.admit(snapshot)
	idB, b := w.admit(snapshot)
	if len(a.Evictions)+len(b.Evictions) != 0 {
		t.Fatalf("evictions below the limit: %v %v", evictedIDs(a), evictedIDs(b))
	}
	w.land(idA, a)
	w.land(idB, b)
	if got := len(w.active()); got != command.MaxActive+1 {
		t.Fatalf("%d active after the race, want %d", got, command.MaxActive+1)
	}
	// The next request evicts both extra commands, oldest first.
	c := w.request()
	if diff := cmp.Diff([]string{cmdID(1), cmdID(2)}, evictedIDs(c)); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	if got := len(w.active()); got != command.MaxActive {
		t.Errorf("%d active after healing, want %d", got, command.MaxActive)
	}
}

func TestDecideRequest_SameOldestTwice(t *testing.T) {
	w := newSession(t)
	for range command.MaxActive {
		w.request()
	}
	// Two requests against the same 64 both pick cmd-001; the second
	// eviction is rejected and skipped, leaving 65 until the next request.
	snapshot := w.active()
	idA, a := w.admit(snapshot)
	idB, b := w.admit(snapshot)
	if diff := cmp.Diff(evictedIDs(a), evictedIDs(b)); diff != "" {
		t.Fatalf("different evictions (-a +b):\n%s", diff)
	}
	w.land(idA, a)
	_, err := command.Decide(w.rows[cmdID(1)], b.Evictions[0].Evict)
	if !errors.Is(err, events.ErrRejected) {
		t.Errorf("second eviction of cmd-001: err = %v, want ErrRejected", err)
	}
	w.land(idB, b)
	if got := len(w.active()); got != command.MaxActive+1 {
		t.Errorf("%d active, want %d", got, command.MaxActive+1)
	}
	w.request()
	if got := len(w.active()); got != command.MaxActive {
		t.Errorf("%d active after the next request, want %d", got, command.MaxActive)
	}
}

func TestDecideRequest_NoEvictionWithoutEvents(t *testing.T) {
	full := make([]string, command.MaxActive)
	for i := range full {
		full[i] = cmdID(i + 1)
	}
	// A retry of a request that already landed decides nothing and evicts
	// nothing.
	s := fold(command.Init(agg), requested)
	a, err := command.DecideRequest(s, full, request)
	if err != nil || len(a.Events) != 0 || len(a.Evictions) != 0 {
		t.Errorf("retry: %+v, %v; want nothing", a, err)
	}
	// An invalid request evicts nothing either.
	bad := with(request, func(r *command.Request) { r.Argv = nil })
	a, err = command.DecideRequest(command.Init(agg), full, bad)
	if !errors.Is(err, events.ErrRejected) || len(a.Evictions) != 0 {
		t.Errorf("invalid: %+v, %v; want ErrRejected and nothing", a, err)
	}
	// The new command itself in the list (a projection that saw it
	// already) does not count.
	withSelf := slices.Concat(full[1:], []string{id})
	a, err = command.DecideRequest(command.Init(agg), withSelf, request)
	if err != nil || len(a.Evictions) != 0 {
		t.Errorf("self in list: %v, %v; want no eviction", evictedIDs(a), err)
	}
}

func TestActiveIDs(t *testing.T) {
	row := func(id string, sec int, ps ...events.Payload) command.State {
		s := fold(command.Init(events.Aggregate{Kind: events.KindCommand, ID: id}), ps...)
		s.ID = id
		s.RequestedAt = t0.Add(time.Duration(sec) * time.Second)
		return s
	}
	rows := []command.State{
		row("c", 3, requested, started),
		row("b", 1, requested),
		row("a", 3, requested),
		row("x", 0, requested, started, exited),
		row("y", 0, requested, evicted),
		row("z", 0, requested, started, evicted),
		row("r", 0, requested, refused),
		command.Init(events.Aggregate{Kind: events.KindCommand, ID: "never"}),
	}
	if diff := cmp.Diff([]string{"b", "a", "c"}, command.ActiveIDs(rows)); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
}

func ExampleDecideRequest() {
	// A session with MaxActive active commands, oldest first.
	active := make([]string, command.MaxActive)
	for i := range active {
		active[i] = fmt.Sprintf("cmd-%02d", i+1)
	}
	s := command.Init(events.Aggregate{Kind: events.KindCommand, ID: "cmd-65"})
	a, err := command.DecideRequest(s, active, command.Request{
		Session: "s1", Argv: []string{"make"}, Workspace: "/src/app", Mode: events.ModeWorkspaceWrite,
		RequestedBy: "claude-code", At: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range a.Events {
		fmt.Println("append to", e.Agg.Subject()+":", e.Type)
	}
	for _, ev := range a.Evictions {
		fmt.Println("then evict", ev.Command, "by", ev.Evict.By, "because", ev.Evict.Cause.Detail)
	}
	// Output:
	// append to lb.ev.command.cmd-65: command.requested
	// then evict cmd-01 by cmd-65 because session s1: 65 active commands, limit 64
}
