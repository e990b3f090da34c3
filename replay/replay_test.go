package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// evolveAll folds every session of a log into a map.
func evolveAll(m map[string]session.State, e events.Envelope) map[string]session.State {
	out := make(map[string]session.State, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[e.Agg.ID] = session.Evolve(m[e.Agg.ID], e)
	return out
}

func TestFold(t *testing.T) {
	h := history(t, 1, 150, 3)
	got, last, err := replay.Fold(projectionstest.Seq(h.Records), map[string]session.State{}, evolveAll)
	if err != nil {
		t.Fatal(err)
	}
	if want := h.Records[len(h.Records)-1].Seq; last != want {
		t.Errorf("last = %d, want %d", last, want)
	}
	if diff := cmp.Diff(h.States, got); diff != "" {
		t.Errorf("Fold (-want +got):\n%s", diff)
	}

	bad := h.Records[10].Seq
	_, last, err = replay.Fold(projectionstest.SeqFailing(h.Records, bad, events.ErrMalformed), map[string]session.State{}, evolveAll)
	if !errors.Is(err, events.ErrMalformed) || last != bad-1 {
		t.Errorf("Fold over a bad record = last %d, %v; want %d, ErrMalformed", last, err, bad-1)
	}
}

// TestAt rebuilds the projection at points of a real log and compares it
// with a projection of the same records held in memory.
func TestAt(t *testing.T) {
	t.Parallel()
	h := history(t, 2, 200, 4)
	recs := h.Records
	log := logWith(t, h)
	mid := recs[len(recs)/2]
	s2 := events.Aggregate{Kind: events.KindSession, ID: "s2"}
	for _, tc := range []struct {
		name string
		p    replay.Point
		want []events.Record
	}{
		{"whole log", replay.Point{}, recs},
		{"seq", replay.Point{Seq: mid.Seq}, recs[:len(recs)/2+1]},
		{"seq 1", replay.Point{Seq: 1}, recs[:1]},
		{"time", replay.Point{Time: mid.At}, filter(recs, func(r events.Record) bool { return !r.At.After(mid.At) })},
		{"before the first", replay.Point{Time: recs[0].At.Add(-time.Microsecond)}, nil},
		{"session", replay.Point{Agg: s2}, filter(recs, func(r events.Record) bool { return r.Agg == s2 })},
		{"session at seq", replay.Point{Agg: s2, Seq: mid.Seq}, filter(recs[:len(recs)/2+1], func(r events.Record) bool { return r.Agg == s2 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := replay.At(t.Context(), log, tc.p, "")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			gotHash, gotCP := storeHash(t, s)
			wantHash, wantCP := storeHash(t, memStore(t, tc.want))
			if gotHash != wantHash || gotCP != wantCP {
				t.Errorf("At(%s) = %s at %d, want %s at %d", tc.p, gotHash, gotCP, wantHash, wantCP)
			}
		})
	}

	t.Run("dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "at")
		s, err := replay.At(t.Context(), log, replay.Point{Seq: mid.Seq}, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := storeHash(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		want, _ := storeHash(t, memStore(t, recs[:len(recs)/2+1]))
		if got != want {
			t.Errorf("At in a directory = %s, want %s", got, want)
		}
		if _, err := replay.At(t.Context(), log, replay.Point{}, dir); err == nil {
			t.Error("At into a used directory: no error")
		}
	})
}

// TestAtClockBack: on a log whose events' At go backwards (an agent's
// clock set back), a Time point folds the longest prefix whose events are
// all dated at or before it, for the whole log and for one session: the
// state the Seq of its last event gives, never one that skips an event
// dated later to fold one after it dated earlier.
func TestAtClockBack(t *testing.T) {
	t.Parallel()
	h := projectionstest.NewHistory(projectionstest.Epoch())
	r := rand.New(rand.NewPCG(7, 3))
	for i := range 160 {
		if i%8 == 7 {
			h.Tick(-3 * time.Second) // the clock goes back
		}
		if err := h.Step(r, 2); err != nil {
			t.Fatal(err)
		}
	}
	recs := h.Records
	log := logWith(t, h)
	// prefix returns the records of recs before the first dated after at.
	prefix := func(recs []events.Record, at time.Time) []events.Record {
		for i, r := range recs {
			if r.At.After(at) {
				return recs[:i]
			}
		}
		return recs
	}
	skipped := 0 // Time points where an At filter would differ from the prefix
	for i := 0; i < len(recs); i += 7 {
		at := recs[i].At
		points := []replay.Point{{Time: at}}
		for _, id := range h.Sessions {
			points = append(points, replay.Point{Time: at, Agg: events.Aggregate{Kind: events.KindSession, ID: id}})
		}
		for _, p := range points {
			sel := filter(recs, func(r events.Record) bool { return p.Agg.Kind == "" || r.Agg == p.Agg })
			want := prefix(sel, at)
			if len(want) != len(filter(sel, func(r events.Record) bool { return !r.At.After(at) })) {
				skipped++
			}
			s, err := replay.At(t.Context(), log, p, "")
			if err != nil {
				t.Fatal(err)
			}
			gotHash, gotCP := storeHash(t, s)
			s.Close()
			wantHash, wantCP := storeHash(t, memStore(t, want))
			if gotHash != wantHash || gotCP != wantCP {
				t.Errorf("At(%s) = %s at %d, want the prefix's %s at %d", p, gotHash, gotCP, wantHash, wantCP)
			}
			if gotCP == 0 {
				continue
			}
			st, err := replay.StateAt(t.Context(), log, p, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantCut(sel, len(want), at), st.Cut); diff != "" {
				t.Errorf("StateAt(%s).Cut (-want +got):\n%s", p, diff)
			}
			bySeq, err := replay.At(t.Context(), log, replay.Point{Seq: gotCP, Agg: p.Agg}, "")
			if err != nil {
				t.Fatal(err)
			}
			seqHash, _ := storeHash(t, bySeq)
			bySeq.Close()
			if seqHash != gotHash {
				t.Errorf("At(%s) = %s at seq %d, but seq %d alone gives %s: a state that never existed", p, gotHash, gotCP, gotCP, seqHash)
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no Time point where the clock going back matters: the history does not test it")
	}
}

// wantCut is the Cut of a Time point at whose selection sel the prefix
// ends after n records: nil when it reached sel's end.
func wantCut(sel []events.Record, n int, at time.Time) *replay.Cut {
	if n == len(sel) {
		return nil
	}
	c := &replay.Cut{Seq: sel[n].Seq}
	for _, r := range sel[n+1:] {
		if !r.At.After(at) {
			c.Left++
			c.Last = r.Seq
		}
	}
	return c
}

// TestVerify: a live projection made by a Runner from the log verifies
// equal; tampered copies report the first differing key.
func TestVerify(t *testing.T) {
	t.Parallel()
	h := history(t, 3, 200, 4)
	log := logWith(t, h)
	dir := filepath.Join(t.TempDir(), "live")
	live := openStore(t, dir)
	r := &projections.Runner{Log: log, Store: live, Batch: 13}
	if _, err := r.RunToEnd(t.Context()); err != nil {
		t.Fatal(err)
	}
	empty, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if rep, err := replay.Verify(t.Context(), log, empty); err != nil || !rep.Equal || rep.Seq != 0 {
		t.Errorf("Verify of an empty store = %s, %v; want equal at 0", rep, err)
	}
	rep, err := replay.Verify(t.Context(), log, live)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal || rep.Diff != nil || rep.Seq != h.Records[len(h.Records)-1].Seq || rep.LiveHash == "" {
		t.Fatalf("Verify = %+v, want equal at %d", rep, h.Records[len(h.Records)-1].Seq)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}

	row := func(db *pebble.DB, key string) string {
		v, c, err := db.Get([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return string(v)
	}
	for _, tc := range []struct {
		name       string
		key        string
		tamper     func(db *pebble.DB) error
		live, repl bool // which side has the key
	}{
		{"extra row", "sessions/zzz", func(db *pebble.DB) error {
			return db.Set([]byte("sessions/zzz"), []byte(`{"id":"zzz"}`), pebble.Sync)
		}, true, false},
		{"changed row", "sessions/s1", func(db *pebble.DB) error {
			return db.Set([]byte("sessions/s1"), []byte(row(db, "sessions/s1")+" "), pebble.Sync)
		}, true, true},
		{"missing index", "sessions-by-phase/" + h.States["s2"].Phase + "/s2", func(db *pebble.DB) error {
			return db.Delete([]byte("sessions-by-phase/"+h.States["s2"].Phase+"/s2"), pebble.Sync)
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
			if err != nil {
				t.Fatal(err)
			}
			snap := db.NewSnapshot()
			undo := func() {} // restore the key for the next case
			if v, c, err := snap.Get([]byte(tc.key)); err == nil {
				old := bytes.Clone(v)
				c.Close()
				undo = func() { db.Set([]byte(tc.key), old, pebble.Sync) }
			} else {
				undo = func() { db.Delete([]byte(tc.key), pebble.Sync) }
			}
			snap.Close()
			if err := tc.tamper(db); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			live := openStore(t, dir)
			rep, err := replay.Verify(t.Context(), log, live)
			live.Close()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Equal || rep.Diff == nil || rep.Diff.Key != tc.key ||
				(rep.Diff.Live != nil) != tc.live || (rep.Diff.Replay != nil) != tc.repl {
				t.Errorf("Verify = %s diff %+v; want a difference at %s (live %v, replay %v)", rep, rep.Diff, tc.key, tc.live, tc.repl)
			}
			db, err = pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
			if err != nil {
				t.Fatal(err)
			}
			undo()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVerify_LogBehind: a live store whose checkpoint is past the log's
// end cannot be verified.
func TestVerify_LogBehind(t *testing.T) {
	t.Parallel()
	h := history(t, 4, 60, 2)
	log := newLog(t)
	half := projectionstest.NewHistory(projectionstest.Epoch())
	half.Batches = h.Batches[:len(h.Batches)/2]
	if _, err := half.AppendTo(t.Context(), log); err != nil {
		t.Fatal(err)
	}
	live := memStore(t, h.Records)
	if rep, err := replay.Verify(t.Context(), log, live); err == nil {
		t.Errorf("Verify = %s, want an error", rep)
	}
}

// TestEndToEnd appends decisions through the real log while a Runner
// follows it live, then verifies the live projection against a replay and
// against the reducer's fold.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	h := history(t, 5, 400, 6)
	log := newLog(t)
	live := openStore(t, filepath.Join(t.TempDir(), "live"))
	defer live.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- (&projections.Runner{Log: log, Store: live, Interval: 5 * time.Millisecond}).Run(ctx)
	}()
	if err := h.AppendParallel(t.Context(), log, 4); err != nil {
		t.Fatal(err)
	}
	last, err := log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); live.Checkpoint() < last; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("live projection stuck at %d of %d", live.Checkpoint(), last)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	rep, err := replay.Verify(t.Context(), log, live)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal || rep.Seq != last {
		t.Fatalf("Verify = %s, want equal at %d", rep, last)
	}
	// The log's order across sessions is its own, but every row is the
	// reducer's fold of that session's events.
	if want, _ := storeHash(t, memStore(t, h.Records)); rep.LiveHash != want {
		t.Errorf("live hash %s, fold of the generated history %s", rep.LiveHash, want)
	}
	for _, id := range h.Sessions {
		got, err := live.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(h.States[id])
		gotJSON, _ := json.Marshal(got)
		if diff := cmp.Diff(string(want), string(gotJSON)); diff != "" {
			t.Errorf("session %s (-fold +live):\n%s", id, diff)
		}
	}
}
