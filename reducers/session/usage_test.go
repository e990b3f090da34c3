package session

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// foldObs folds one line observation with sigs at minute m into s.
func foldObs(s State, line, m int, sigs ...events.Sig) State {
	e := events.Envelope{
		Type: "obs.claude.line", Agg: events.Aggregate{Kind: events.KindSession, ID: "s1"}, Ver: s.Ver + 1,
		At:   time.Date(2026, 5, 23, 23, 0, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute),
		Data: events.ClaudeLineObserved{Observation: events.Observation{Key: "k", Path: "/t.jsonl", Line: line, Signals: sigs}},
	}
	return Evolve(s, e)
}

func usageSig(id, model string, in, out int64) events.Sig {
	return events.Sig{Kind: events.SigUsage, ID: id, Usage: &events.Usage{Model: model, Input: in, Output: out, CacheRead: 100}}
}

func sum(s State) (in, out, read, calls int64) {
	for _, b := range s.Usage {
		in, out, read, calls = in+b.Input, out+b.Output, read+b.CacheRead, calls+b.Calls
	}
	return
}

func TestUsage_OncePerMessage(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	// One message written on three lines, the last with its final output.
	s = foldObs(s, 1, 0, usageSig("msg_1", "claude-opus-4-7", 6, 10))
	s = foldObs(s, 2, 0, usageSig("msg_1", "claude-opus-4-7", 6, 10))
	s = foldObs(s, 3, 0, usageSig("msg_1", "claude-opus-4-7", 6, 40))
	s = foldObs(s, 4, 1, usageSig("msg_2", "claude-opus-4-7", 5, 9))
	if in, out, read, calls := sum(s); in != 11 || out != 49 || read != 200 || calls != 2 {
		t.Fatalf("in %d out %d read %d calls %d; want 11 49 200 2", in, out, read, calls)
	}
}

func TestUsage_CumulativeDeltas(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	cum := func(in, out int64) events.Sig {
		return events.Sig{Kind: events.SigUsage, Usage: &events.Usage{Model: "gpt-5.5", Input: in, Output: out, Cumulative: true}}
	}
	s = foldObs(s, 1, 0, cum(100, 10))
	s = foldObs(s, 2, 1, cum(100, 10)) // repeated total: nothing new
	s = foldObs(s, 3, 2, cum(250, 30))
	s = foldObs(s, 4, 3, cum(50, 5)) // the total went down: a fresh counter
	if in, out, _, _ := sum(s); in != 300 || out != 35 {
		t.Fatalf("in %d out %d; want 300 35", in, out)
	}
}

func TestUsage_ModelRenamedAndMinutes(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	s = foldObs(s, 1, 0, usageSig("m1", "gpt-5.4", 1, 1))
	s = foldObs(s, 2, 30, usageSig("m2", "gpt-5.5", 2, 2)) // renamed mid-session
	s = foldObs(s, 3, 70, usageSig("m3", "gpt-5.5", 3, 3)) // the next UTC day, at 00:10
	if len(s.Usage) != 3 {
		t.Fatalf("buckets %+v", s.Usage)
	}
	if s.Usage[0].Model != "gpt-5.4" || s.Usage[1].Model != "gpt-5.5" || !s.Usage[2].Minute.Equal(time.Date(2026, 5, 24, 0, 10, 0, 0, time.UTC)) {
		t.Fatalf("buckets %+v", s.Usage)
	}
}

func TestUsage_LimitsLatest(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	lim := func(w string, pct float64) events.Sig {
		return events.Sig{Kind: events.SigRateLimit, Name: w, Limit: &events.Limit{Account: "codex/plus", Window: w, UsedPercent: pct, Minutes: 300, ResetsAt: 1779573247}}
	}
	s = foldObs(s, 1, 0, lim("primary", 1), lim("secondary", 10))
	s = foldObs(s, 2, 5, lim("primary", 4))
	if len(s.Limits) != 2 || s.Limits[0].UsedPercent != 4 || s.Limits[1].UsedPercent != 10 || !s.Limits[0].MeasuredAt.Equal(time.Date(2026, 5, 23, 23, 5, 0, 0, time.UTC)) {
		t.Fatalf("limits %+v", s.Limits)
	}
}

// TestUsage_OneHourCacheWrites keeps a message's one-hour cache writes
// apart from its five-minute ones, counted once per message id.
func TestUsage_OneHourCacheWrites(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	u := func(cw, cw1h int64) events.Sig {
		return events.Sig{Kind: events.SigUsage, ID: "msg_1", Usage: &events.Usage{Model: "claude-opus-4-7", Input: 3, Output: 5, CacheWrite: cw, CacheWrite1h: cw1h}}
	}
	s = foldObs(s, 1, 0, u(12783, 12783))
	s = foldObs(s, 2, 0, u(12783, 12783)) // the same message on another line
	if len(s.Usage) != 1 || s.Usage[0].CacheWrite != 12783 || s.Usage[0].CacheWrite1h != 12783 || s.Usage[0].Calls != 1 {
		t.Fatalf("buckets %+v", s.Usage)
	}
}

