package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
	"github.com/logbook-dev/logbook/reducers/session"
)

// history returns a fixed random history of about steps inputs.
func history(t testing.TB, seed uint64, steps, sessions int) *projectionstest.History {
	t.Helper()
	return projectionstest.Seeded(t, seed, 7, steps, sessions)
}

// open opens a store in dir and closes it at the end of the test.
func open(t testing.TB, dir string, opts projections.Options) *projections.Store {
	t.Helper()
	s, err := projections.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, projections.ErrClosed) {
			t.Errorf("Close(%s): %v", dir, err)
		}
	})
	return s
}

// apply applies recs in batches of size and fails the test on error.
func apply(t testing.TB, s *projections.Store, recs []events.Record, size int) {
	t.Helper()
	if _, err := s.Apply(context.Background(), projectionstest.Seq(recs), size); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// hash returns s's hash and checks its checkpoint.
func hash(t tb, s *projections.Store, wantCP uint64) string {
	t.Helper()
	h, cp, err := s.Hash()
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	if cp != wantCP {
		t.Fatalf("Hash checkpoint = %d, want %d", cp, wantCP)
	}
	return h
}

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

// checkRows compares s's session rows and indexes with a plain fold of
// the history's records by the reducer.
func checkRows(t tb, s *projections.Store, h *projectionstest.History) {
	t.Helper()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	byPhase := map[string][]string{}
	children := map[string][]string{}
	for _, id := range h.Sessions {
		want, _ := json.Marshal(h.States[id])
		got, ok, err := snap.Get(projections.SessionPrefix + id)
		if err != nil || !ok {
			t.Fatalf("row %s: ok=%v err=%v", id, ok, err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("row %s differs from session.Fold (-fold +row):\n%s", id, diff)
		}
		st := h.States[id]
		if st.Exists() {
			byPhase[st.Phase] = append(byPhase[st.Phase], id)
		}
		if st.Parent != "" {
			children[st.Parent] = append(children[st.Parent], id)
		}
	}
	// index checks the ids an index read holds against want, sorted.
	index := func(name, key string, read func(string) ([]session.State, error), want []string) {
		got, err := read(key)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, st := range got {
			ids = append(ids, st.ID)
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("%s(%q) ids (-want +got):\n%s", name, key, diff)
		}
	}
	for _, phase := range []string{events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded} {
		index("Sessions", phase, s.Sessions, byPhase[phase])
	}
	for _, parent := range h.Sessions {
		index("Children", parent, s.Children, children[parent])
	}
}

// appliedStore returns a store in a temporary directory, closed at test
// end, that has applied seed's history of 600 steps over 40 sessions in
// batches of size.
func appliedStore(t *testing.T, seed uint64, size int) *projections.Store {
	t.Helper()
	h := history(t, seed, 600, 40)
	s := open(t, t.TempDir(), projections.Options{})
	apply(t, s, h.Records, size)
	return s
}

// sessionsIn returns s's sessions in phase ("": all); a failure to read
// them fails the test.
func sessionsIn(t *testing.T, s *projections.Store, phase string) []session.State {
	t.Helper()
	all, err := s.Sessions(phase)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func lastSeq(recs []events.Record) uint64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

// TestStore_Apply_BatchSizes is the metamorphic test: one history applied
// in batches of 1, 7 and all gives identical projections, equal to a
// plain fold by the reducer.
func TestStore_Apply_BatchSizes(t *testing.T) {
	t.Parallel()
	h := history(t, 1, 400, 6)
	recs := h.Records
	var hashes []string
	for _, size := range []int{1, 7, len(recs)} {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			s := open(t, t.TempDir(), projections.Options{})
			n, err := s.Apply(t.Context(), projectionstest.Seq(recs), size)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(recs) {
				t.Errorf("Apply = %d records, want %d", n, len(recs))
			}
			hashes = append(hashes, hash(t, s, lastSeq(recs)))
			checkRows(t, s, h)
		})
	}
	for i := 1; i < len(hashes); i++ {
		if hashes[i] != hashes[0] {
			t.Errorf("hash %d = %s, want %s (batch size 1)", i, hashes[i], hashes[0])
		}
	}
}

// TestStore_Apply_Resume stops after a prefix, reopens the store and
// applies the whole log again: what was applied is skipped, and the result
// equals a clean projection.
func TestStore_Apply_Resume(t *testing.T) {
	t.Parallel()
	h := history(t, 2, 300, 4)
	recs := h.Records
	clean := open(t, t.TempDir(), projections.Options{})
	apply(t, clean, recs, 0)
	want := hash(t, clean, lastSeq(recs))

	dir := filepath.Join(t.TempDir(), "p")
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := len(recs) / 3
	apply(t, s, recs[:k], 7)
	if got := s.Checkpoint(); got != recs[k-1].Seq {
		t.Fatalf("Checkpoint = %d, want %d", got, recs[k-1].Seq)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, projections.Options{})
	if got := s.Checkpoint(); got != recs[k-1].Seq {
		t.Fatalf("Checkpoint after reopen = %d, want %d", got, recs[k-1].Seq)
	}
	n, err := s.Apply(t.Context(), projectionstest.Seq(recs), 7)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(recs)-k {
		t.Errorf("resumed Apply = %d records, want %d", n, len(recs)-k)
	}
	if got := hash(t, s, lastSeq(recs)); got != want {
		t.Errorf("resumed hash = %s, want %s", got, want)
	}
	n, err = s.Apply(t.Context(), projectionstest.Seq(recs), 7)
	if err != nil || n != 0 {
		t.Errorf("Apply of applied records = %d, %v; want 0, nil", n, err)
	}
	if got := hash(t, s, lastSeq(recs)); got != want {
		t.Errorf("hash after re-delivery = %s, want %s", got, want)
	}
	checkRows(t, s, h)
}

// failAt is the session view that refuses one record.
type failAt struct {
	projections.SessionView
	seq uint64
}

var errRefused = errors.New("refused")

func (v failAt) Apply(tx *projections.Tx, r events.Record) error {
	if r.Seq == v.seq {
		return errRefused
	}
	return v.SessionView.Apply(tx, r)
}

// TestStore_Apply_ViewError: a view error aborts its whole batch; the
// batches before it stay, rows and checkpoint together.
func TestStore_Apply_ViewError(t *testing.T) {
	t.Parallel()
	h := history(t, 3, 200, 3)
	recs := h.Records
	bad := recs[len(recs)/2].Seq
	s := open(t, t.TempDir(), projections.Options{Views: []projections.View{failAt{seq: bad}}})
	n, err := s.Apply(t.Context(), projectionstest.Seq(recs), 7)
	if !errors.Is(err, errRefused) {
		t.Fatalf("Apply error = %v, want %v", err, errRefused)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("record %d ", bad)) {
		t.Errorf("error %q does not name record %d", err, bad)
	}
	committed := (int(bad) - 1) / 7 * 7 // whole batches before the failing one
	if n != committed || s.Checkpoint() != uint64(committed) {
		t.Fatalf("Apply = %d, checkpoint %d; want %d, %d", n, s.Checkpoint(), committed, committed)
	}
	ref := open(t, t.TempDir(), projections.Options{})
	apply(t, ref, recs[:committed], 0)
	if got, want := hash(t, s, uint64(committed)), hash(t, ref, uint64(committed)); got != want {
		t.Errorf("hash after aborted batch = %s, want %s", got, want)
	}
}

// countView counts each aggregate's records, in rows counts/<id>, keeping
// the counts decoded in Tx.Memo as SessionView keeps states. Unlike the
// session reducer, folding a record twice changes its row, so it shows
// whether a memo carried a batch's folds that were never committed. It
// refuses the record at seq the first time it sees it.
type countView struct {
	seq    uint64
	failed *bool
}

type countRow struct {
	n     int
	dirty bool
}

func (countView) Name() string { return "counts" }
func (countView) Version() int { return 1 }

func (v countView) Apply(tx *projections.Tx, r events.Record) error {
	if r.Seq == v.seq && !*v.failed {
		*v.failed = true
		return errRefused
	}
	memo := tx.Memo()
	row, ok := memo[r.Agg.ID].(*countRow)
	if !ok {
		row = &countRow{}
		b, found, err := tx.Get("counts/" + r.Agg.ID)
		if err != nil {
			return err
		}
		if found {
			if err := json.Unmarshal(b, &row.n); err != nil {
				return err
			}
		}
		memo[r.Agg.ID] = row
	}
	row.n++
	row.dirty = true
	return nil
}

func (countView) Flush(tx *projections.Tx) error {
	for id, row := range tx.Memo() {
		if row := row.(*countRow); row.dirty {
			row.dirty = false
			if err := tx.Set("counts/"+id, []byte(strconv.Itoa(row.n))); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestStore_Apply_MemoAfterAbort: the rows a batch decoded carry over to
// the store's next batch only when it committed. After an aborted batch,
// whose records were already folded into decoded rows, applying again
// gives the same rows as a clean projection: nothing is folded twice.
func TestStore_Apply_MemoAfterAbort(t *testing.T) {
	t.Parallel()
	h := history(t, 5, 300, 3)
	recs := h.Records
	for _, size := range []int{1, 7, 50} {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			failed := false
			views := []projections.View{projections.SessionView{}, countView{seq: recs[len(recs)/2].Seq, failed: &failed}}
			s := open(t, t.TempDir(), projections.Options{Views: views})
			if _, err := s.Apply(t.Context(), projectionstest.Seq(recs), size); !errors.Is(err, errRefused) {
				t.Fatalf("first Apply error = %v, want %v", err, errRefused)
			}
			apply(t, s, recs, size)
			ref := open(t, t.TempDir(), projections.Options{Views: views})
			apply(t, ref, recs, 0)
			if got, want := hash(t, s, lastSeq(recs)), hash(t, ref, lastSeq(recs)); got != want {
				t.Errorf("hash after an aborted batch and a retry = %s, want %s", got, want)
			}
		})
	}
}

// TestStore_Apply_DecodeError: a record the log cannot decode stops Apply
// with its sequence in the error; nothing after it is applied, and a
// retry stops at the same record.
func TestStore_Apply_DecodeError(t *testing.T) {
	t.Parallel()
	h := history(t, 4, 100, 2)
	recs := h.Records
	bad := recs[len(recs)/2].Seq
	decode := fmt.Errorf("%w: bad json", events.ErrMalformed)
	s := open(t, t.TempDir(), projections.Options{})
	for attempt := range 2 {
		n, err := s.Apply(t.Context(), projectionstest.SeqFailing(recs, bad, decode), 10)
		if !errors.Is(err, events.ErrMalformed) {
			t.Fatalf("attempt %d: error = %v, want ErrMalformed", attempt, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("record %d:", bad)) {
			t.Errorf("attempt %d: error %q does not name record %d", attempt, err, bad)
		}
		if s.Checkpoint() != bad-1 {
			t.Errorf("attempt %d: checkpoint = %d, want %d", attempt, s.Checkpoint(), bad-1)
		}
		if want := int(bad - 1); attempt == 0 && n != want {
			t.Errorf("Apply = %d, want %d", n, want)
		}
	}
}

// TestStore_Apply_Refuses covers records and stores Apply refuses.
func TestStore_Apply_Refuses(t *testing.T) {
	t.Parallel()
	h := history(t, 5, 10, 1)
	s := open(t, t.TempDir(), projections.Options{})
	noSeq := h.Records[0]
	noSeq.Seq = 0
	if _, err := s.Apply(t.Context(), projectionstest.Seq([]events.Record{noSeq}), 1); err == nil {
		t.Error("Apply of a record without sequence: no error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Apply(ctx, projectionstest.Seq(h.Records), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a done context = %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), projectionstest.Seq(h.Records), 1); !errors.Is(err, projections.ErrClosed) {
		t.Errorf("Apply on a closed store = %v, want ErrClosed", err)
	}
	if _, err := s.Session("s1"); !errors.Is(err, projections.ErrClosed) {
		t.Errorf("Session on a closed store = %v, want ErrClosed", err)
	}
}

// outside is a view that writes outside its key space.
type outside struct{}

func (outside) Name() string { return "rogue" }
func (outside) Version() int { return 1 }
func (outside) Apply(tx *projections.Tx, r events.Record) error {
	return tx.Set("sessions/"+r.Agg.ID, []byte("{}"))
}

func TestTx_KeyOutsideView(t *testing.T) {
	t.Parallel()
	h := history(t, 6, 5, 1)
	s := open(t, t.TempDir(), projections.Options{Views: []projections.View{outside{}}})
	_, err := s.Apply(t.Context(), projectionstest.Seq(h.Records), 1)
	if err == nil || !strings.Contains(err.Error(), "outside the view") {
		t.Errorf("Apply = %v, want a key-space error", err)
	}
}

func TestOpen_BadViews(t *testing.T) {
	t.Parallel()
	for name, views := range map[string][]projections.View{
		"duplicate": {projections.SessionView{}, projections.SessionView{}},
		"meta":      {named{"meta"}},
		"dash":      {named{"a-b"}},
		"empty":     {named{""}},
	} {
		t.Run(name, func(t *testing.T) {
			if s, err := projections.Open(t.TempDir(), projections.Options{Views: views}); err == nil {
				s.Close()
				t.Error("Open: no error")
			}
		})
	}
}

type named struct{ name string }

func (n named) Name() string                             { return n.name }
func (named) Version() int                               { return 1 }
func (named) Apply(*projections.Tx, events.Record) error { return nil }

func TestStore_Queries(t *testing.T) {
	t.Parallel()
	h := projectionstest.NewHistory(projectionstest.Epoch())
	line := func(id string, n int, meta events.Meta, sigs ...events.Sig) {
		t.Helper()
		o := events.Observation{Key: fmt.Sprint("l", n), Parser: "test/1", Line: n, Kind: "assistant", Meta: meta, Signals: sigs}
		if recs, err := h.Observe(id, events.ClaudeLineObserved{Observation: o}, ""); err != nil || recs == nil {
			t.Fatalf("observe %s line %d: %v (rejected %d)", id, n, err, h.Rejected)
		}
		h.Tick(1000)
	}
	line("main", 1, events.Meta{SessionID: "agent-main"}, events.Sig{Kind: events.SigPrompt})
	line("main", 2, events.Meta{SessionID: "agent-main"}, events.Sig{Kind: events.SigToolUse, ID: "t1", Name: "Bash"})
	line("sub1", 1, events.Meta{SessionID: "main", AgentID: "a1"}, events.Sig{Kind: events.SigSessionStart})
	line("sub2", 1, events.Meta{SessionID: "main", AgentID: "a2"}, events.Sig{Kind: events.SigSessionEnd})
	line("other", 1, events.Meta{SessionID: "agent-other"})

	s := open(t, t.TempDir(), projections.Options{})
	apply(t, s, h.Records, 3)

	got, err := s.Session("main")
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != events.PhaseWorking || got.Activity != "tool:Bash" || len(got.Entries) != 1 {
		t.Errorf("Session(main) = phase %q activity %q entries %d; want working tool:Bash 1", got.Phase, got.Activity, len(got.Entries))
	}
	if want := projectionstest.Epoch().Add(1000); !got.Entries[0].OpenedAt.Equal(want) {
		t.Errorf("entry opened_at = %v, want the envelope's %v", got.Entries[0].OpenedAt, want)
	}
	if _, err := s.Session("nope"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Session(nope) = %v, want ErrNotFound", err)
	}
	names := func(states []session.State, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, st := range states {
			out = append(out, st.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"all", names(s.Sessions("")), []string{"main", "other", "sub1", "sub2"}},
		{"ready", names(s.Sessions(events.PhaseReady)), []string{"other", "sub1"}},
		{"working", names(s.Sessions(events.PhaseWorking)), []string{"main"}},
		{"ended", names(s.Sessions(events.PhaseEnded)), []string{"sub2"}},
		{"waiting", names(s.Sessions(events.PhaseWaiting)), []string{}},
		{"children", names(s.Children("main")), []string{"sub1", "sub2"}},
		{"no children", names(s.Children("sub1")), []string{}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestOpenMem: the in-memory store behaves like the one on disk.
func TestOpenMem(t *testing.T) {
	t.Parallel()
	h := history(t, 8, 150, 3)
	mem, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk := open(t, t.TempDir(), projections.Options{})
	apply(t, mem, h.Records, 7)
	apply(t, disk, h.Records, 0)
	if got, want := hash(t, mem, lastSeq(h.Records)), hash(t, disk, lastSeq(h.Records)); got != want {
		t.Errorf("in-memory hash %s, on disk %s", got, want)
	}
}

// TestStore_WaitFor: a reader waiting for its own append's sequence
// wakes when the batch holding it commits.
func TestStore_WaitFor(t *testing.T) {
	t.Parallel()
	h := history(t, 10, 60, 2)
	recs := h.Records
	s := open(t, t.TempDir(), projections.Options{})
	target := recs[len(recs)-1].Seq
	woke := make(chan error, 1)
	go func() { woke <- s.WaitFor(t.Context(), target) }()
	apply(t, s, recs[:len(recs)/2], 0)
	select {
	case err := <-woke:
		t.Fatalf("WaitFor(%d) returned at checkpoint %d: %v", target, s.Checkpoint(), err)
	case <-time.After(20 * time.Millisecond):
	}
	apply(t, s, recs, 5)
	if err := <-woke; err != nil {
		t.Fatalf("WaitFor = %v", err)
	}
	if err := s.WaitFor(t.Context(), 1); err != nil {
		t.Errorf("WaitFor of a committed seq = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := s.WaitFor(ctx, target+1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor past the end = %v, want DeadlineExceeded", err)
	}
	go func() { woke <- s.WaitFor(t.Context(), target+1) }()
	time.Sleep(10 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; !errors.Is(err, projections.ErrClosed) {
		t.Errorf("WaitFor on a closing store = %v, want ErrClosed", err)
	}
}

// TestStore_WaitMoving: a wait for a sequence far ahead goes on while the
// projection moves, however long that takes in all, and ends once it
// stands still for the idle time. Whether it stood still for idle is the
// machine's doing as much as the test's (one step's apply took longer
// than idle on a loaded machine, and the wait rightly ended): the test
// times each step and judges the wait by what happened. A run in which
// every span that can have passed without a move (from the start of one
// step to the end of the next) is shorter than idle must end in nil; a
// run with a longer one proves nothing and is made again with twice the
// idle.
func TestStore_WaitMoving(t *testing.T) {
	t.Parallel()
	h := history(t, 11, 60, 2)
	recs := h.Records
	target := recs[len(recs)-1].Seq
	idle := 200 * time.Millisecond
	var s *projections.Store
	for ; ; idle *= 2 {
		s = open(t, t.TempDir(), projections.Options{})
		woke := make(chan error, 1)
		start := time.Now()
		go func() { woke <- s.WaitMoving(t.Context(), target, idle) }()
		// Applied in small steps, a quarter of idle apart, over more
		// than 3×idle. A step moves the projection between its apply's
		// start and its end.
		var still time.Duration // the longest span that can have passed without a move
		prev := start           // the previous step's start; the wait's start before the first
		for i := 0; i < len(recs); i += 5 {
			began := time.Now()
			apply(t, s, recs[:min(i+5, len(recs))], 0)
			still = max(still, time.Since(prev))
			prev = began
			time.Sleep(idle / 4)
		}
		err := <-woke
		if err == nil {
			break
		}
		if still < idle {
			t.Fatalf("WaitMoving(idle %s) while it moved at least every %s for %s: %v", idle, still, time.Since(start), err)
		}
		t.Logf("WaitMoving(idle %s) = %v: the projection may have stood still for %s; again with twice the idle", idle, err, still)
	}
	err := s.WaitMoving(t.Context(), target+1, idle)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("not moving for %s", idle)) {
		t.Errorf("WaitMoving past the end = %v, want DeadlineExceeded, not moving for %s", err, idle)
	}
}

// TestStore_SessionRows pages through the sessions of a random history,
// of every phase and of all, with pages of several sizes, as whole rows
// and as summaries: the pages joined are what Sessions returns, each
// summary is session.Summarize of its row, and fn's false stops the walk.
func TestStore_SessionRows(t *testing.T) {
	t.Parallel()
	s := appliedStore(t, 19, 50)
	for _, phase := range []string{"", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded} {
		all := sessionsIn(t, s, phase)
		want := []string{}
		sums := map[string]session.Summary{}
		for _, st := range all {
			want = append(want, st.ID)
			sums[st.ID] = session.Summarize(st)
		}
		for _, size := range []int{1, 3, 1000} {
			got := paged(t, "SessionSummaries", size, len(want)+1, func(after string, yield func(id, cursor string, row []byte) (bool, error)) error {
				return s.SessionSummaries(phase, after, func(id string, row []byte) (bool, error) { return yield(id, id, row) })
			}, func(id string, row []byte) error {
				var sum session.Summary
				if err := json.Unmarshal(row, &sum); err != nil {
					return fmt.Errorf("summary %s = %s: %v", id, row, err)
				}
				if diff := cmp.Diff(sums[id], sum); diff != "" {
					return fmt.Errorf("summary %s (-want +got):\n%s", id, diff)
				}
				return nil
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SessionSummaries(%q) in pages of %d (-want +got):\n%s", phase, size, diff)
			}
		}
		for _, size := range []int{1, 3, 1000} {
			got := paged(t, "SessionRows", size, len(want)+1, func(after string, yield func(id, cursor string, row []byte) (bool, error)) error {
				return s.SessionRows(phase, after, func(id string, row []byte) (bool, error) { return yield(id, id, row) })
			}, func(id string, row []byte) error {
				var st session.State
				if err := json.Unmarshal(row, &st); err != nil || st.ID != id || (phase != "" && st.Phase != phase) || !st.Exists() {
					return fmt.Errorf("row %s = %s (%v)", id, row, err)
				}
				return nil
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SessionRows(%q) in pages of %d (-want +got):\n%s", phase, size, diff)
			}
		}
	}
}

// paged reads a paged query to its end in pages of size and returns the
// ids it yields, in order. query reads the page after the cursor after,
// handing each row to yield; check judges each row (its error ends the
// query and fails t). A page shorter than size is the last; more than
// limit pages fail t.
func paged(t *testing.T, name string, size, limit int, query func(after string, yield func(id, cursor string, row []byte) (bool, error)) error, check func(id string, row []byte) error) []string {
	t.Helper()
	got, after := []string{}, ""
	for pages := 0; ; pages++ {
		if pages > limit {
			t.Fatalf("%s in pages of %d: pages do not end", name, size)
		}
		n := 0
		err := query(after, func(id, cursor string, row []byte) (bool, error) {
			if err := check(id, row); err != nil {
				return false, err
			}
			got = append(got, id)
			after = cursor
			n++
			return n < size, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < size {
			return got
		}
	}
}

// TestRowPhase reads the phase of stored rows without decoding them, and
// is not fooled by ids, titles or cursors that spell a phase key.
func TestRowPhase(t *testing.T) {
	t.Parallel()
	for _, st := range []session.State{
		{ID: "s1", Phase: events.PhaseWorking},
		{ID: "s2"},
		{ID: `a",\"phase\":\"ended`, Phase: events.PhaseReady, Title: `,"phase":"x"`},
		{ID: `x\`, Phase: events.PhaseWaiting, Cursors: session.PerSourceOf(map[string]int{"phase": 3})},
		{ID: "s5", Cursors: session.PerSourceOf(map[string]int{`,"phase":"ended`: 3})},
	} {
		row, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := projections.RowPhase(row)
		if err != nil || got != st.Phase {
			t.Errorf("RowPhase(%s) = %q, %v; want %q", row, got, err, st.Phase)
		}
	}
	if _, err := projections.RowPhase([]byte(`{"id":`)); err == nil {
		t.Errorf("RowPhase of a torn row: no error")
	}
}

// TestStore_SessionSummariesByActivity pages through the sessions of a
// random history, of every phase and of all, the most recently active
// first, with pages of several sizes: the pages joined are Sessions'
// summaries sorted by last activity (ties by id).
func TestStore_SessionSummariesByActivity(t *testing.T) {
	t.Parallel()
	s := appliedStore(t, 23, 7)
	for _, phase := range []string{"", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded} {
		all := sessionsIn(t, s, phase)
		sums := make([]session.Summary, len(all))
		for i, st := range all {
			sums[i] = session.Summarize(st)
		}
		slices.SortStableFunc(sums, func(a, b session.Summary) int {
			if c := b.LastActivity().Compare(a.LastActivity()); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		want := []string{}
		for _, sum := range sums {
			want = append(want, sum.ID)
		}
		for _, size := range []int{1, 3, 1000} {
			got := paged(t, "SessionSummariesByActivity", size, len(want)+1, func(after string, yield func(id, cursor string, row []byte) (bool, error)) error {
				return s.SessionSummariesByActivity(phase, after, yield)
			}, func(id string, row []byte) error {
				var sum session.Summary
				if err := json.Unmarshal(row, &sum); err != nil || sum.ID != id {
					return fmt.Errorf("summary %s = %s (%v)", id, row, err)
				}
				return nil
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SessionSummariesByActivity(%q) in pages of %d (-want +got):\n%s", phase, size, diff)
			}
		}
	}
}

// TestActivityKey: later times sort first; times before 1970 sort as
// 1970 does.
func TestActivityKey(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	keys := []string{
		projections.ActivityKey(t0.Add(time.Nanosecond)),
		projections.ActivityKey(t0),
		projections.ActivityKey(time.Unix(0, 1)),
		projections.ActivityKey(time.Time{}),
	}
	if !slices.IsSorted(keys) || keys[3] != projections.ActivityKey(time.Unix(-5, 0)) {
		t.Errorf("keys %q: want sorted, the zero time as 1970", keys)
	}
}
