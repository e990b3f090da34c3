package natslog

import (
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// testTime is the decision time of every test event (µs precision, as stored).
var testTime = time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)

// startServer starts an embedded server on dir, shut down at test end.
func startServer(t testing.TB, dir string) *Server {
	t.Helper()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatalf("StartEmbedded(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// openLog opens a Log on s, closed at test end (before s shuts down).
func openLog(t testing.TB, s *Server) *Log {
	t.Helper()
	return openLogWith(t, s, Config{})
}

// openLogWith opens a Log on s with cfg, closed at test end (before s
// shuts down).
func openLogWith(t testing.TB, s *Server, cfg Config) *Log {
	t.Helper()
	l, err := Open(t.Context(), s.Conn(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// newLog starts a server in a fresh directory and opens a Log on it.
func newLog(t testing.TB) (*Log, *Server) {
	t.Helper()
	s := startServer(t, t.TempDir())
	return openLog(t, s), s
}

// session returns the session aggregate with the given id.
func session(id string) events.Aggregate {
	return events.Aggregate{Kind: events.KindSession, ID: id}
}

// envelope returns a valid envelope of p for agg at ver.
func envelope(reg *events.Registry, agg events.Aggregate, ver uint64, p events.Payload) events.Envelope {
	e := reg.New(p)
	e.ID = ulid.Make()
	e.Agg = agg
	e.Ver = ver
	e.At = testTime
	e.Cause = &events.Cause{Kind: "cli", Event: "start", Ref: "r1"}
	return e
}

// decision returns a batch of n events for agg starting at ver, after
// expect: a session.started if ver is 1, then activity changes.
func decision(reg *events.Registry, agg events.Aggregate, expect, ver uint64, n int) events.Batch {
	b := events.Batch{Agg: agg, Expect: expect}
	for i := range n {
		v := ver + uint64(i)
		var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:%d", v)}
		if v == 1 {
			p = events.SessionStarted{Agent: "cli", Cwd: "/work"}
		}
		b.Events = append(b.Events, envelope(reg, agg, v, p))
	}
	return b
}

// mustAppend appends b and fails the test on error.
func mustAppend(t testing.TB, l *Log, b events.Batch) events.Appended {
	t.Helper()
	app, err := l.Append(t.Context(), b)
	if err != nil {
		t.Fatalf("Append(%s, expect %d): %v", b.Agg, b.Expect, err)
	}
	return app
}

// lastSeq returns l's last sequence and fails the test on error.
func lastSeq(t testing.TB, l *Log) uint64 {
	t.Helper()
	seq, err := l.LastSeq(t.Context())
	if err != nil {
		t.Fatalf("LastSeq: %v", err)
	}
	return seq
}

// readAll collects Read(from), failing on any error.
func readAll(t testing.TB, l *Log, from uint64) []events.Record {
	t.Helper()
	var recs []events.Record
	for r, err := range l.Read(t.Context(), from) {
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		recs = append(recs, r)
	}
	return recs
}