// TestUsage_OrderFree folds the same readings in every order of three and
// gets the same buckets, and keeps a long-context call and another tier
// in buckets of their own.
func TestUsage_OrderFree(t *testing.T) {
	sigs := []struct {
		m   int
		sig events.Sig
	}{
		{0, usageSig("a", "gpt-5.5", 1000, 10)},
		{3, events.Sig{Kind: events.SigUsage, ID: "b", Usage: &events.Usage{Model: "gpt-5.5", Input: 1000, CacheRead: 280_000, Output: 10}}},
		{3, events.Sig{Kind: events.SigUsage, ID: "c", Usage: &events.Usage{Model: "gpt-5.5", Input: 7, Output: 1, ServiceTier: "priority"}}},
	}
	var first []UsageBucket
	for _, p := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
		for i, k := range p {
			s = foldObs(s, i+1, sigs[k].m, sigs[k].sig)
		}
		if first == nil {
			first = s.Usage
			if len(first) != 3 || first[1].Above != 272_000 || first[2].Tier != "priority" || first[1].Above+first[2].Above != 272_000 {
				t.Fatalf("buckets %+v", first)
			}
			continue
		}
		if len(s.Usage) != len(first) {
			t.Fatalf("order %v: %+v, want %+v", p, s.Usage, first)
		}
		for i := range first {
			if s.Usage[i] != first[i] {
				t.Fatalf("order %v: %+v, want %+v", p, s.Usage, first)
			}
		}
	}
}

// TestUsage_Context keeps the last call's context use.
func TestUsage_Context(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	s = foldObs(s, 1, 0, usageSig("a", "claude-opus-4-7", 6, 10))
	s = foldObs(s, 2, 1, usageSig("b", "claude-opus-4-7", 50, 20))
	if s.Context == nil || s.Context.Tokens != 50+20+100 || s.Context.Model != "claude-opus-4-7" {
		t.Fatalf("context %+v", s.Context)
	}
}

