package projections_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestStore_CommandsActive: a session's active commands are those of
// its rows that command.State.Active takes, whatever the others' status
// (requested, started, exited, refused, evicted while requested), as a
// whole decoding of every row finds them.
func TestStore_CommandsActive(t *testing.T) {
	t.Parallel()
	cl := &commandLog{reg: events.NewRegistry(), at: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), step: time.Second}
	add := cl.add
	for i, end := range []string{"", "started", "exited", "refused", "evicted", "exited", ""} {
		id := fmt.Sprintf("c%d", i)
		add(id, 1, events.CommandRequested{Session: "s1", Argv: []string{"true", `"status":"requested"`}, Workspace: "/w", Mode: events.ModeFullAccess})
		switch end {
		case "started", "exited":
			add(id, 2, events.CommandStarted{Worker: "w1", Host: "h"})
			if end == "exited" {
				add(id, 3, events.CommandExited{Code: 0})
			}
		case "refused":
			add(id, 2, events.CommandRefused{Reason: "no"})
		case "evicted":
			add(id, 2, events.CommandEvicted{})
		}
	}
	s := open(t, t.TempDir(), projections.Options{})
	apply(t, s, cl.recs, 100)
	all, err := s.Commands("s1", false)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(c command.State) bool { return !c.Active() })
	got, err := s.Commands("s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("%d active of %d rows, want the 2 requested and the started one: %+v", len(want), len(all), all)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("active commands differ from the rows Active takes (-want +got):\n%s", diff)
	}
	for _, c := range all {
		row, _ := json.Marshal(c)
		if st, ok := projections.RowStatus(row); !ok || st != c.Status {
			t.Errorf("rowStatus of %s's row = %q, %v; want %q", c.ID, st, ok, c.Status)
		}
	}
}

// TestRowStatus: the status is found wherever it stands among the
// top-level fields, never inside a nested value; a row that is no
// object, or has no status, is left to a whole decoding.
func TestRowStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		row    string
		status string
		ok     bool
	}{
		{`{"id":"c1","ver":2,"session":"s1","status":"started","argv":["x"]}`, "started", true},
		{`{"argv":["{\"status\":\"exited\"}"],"env":{"status":"exited"},"status":"requested"}`, "requested", true},
		{`{"nested":{"status":"exited"},"list":[{"status":"exited"}]}`, "", false},
		{`[1,2]`, "", false},
		{`{"status":3}`, "", false},
		{` { "id" : "c1" , "ver" : -1.5e3 , "tty" : true , "cwd" : null , "status" : "exited" } `, "exited", true},
		{`{"argv":[[],{},[{"a":[1,false]}]],"status":"lingering"}`, "lingering", true},
		{`{"st\u0061tus":"exited"}`, "", false},
		{`{"status":"ex\u0069ted"}`, "", false},
		{`{"argv":["x"] "status":"exited"}`, "", false},
		{`{"argv":[1,],"status":"exited"}`, "", false},
		{`{"id":`, "", false},
	} {
		st, ok := projections.RowStatus([]byte(c.row))
		if st != c.status || ok != c.ok {
			t.Errorf("rowStatus(%s) = %q, %v; want %q, %v", c.row, st, ok, c.status, c.ok)
		}
	}
}

// BenchmarkStore_CommandsActive: the active commands of a session whose
// 500 other commands have ended, as a request's admission reads them.
func BenchmarkStore_CommandsActive(b *testing.B) {
	cl := &commandLog{reg: events.NewRegistry(), at: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), step: time.Millisecond}
	add := cl.add
	const ended = 500
	for i := range ended + 1 {
		id := ulid.Make().String()
		add(id, 1, events.CommandRequested{Session: "s1", Argv: []string{"go", "test", "./..."}, Workspace: "/w", Mode: events.ModeWorkspaceWrite, Env: []string{"GOFLAGS=-count=1"}})
		if i < ended {
			add(id, 2, events.CommandStarted{Worker: "w1", Host: "h"})
			add(id, 3, events.CommandExited{Code: 0})
		}
	}
	s := open(b, b.TempDir(), projections.Options{})
	apply(b, s, cl.recs, 1000)
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.Commands("s1", true)
		if err != nil || len(got) != 1 {
			b.Fatalf("Commands = %d rows, %v; want the one requested", len(got), err)
		}
	}
}

