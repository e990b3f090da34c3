package otel_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// manyRequests is how many API requests the sessions below make: far
// more than a session's recent readings (session.RecentMessages) and
// its recent keys (session.RecentKeys).
const manyRequests = 300

// call is one API request of a long session, as its transcript and its
// api_request event both report it.
type call struct {
	n                            int
	at                           time.Time
	in, out, read, write         int64
	twice                        bool // the transcript writes the message on two lines, as Claude Code does a message of two blocks
	request, message, line, user string
}

func longSession() []call {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cs := make([]call, manyRequests)
	for i := range cs {
		cs[i] = call{
			n: i, at: start.Add(time.Duration(i) * 10 * time.Second),
			in: 10 + int64(i%7), out: 50 + int64(i), read: 1000 + int64(i), write: int64(i%3) * 100,
			twice:   i%5 == 0,
			request: fmt.Sprintf("req_L%04d", i), message: fmt.Sprintf("msg_L%04d", i),
			user: fmt.Sprintf("00000000-0000-4000-8000-1%011d", i), line: fmt.Sprintf("00000000-0000-4000-8000-2%011d", i),
		}
	}
	return cs
}

// transcriptLines returns the transcript lines of cs in session sid, as
// Claude Code 2.1 writes them: the prompt, then the assistant's message
// with its requestId and usage (on two lines for a message of two
// blocks, the usage repeated).
func transcriptLines(sid string, cs []call) []string {
	var out []string
	prev := "null"
	common := fmt.Sprintf(`"isSidechain":false,"userType":"external","entrypoint":"cli","cwd":"/home/user/project","sessionId":%q,"version":"2.1.214","gitBranch":"main"`, sid)
	for _, c := range cs {
		ts := func(d time.Duration) string { return c.at.Add(d).Format("2006-01-02T15:04:05.000Z") }
		out = append(out, fmt.Sprintf(`{%s,"parentUuid":%s,"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":"step %d"},"promptId":"P%d","permissionMode":"default"}`,
			common, prev, c.user, ts(-time.Second), c.n, c.n))
		usage := fmt.Sprintf(`{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}`, c.in, c.out, c.read, c.write)
		parent := fmt.Sprintf("%q", c.user)
		if c.twice {
			first := strings.Replace(c.line, "-2", "-3", 1)
			out = append(out, fmt.Sprintf(`{%s,"parentUuid":%s,"type":"assistant","uuid":%q,"timestamp":%q,"requestId":%q,"message":{"model":"claude-opus-4-7","id":%q,"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"","signature":"s"}],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
				common, parent, first, ts(0), c.request, c.message, usage))
			parent = fmt.Sprintf("%q", first)
		}
		out = append(out, fmt.Sprintf(`{%s,"parentUuid":%s,"type":"assistant","uuid":%q,"timestamp":%q,"requestId":%q,"message":{"model":"claude-opus-4-7","id":%q,"type":"message","role":"assistant","content":[{"type":"text","text":"done %d"}],"stop_reason":"end_turn","stop_sequence":null,"usage":%s}}`,
			common, parent, c.line, ts(0), c.request, c.message, c.n, usage))
		prev = fmt.Sprintf("%q", c.line)
	}
	return out
}

// requestLogs returns the api_request events of cs on session sid, as
// Claude Code exports them (the fixture's resource and scope; the
// attributes of its documented api_request event).
func requestLogs(f fixture, sid string, cs []call) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range f.Resource {
		putAttr(rl.Resource().Attributes(), k, v)
	}
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(f.Scope)
	for _, c := range cs {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(c.at))
		lr.Body().SetStr("claude_code.api_request")
		a := lr.Attributes()
		for k, v := range map[string]string{
			"event.name": "api_request", "event.timestamp": c.at.Format("2006-01-02T15:04:05.000Z"), "app.version": "2.1.214",
			"prompt.id": fmt.Sprintf("P%d", c.n), "model": "claude-opus-4-7", "request_id": c.request, "speed": "normal",
			"query_source": "main", "session.id": sid,
		} {
			a.PutStr(k, v)
		}
		for k, v := range map[string]int64{
			"event.sequence": int64(c.n), "duration_ms": 1500, "input_tokens": c.in, "output_tokens": c.out,
			"cache_read_tokens": c.read, "cache_creation_tokens": c.write,
		} {
			a.PutInt(k, v)
		}
	}
	return ld
}

// usageFixture is a log with the receiver's and the transcript's
// ingesters on it, and the long session's calls.
type usageFixture struct {
	t     *testing.T
	f     fixture
	l     *natslog.Log
	url   string
	in    *claude.Ingester
	calls []call
	dir   string // where the transcripts are written
}

func newUsageFixture(t *testing.T) *usageFixture {
	l, _, url := newReceiver(t)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	return &usageFixture{t: t, f: loadFixture(t), l: l, url: url, in: in, calls: longSession(), dir: t.TempDir()}
}

// telemetry sends the api_request events of cs on session sid in one
// export request, and fails unless every record is taken.
func (u *usageFixture) telemetry(sid string, cs []call) {
	u.t.Helper()
	resp := post(u.t, u.url+"/v1/logs", "application/x-protobuf", "", mustProto(u.t, requestLogs(u.f, sid, cs)))
	if resp.StatusCode != 200 {
		u.t.Fatalf("export of %d records: %s", len(cs), resp.Status)
	}
}

// transcript writes the transcript lines of the first n calls of
// session sid to its file (lines already there are kept) and imports
// what is new of it.
func (u *usageFixture) transcript(sid string, n int) {
	u.t.Helper()
	path := filepath.Join(u.dir, sid+".jsonl")
	body := strings.Join(transcriptLines(sid, u.calls[:n]), "\n") + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		u.t.Fatal(err)
	}
	if _, err := u.in.ImportFile(u.t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: sid}, nil); err != nil {
		u.t.Fatal(err)
	}
}

// state folds session sid from the log.
func (u *usageFixture) state(sid string) session.State {
	u.t.Helper()
	st, _ := fold(u.t, u.l, sid)
	return st
}

// cost prices session st's usage with the shipped price table.
func cost(t *testing.T, st session.State) float64 {
	t.Helper()
	lines, err := usage.Group([]session.State{st}, usage.Query{By: usage.BySession})
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, ln := range lines {
		c, _, err := usage.Shipped().LineCost(ln)
		if err != nil {
			t.Fatal(err)
		}
		sum += c
	}
	return sum
}

// sameSpend fails unless got's usage, its tokens and its cost are want's.
func sameSpend(t *testing.T, what string, got, want session.State) {
	t.Helper()
	if d := cmp.Diff(want.Usage, got.Usage); d != "" {
		t.Errorf("%s: usage buckets (-transcript alone +got):\n%s", what, d)
	}
	if g, w := spentOf(got), spentOf(want); g != w {
		t.Errorf("%s: spent %+v, the transcript alone %+v", what, g, w)
	}
	if g, w := cost(t, got), cost(t, want); g != w {
		t.Errorf("%s: cost $%.6f, the transcript alone $%.6f", what, g, w)
	}
}

// rederived fails unless replay --rederive's check agrees with every
// observation of session sid, its usage evidence included.
func (u *usageFixture) rederived(sid string) {
	u.t.Helper()
	rep, err := replay.Rederive(u.t.Context(), u.l, sid)
	if err != nil {
		u.t.Fatal(err)
	}
	if !rep.Agree() || rep.Observations == 0 {
		var b strings.Builder
		_ = rep.WriteText(&b)
		u.t.Errorf("rederive %s:\n%s", sid, b.String())
	}
}

// TestUsageOnce_LongSession: a session of 300 API requests, far past the
// readings a session keeps (64), reported by its api_request events and
// by its transcript, counts each request once in either order, however
// long after the first source the second comes: its usage, tokens and
// cost are the transcript's alone. The telemetry's export sent again
// whole (300 records, past the 256 keys a session keeps) appends
// nothing; replay --rederive agrees with every decision and every
// observation's evidence.
func TestUsageOnce_LongSession(t *testing.T) {
	t.Parallel() // its own log, receiver and transcripts
	u := newUsageFixture(t)
	const (
		alone           = "5e551011-0000-4000-8000-000000000100"
		telemetryAlone  = "5e551011-0000-4000-8000-000000000101"
		telemetryFirst  = "5e551011-0000-4000-8000-000000000102"
		transcriptFirst = "5e551011-0000-4000-8000-000000000103"
	)
	u.transcript(alone, manyRequests)
	want := u.state(alone)
	if s := spentOf(want); s.Calls != manyRequests {
		t.Fatalf("the transcript alone counts %d calls, want %d", s.Calls, manyRequests)
	}

	u.telemetry(telemetryAlone, u.calls)
	sameSpend(t, "telemetry alone", u.state(telemetryAlone), want)

	u.telemetry(telemetryFirst, u.calls)
	u.transcript(telemetryFirst, manyRequests)
	sameSpend(t, "telemetry, then the transcript", u.state(telemetryFirst), want)

	u.transcript(transcriptFirst, manyRequests)
	u.telemetry(transcriptFirst, u.calls)
	sameSpend(t, "the transcript, then telemetry", u.state(transcriptFirst), want)

	// The export sent again whole appends nothing.
	last, err := u.l.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	u.telemetry(telemetryFirst, u.calls)
	u.telemetry(telemetryAlone, u.calls)
	if now, _ := u.l.LastSeq(t.Context()); now != last {
		t.Errorf("a batch of %d records sent again appended %d events", manyRequests, now-last)
	}
	sameSpend(t, "telemetry sent twice, then the transcript", u.state(telemetryFirst), want)

	// The evidence says what was counted and what was not.
	_, recs := fold(t, u.l, telemetryFirst)
	counts := map[string]int{}
	for _, r := range recs {
		o, _ := events.Observed(r.Data)
		if o == nil {
			continue
		}
		for _, g := range o.Signals {
			if g.Kind == events.SigUsage {
				counts[r.Type+" "+g.Counted]++
			}
		}
	}
	twice := manyRequests / 5
	if w := map[string]int{"obs.otel new": manyRequests, "obs.claude.line seen": manyRequests + twice}; !cmp.Equal(counts, w) {
		t.Errorf("usage signals by type and evidence: %v, want %v", counts, w)
	}
	for _, id := range []string{alone, telemetryAlone, telemetryFirst, transcriptFirst} {
		u.rederived(id)
	}
}

// TestUsageOnce_Interleaved: the two sources of the long session
// delivered in random interleavings (seeded; the seed is in the
// failure) of random runs, the transcript growing as it is written,
// give the transcript alone's usage, tokens and cost; a projection kept
// up as they arrive and one replayed from the log have the same state
// hash; replay --rederive agrees.
func TestUsageOnce_Interleaved(t *testing.T) {
	t.Parallel() // its own log, receiver and transcripts
	u := newUsageFixture(t)
	const alone = "5e551011-0000-4000-8000-000000000200"
	u.transcript(alone, manyRequests)
	want := u.state(alone)
	live, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	catchUp := func(s *projections.Store) {
		t.Helper()
		if _, err := s.Apply(t.Context(), u.l.Read(t.Context(), s.Checkpoint()+1), 7); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	for k := range 4 {
		sid := fmt.Sprintf("5e551011-0000-4000-8000-0000000002%02d", k+1)
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		sent, written := 0, 0
		for sent < manyRequests || written < manyRequests {
			n := 1 + rng.IntN(60)
			if written == manyRequests || sent < manyRequests && rng.IntN(2) == 0 {
				// Telemetry's runs, at times one sent again.
				end := min(sent+n, manyRequests)
				from := sent
				if rng.IntN(4) == 0 {
					from = max(sent-rng.IntN(80), 0)
				}
				u.telemetry(sid, u.calls[from:end])
				sent = end
			} else {
				written = min(written+n, manyRequests)
				u.transcript(sid, written)
			}
			catchUp(live)
		}
		got := u.state(sid)
		sameSpend(t, fmt.Sprintf("interleaving %d (seed %d)", k, seed), got, want)
		row, err := live.Session(sid)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(got.Usage, row.Usage); d != "" {
			t.Errorf("interleaving %d (seed %d): the live projection's usage (-fold +row):\n%s", k, seed, d)
		}
		u.rederived(sid)
	}
	replayed, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer replayed.Close()
	catchUp(live)
	if _, err := replayed.Apply(t.Context(), u.l.Read(t.Context(), 0), 0); err != nil {
		t.Fatal(err)
	}
	lh, lseq, err := live.Hash()
	if err != nil {
		t.Fatal(err)
	}
	rh, rseq, err := replayed.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if lh != rh || lseq != rseq {
		t.Errorf("state hash live %s at %d, replayed %s at %d (seed %d)", lh, lseq, rh, rseq, seed)
	}
}

// TestUsageOnce_HashUnchanged: a log with no request reported twice
// projects to the same state hash as the same log without the usage
// evidence (as logs were written before it was kept): its evidence is
// "new" but for the second line of a message written on two, which the
// session's recent readings hold, so it counts as before. And rederive
// names an observation whose recorded evidence the session's index
// does not bear out.
func TestUsageOnce_HashUnchanged(t *testing.T) {
	t.Parallel() // its own log and receiver
	u := newUsageFixture(t)
	const (
		transcriptOnly = "5e551011-0000-4000-8000-000000000300"
		telemetryOnly  = "5e551011-0000-4000-8000-000000000301"
	)
	u.transcript(transcriptOnly, manyRequests)
	u.telemetry(telemetryOnly, u.calls)
	var recs, bare []events.Record
	for r, err := range u.l.Read(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		if o, ok := events.Observed(r.Data); ok {
			c := *o
			c.Signals = append([]events.Sig(nil), o.Signals...)
			for i := range c.Signals {
				c.Signals[i].Counted = ""
			}
			r.Data, _ = events.WithObservation(r.Data, c)
		}
		bare = append(bare, r)
	}
	hash := func(rs []events.Record) string {
		t.Helper()
		s, err := projections.OpenMem(projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Apply(t.Context(), func(yield func(events.Record, error) bool) {
			for _, r := range rs {
				if !yield(r, nil) {
					return
				}
			}
		}, 0); err != nil {
			t.Fatal(err)
		}
		h, _, err := s.Hash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h, b := hash(recs), hash(bare); h != b {
		t.Errorf("state hash with the evidence %s, without %s", h, b)
	}

	// A recorded "new" that the index says was counted is a divergence.
	_, srecs := fold(t, u.l, telemetryOnly)
	var forged []events.Record
	flipped := false
	for _, r := range srecs {
		if o, ok := events.Observed(r.Data); ok && !flipped && len(o.Signals) > 0 && o.Signals[0].Counted == events.CountedNew && strings.Contains(o.Signals[0].Request, "0007") {
			c := *o
			c.Signals = append([]events.Sig(nil), o.Signals...)
			c.Signals[0].Counted = events.CountedSeen
			r.Data, _ = events.WithObservation(r.Data, c)
			flipped = true
		}
		forged = append(forged, r)
	}
	if !flipped {
		t.Fatal("no observation of req_L0007")
	}
	rep := replay.RederiveRecords(forged)
	if rep.Agree() || rep.First == nil || !strings.Contains(rep.First.Evidence, `recorded "seen", today "new"`) {
		t.Errorf("rederive of a forged evidence: %+v", rep)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), `usage evidence: signals[0] (message "", request "req_L0007")`) {
		t.Errorf("rederive's report of a forged evidence: %v\n%s", err, text.String())
	}
}