func TestUsage_OncePerRequest(t *testing.T) {
	withReq := func(id, req string, in, out int64) events.Sig {
		s := usageSig(id, "claude-opus-4-7", in, out)
		s.Request = req
		return s
	}
	for _, tc := range []struct {
		name string
		sigs []events.Sig
	}{
		// A transcript line (message id and requestId), then the
		// telemetry event of the same call (request_id only): once.
		{"TranscriptFirst", []events.Sig{withReq("msg_1", "req_1", 6, 40), withReq("", "req_1", 6, 40)}},
		{"TelemetryFirst", []events.Sig{withReq("", "req_1", 6, 40), withReq("msg_1", "req_1", 6, 10), withReq("msg_1", "req_1", 6, 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
			for i, sig := range tc.sigs {
				s = foldObs(s, i+1, 0, sig)
			}
			s = foldObs(s, len(tc.sigs)+1, 1, withReq("", "req_2", 5, 9))
			if in, out, read, calls := sum(s); in != 11 || out != 49 || read != 200 || calls != 2 {
				t.Fatalf("in %d out %d read %d calls %d; want 11 49 200 2", in, out, read, calls)
			}
		})
	}
}

// TestUsage_TwoMessagesOneRequest: two messages named apart under one
// request id stay two, and a telemetry reading of the request (no
// message id) is taken as the first of them.
func TestUsage_TwoMessagesOneRequest(t *testing.T) {
	sig := func(id string) events.Sig {
		s := usageSig(id, "claude-opus-4-7", 3, 5)
		s.Request = "req_1"
		return s
	}
	for _, tc := range []struct {
		name string
		sigs []events.Sig
	}{
		{"Transcript", []events.Sig{sig("msg_2"), sig("msg_3")}},
		{"TelemetryFirst", []events.Sig{sig(""), sig("msg_2"), sig("msg_3")}},
		{"TelemetryBetween", []events.Sig{sig("msg_2"), sig(""), sig("msg_3")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
			for i, sg := range tc.sigs {
				s = foldObs(s, i+1, 0, sg)
			}
			if in, out, _, calls := sum(s); in != 6 || out != 10 || calls != 2 {
				t.Fatalf("in %d out %d calls %d; want 6 10 2", in, out, calls)
			}
		})
	}
}

// accountObs folds, as a decider appends it, one observation with sigs
// at minute m into s: its usage evidence set by s.Account first. It
// returns the state and the evidence recorded.
func accountObs(s State, line, m int, sigs ...events.Sig) (State, []string) {
	e := events.Envelope{
		Type: "obs.claude.line", Agg: events.Aggregate{Kind: events.KindSession, ID: "s1"}, Ver: s.Ver + 1,
		At:   time.Date(2026, 5, 23, 23, 0, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute),
		Data: events.ClaudeLineObserved{Observation: events.Observation{Key: "k", Path: "/t.jsonl", Line: line, Signals: sigs}},
	}
	e = s.Account(e)
	o, _ := events.Observed(e.Data)
	var got []string
	for _, g := range o.Signals {
		got = append(got, g.Counted)
	}
	return Evolve(s, e), got
}

// TestUsage_CountedBeyondRecent: requests reported by one source and,
// far more than RecentMessages readings later, by the other count once:
// the decider's evidence says "seen" and the fold adds nothing. Two
// messages of one request stay two; a cumulative reading, and a reading
// that names no call, carry no evidence; an adapter's own word is
// replaced. The index stays out of the session's row.
func TestUsage_CountedBeyondRecent(t *testing.T) {
	const n = 3 * RecentMessages
	req := func(i int, msg bool) events.Sig {
		s := usageSig("", "claude-opus-4-7", 3, 5)
		s.Request = "req_" + strconv.Itoa(i)
		if msg {
			s.ID = "msg_" + strconv.Itoa(i)
		}
		return s
	}
	for _, first := range []bool{true, false} { // the transcript (message ids) first, or telemetry
		s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
		line := 0
		for i := range n {
			line++
			var got []string
			if s, got = accountObs(s, line, i/10, req(i, first)); got[0] != events.CountedNew {
				t.Fatalf("first report of request %d: evidence %v", i, got)
			}
		}
		for i := range n {
			line++
			var got []string
			if s, got = accountObs(s, line, i/10, req(i, !first)); got[0] != events.CountedSeen {
				t.Fatalf("second report of request %d: evidence %v", i, got)
			}
		}
		if in, out, _, calls := sum(s); in != 3*n || out != 5*n || calls != n {
			t.Errorf("transcript first %v: in %d out %d calls %d; want %d %d %d", first, in, out, calls, 3*n, 5*n, n)
		}
	}

	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	two := req(1, true)
	s, _ = accountObs(s, 1, 0, two)
	other := two
	other.ID = "msg_other"
	forged := other
	forged.Counted = events.CountedSeen
	cum := events.Sig{Kind: events.SigUsage, Usage: &events.Usage{Input: 1, Cumulative: true}, Counted: events.CountedSeen}
	plain := events.Sig{Kind: events.SigUsage, Usage: &events.Usage{Input: 1}}
	text := events.Sig{Kind: events.SigText, Text: "hi", Counted: events.CountedNew}
	_, got := accountObs(s, 2, 0, forged, cum, plain, text)
	if want := []string{events.CountedNew, "", "", ""}; !slices.Equal(got, want) {
		t.Errorf("evidence %q, want %q", got, want)
	}
	if s.Counted.Len() != 2 {
		t.Errorf("index of one reading with a message and a request: %d ids, want 2", s.Counted.Len())
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("counted")) || bytes.Contains(b, []byte(`"keys"`)) {
		t.Errorf("the session's row holds its index: %s", b)
	}
}

// TestIDSet_AddUpTo: a set filled past its own bound drops its oldest
// chunk and keeps the newest ids; the set added to is unchanged.
func TestIDSet_AddUpTo(t *testing.T) {
	const limit = 2 * idChunk
	var s IDSet
	for i := range limit + 1 {
		s = s.AddUpTo("id"+strconv.Itoa(i), limit)
	}
	if s.Len() > limit || s.Has("id0") || !s.Has("id"+strconv.Itoa(limit)) || !s.Has("id"+strconv.Itoa(idChunk)) {
		t.Errorf("len %d (bound %d), oldest held %v, newest held %v", s.Len(), limit, s.Has("id0"), s.Has("id"+strconv.Itoa(limit)))
	}
	before := s
	_ = s.AddUpTo("another", limit)
	if !before.Equal(s) || s.Has("another") {
		t.Error("AddUpTo changed the set it was called on")
	}
}

// TestUsage_RecentMessagesNotShared: folding a new message's usage never
// changes the recent messages of the state it was folded from (a state
// is a value: an older one, kept by a caller, stays as it was), and the
// recent messages keep the last RecentMessages, oldest first.
func TestUsage_RecentMessagesNotShared(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindSession, ID: "s1"})
	var kept []State
	for i := range RecentMessages + 10 {
		kept = append(kept, s)
		s = foldObs(s, i+1, i, usageSig("msg_"+strconv.Itoa(i), "claude-opus-4-7", 1, 1))
	}
	for i, k := range kept {
		if len(k.RecentMessages) != min(i, RecentMessages) {
			t.Fatalf("state %d: %d recent messages, want %d", i, len(k.RecentMessages), min(i, RecentMessages))
		}
		for j, m := range k.RecentMessages {
			if want := "msg_" + strconv.Itoa(max(i-RecentMessages, 0)+j); m.ID != want {
				t.Fatalf("state %d, recent message %d: %s, want %s (changed by a later fold)", i, j, m.ID, want)
			}
		}
	}
	if n := len(s.RecentMessages); n != RecentMessages || s.RecentMessages[n-1].ID != "msg_"+strconv.Itoa(RecentMessages+9) {
		t.Fatalf("last state: %d recent messages ending %s", n, s.RecentMessages[n-1].ID)
	}
}