// TestStore_CommandsActiveIndex: over random histories of commands in
// three sessions (requested, started, running, exited, abandoned,
// evicted, refused, in any order the reducer takes) and batch sizes 1,
// 7 and all, the active commands read from the index are, for each
// session and for all, those a whole decoding of every row takes.
func TestStore_CommandsActiveIndex(t *testing.T) {
	t.Parallel()
	for seed := range int64(20) {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		cl := &commandLog{reg: events.NewRegistry(), at: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), step: time.Second}
		add := cl.next
		var ids []string
		for range 60 {
			if len(ids) == 0 || rng.IntN(3) == 0 {
				id := fmt.Sprintf("c%02d", len(ids))
				ids = append(ids, id)
				add(id, events.CommandRequested{Session: fmt.Sprintf("s%d", rng.IntN(3)), Argv: []string{"true"}, Workspace: "/w", Mode: events.ModeFullAccess})
				continue
			}
			id := ids[rng.IntN(len(ids))]
			switch rng.IntN(6) {
			case 0:
				add(id, events.CommandStarted{Worker: "w1", Host: "h"})
			case 1:
				add(id, events.CommandExited{Code: rng.IntN(2)})
			case 2:
				add(id, events.CommandAbandoned{Reason: "worker_lost", Worker: "w1"})
			case 3:
				add(id, events.CommandEvicted{})
			case 4:
				add(id, events.CommandRefused{Reason: "no"})
			case 5:
				add(id, events.CommandRunning{})
			}
		}
		for _, size := range []int{1, 7, len(cl.recs)} {
			s := open(t, t.TempDir(), projections.Options{})
			apply(t, s, cl.recs, size)
			// The index holds the active commands and no others.
			sn, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			indexed := 0
			for row, err := range sn.Rows() {
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(string(row.Key), projections.CommandActivePrefix) {
					indexed++
				}
			}
			sn.Close()
			if active, _ := s.Commands("", true); indexed != len(active) {
				t.Errorf("seed %d, batches of %d: %d commands indexed as active, %d active", seed, size, indexed, len(active))
			}
			for _, sess := range []string{"s0", "s1", "s2", ""} {
				all, err := s.Commands(sess, false)
				if err != nil {
					t.Fatal(err)
				}
				want := slices.DeleteFunc(all, func(c command.State) bool { return !c.Active() })
				got, err := s.Commands(sess, true)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("seed %d, batches of %d, session %q: the index's active commands differ from the rows' (-rows +index):\n%s", seed, size, sess, diff)
				}
			}
		}
	}
}

// TestStore_CommandsActiveIndexSession: the index of active commands
// follows the row's session, whatever order the reducer folds a
// command's events in: a command started before its request comes (its
// row active with no session yet) is indexed under the session its
// request names, and one a second request moves to another session is
// indexed under that one alone, while it is active and after; one with
// no request yet is among every session's active commands, as its row.
func TestStore_CommandsActiveIndexSession(t *testing.T) {
	t.Parallel()
	cl := &commandLog{reg: events.NewRegistry(), at: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), step: time.Second}
	add := cl.next
	req := func(sess string) events.CommandRequested {
		return events.CommandRequested{Session: sess, Argv: []string{"true"}, Workspace: "/w", Mode: events.ModeFullAccess}
	}
	add("c1", events.CommandStarted{Worker: "w1", Host: "h"})
	add("c1", req("s1"))
	add("c2", req("s1"))
	add("c2", req("s2"))
	add("c3", req("s1"))
	add("c3", req("s2"))
	add("c3", events.CommandExited{Code: 0})
	add("c4", events.CommandStarted{Worker: "w1", Host: "h"}) // no request yet

	for _, size := range []int{1, len(cl.recs)} {
		s := open(t, t.TempDir(), projections.Options{})
		apply(t, s, cl.recs, size)
		all, err := s.Commands("", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, sess := range []string{"s1", "s2", ""} {
			var want []string
			for _, c := range all {
				if (c.Session == sess || sess == "") && c.Active() {
					want = append(want, c.ID)
				}
			}
			got, err := s.Commands(sess, true)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if !slices.Equal(want, ids) {
				t.Errorf("batches of %d: session %s's active commands %q, want %q (its rows)", size, sess, ids, want)
			}
		}
		// No key is left for a command no longer active (c3).
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for row, err := range sn.Rows() {
			if err != nil {
				t.Fatal(err)
			}
			if k := string(row.Key); strings.HasPrefix(k, projections.CommandActivePrefix) {
				keys = append(keys, k)
			}
		}
		sn.Close()
		if want := []string{projections.CommandActivePrefix + "/c4", projections.CommandActivePrefix + "s1/c1", projections.CommandActivePrefix + "s2/c2"}; !slices.Equal(keys, want) {
			t.Errorf("batches of %d: index keys %q, want %q", size, keys, want)
		}
	}
}

// commandsV2 is the commands view of schema version 2: its rows and the
// session index, without the index of active commands.
type commandsV2 struct{ projections.CommandView }

func (commandsV2) Version() int { return 2 }

func (v commandsV2) Apply(tx *projections.Tx, r events.Record) error {
	if err := v.CommandView.Apply(tx, r); err != nil || r.Agg.Kind != events.KindCommand {
		return err
	}
	b, _, err := tx.Get(projections.CommandPrefix + r.Agg.ID)
	if err != nil {
		return err
	}
	var st command.State
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	return tx.Delete(projections.CommandActivePrefix + st.Session + "/" + r.Agg.ID)
}

// TestStore_CommandsActiveStale: a store of version 2, opened stale after
// an upgrade and answering with its old rows until a Runner rebuilds it
// (the metrics' count of active commands reads it so, and so does a read
// that may be stale while the log does not answer), has no index of
// active commands: its active commands are read from its rows.
func TestStore_CommandsActiveStale(t *testing.T) {
	t.Parallel()
	cl := &commandLog{reg: events.NewRegistry(), at: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), step: time.Second}
	add := cl.add
	add("c1", 1, events.CommandRequested{Session: "s1", Argv: []string{"true"}, Workspace: "/w", Mode: events.ModeFullAccess})
	add("c2", 1, events.CommandRequested{Session: "s1", Argv: []string{"true"}, Workspace: "/w", Mode: events.ModeFullAccess})
	add("c2", 2, events.CommandStarted{Worker: "w1", Host: "h"})

	dir := t.TempDir()
	old, err := projections.Open(dir, projections.Options{Views: []projections.View{commandsV2{}}})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, old, cl.recs, len(cl.recs))
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, projections.Options{})
	if !s.Stale() {
		t.Fatal("a store of version 2 opens stale")
	}
	for _, sess := range []string{"s1", ""} {
		got, err := s.Commands(sess, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Errorf("session %q: %d active commands in the stale store, want 2 (c1 requested, c2 started)", sess, len(got))
		}
	}
}

// commandLog builds a log of command events, one each step from at,
// each caused by an exec of its command.
type commandLog struct {
	reg  *events.Registry
	at   time.Time
	step time.Duration
	recs []events.Record
	vers map[string]uint64 // next's versions
}

// next appends event p of command id at the version after its last.
func (c *commandLog) next(id string, p events.Payload) {
	if c.vers == nil {
		c.vers = map[string]uint64{}
	}
	c.vers[id]++
	c.add(id, c.vers[id], p)
}

// add appends event p of command id at version ver.
func (c *commandLog) add(id string, ver uint64, p events.Payload) {
	e := c.reg.New(p)
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), events.Aggregate{Kind: events.KindCommand, ID: id}, ver, c.at.Add(time.Duration(len(c.recs))*c.step)
	e.Cause = &events.Cause{Kind: "cli", Event: "exec", Ref: id}
	c.recs = append(c.recs, events.Record{Seq: uint64(len(c.recs) + 1), Subject: e.Agg.Subject(), Envelope: e})
}
