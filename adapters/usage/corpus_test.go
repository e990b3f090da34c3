package usage

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// corpusLine is what the hand rules read of one recorded line: a Claude
// Code assistant message's usage, or a Codex CLI turn_context's model and
// token_count's totals.
type corpusLine struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Message   struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *struct {
			In  int64 `json:"input_tokens"`
			Out int64 `json:"output_tokens"`
			CW  int64 `json:"cache_creation_input_tokens"`
			CR  int64 `json:"cache_read_input_tokens"`
			CC  struct {
				H1 int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
		} `json:"usage"`
	} `json:"message"`
	Payload struct {
		Type  string `json:"type"`
		Model string `json:"model"`
		Info  *struct {
			Total *struct {
				In     int64 `json:"input_tokens"`
				Cached int64 `json:"cached_input_tokens"`
				Write  int64 `json:"cache_write_input_tokens"`
				Out    int64 `json:"output_tokens"`
			} `json:"total_token_usage"`
			Last *struct {
				In int64 `json:"input_tokens"`
			} `json:"last_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// eachLine calls fn with every line of the recording at path, in order,
// decoded; lines that are not JSON are skipped.
func eachLine(t *testing.T, path string, fn func(l corpusLine)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l corpusLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		fn(l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// handTotals sums a recording's usage by the rules a person would apply
// reading it, independent of the adapters:
//
//   - Claude Code: every "assistant" line whose message has a model not
//     in angle brackets and a usage object; a message id seen on several
//     lines counts once, each field at its largest value on those lines.
//   - Codex CLI: the last token_count whose info has total_token_usage;
//     input without the cached part, the cached part as cache reads.
//
// Lines that are not JSON are skipped.
func handTotals(t *testing.T, path string) Tokens {
	t.Helper()
	type cu struct{ in, out, cw, cw1h, cr int64 }
	byID := map[string]*cu{}
	var order []string
	var last *Tokens
	eachLine(t, path, func(l corpusLine) {
		if l.Type == "assistant" && l.Message.Usage != nil && !strings.HasPrefix(l.Message.Model, "<") {
			u := l.Message.Usage
			c := byID[l.Message.ID]
			if c == nil {
				c = &cu{}
				byID[l.Message.ID] = c
				order = append(order, l.Message.ID)
			}
			c.in, c.out, c.cw, c.cr = max(c.in, u.In), max(c.out, u.Out), max(c.cw, u.CW), max(c.cr, u.CR)
			c.cw1h = max(c.cw1h, u.CC.H1)
		}
		if l.Type == "event_msg" && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Total != nil {
			tt := l.Payload.Info.Total
			last = &Tokens{Input: tt.In - tt.Cached, CacheRead: tt.Cached, Output: tt.Out}
		}
	})
	var sum Tokens
	for _, id := range order {
		c := byID[id]
		sum.Input += c.in
		sum.Output += c.out
		sum.CacheWrite += c.cw
		sum.CacheWrite1h += c.cw1h
		sum.CacheRead += c.cr
	}
	if last != nil {
		sum = sum.Plus(*last)
	}
	return sum
}

// viewTotals sums the usage the session projection would hold for agg.
func viewTotals(t *testing.T, l events.Log, id string) (Tokens, session.State) {
	t.Helper()
	st := ingesttest.StateOf(t, l, id)
	var tok Tokens
	for _, b := range st.Usage {
		tok.add(b)
	}
	tok.Calls, tok.Reasoning = 0, 0
	return tok, st
}

// corpusFile is one imported recording and the session its usage went to.
type corpusFile struct{ path, session string }

// importCorpus imports every recording under root into a new log:
// Claude Code's transcript.jsonl files (with their subagents' files) and
// Codex CLI's rollouts. It returns the log, each file with its session,
// and a function that imports them all again. It skips the test when
// there is no recording.
func importCorpus(t *testing.T, root string) (*natslog.Log, []corpusFile, func()) {
	t.Helper()
	log := ingesttest.OpenLog(t)
	cl, err := claude.NewIngester(claude.IngestConfig{Log: log, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cx, err := codex.NewIngester(codex.IngestConfig{Log: log, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := claude.Discover(filepath.Join(root, "claude"))
	if err != nil {
		t.Fatal(err)
	}
	rollouts, _ := filepath.Glob(filepath.Join(root, "codex", "*", "transcript.jsonl"))
	importAll := func() []corpusFile {
		var files []corpusFile
		for _, tr := range ts {
			if filepath.Base(tr.Path) != "transcript.jsonl" {
				continue
			}
			rs, err := cl.ImportTranscript(t.Context(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				files = append(files, corpusFile{r.Path, r.Session})
			}
		}
		for _, p := range rollouts {
			r, err := cx.ImportFile(t.Context(), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, corpusFile{r.Path, r.Session})
		}
		return files
	}
	files := importAll()
	if len(files) == 0 {
		t.Skip("no recordings")
	}
	return log, files, func() { importAll() }
}

// TestCorpus_Usage imports every recording and compares each file's
// usage in the view with the hand-readable sum of the file; a subagent's
// transcript is its own session's, never its parent's. Importing again
// changes nothing.
func TestCorpus_Usage(t *testing.T) {
	root := ingesttest.Corpus(t)
	log, files, again := importCorpus(t, root)
	check := func() {
		for _, f := range files {
			rel, _ := filepath.Rel(root, f.path)
			want := handTotals(t, f.path)
			got, st := viewTotals(t, log, f.session)
			t.Logf("%-62s %-40s in %6d out %5d cw %6d cr %7d", rel, f.session, got.Input, got.Output, got.CacheWrite, got.CacheRead)
			if got != want {
				t.Errorf("%s (session %s): view %+v, by hand %+v", rel, f.session, got, want)
			}
			if filepath.Base(filepath.Dir(f.path)) == "subagents" && (st.Parent == "" || !strings.HasPrefix(f.session, "agent-")) {
				t.Errorf("%s: subagent usage in session %s (parent %q)", rel, f.session, st.Parent)
			}
		}
	}
	check()
	before, _ := log.LastSeq(t.Context())
	again()
	if after, _ := log.LastSeq(t.Context()); after != before {
		t.Errorf("re-import appended %d events", after-before)
	}
	check()
}

// TestCorpus_ForkedRollout forks the recorded fork-conversation rollout
// the way Codex does (its own session_meta, then the origin's history,
// token_count totals included, then its own turn whose totals go on from
// the origin's) and checks each session holds its own spend only: the
// origin what the hand rule reads off the recording, the fork the growth
// of its own turn.
func TestCorpus_ForkedRollout(t *testing.T) {
	root := ingesttest.Corpus(t)
	src := filepath.Join(root, "codex", "fork-conversation", "transcript.jsonl")
	recorded, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("no fork-conversation recording: %v", err)
	}
	const (
		origin = "019e55eb-cdbc-78a1-84a6-c98c8e34a495"
		fork   = "019e5700-0000-7000-8000-000000000001" // made after the origin's last turn
		turn   = "019e5700-0001-7000-8000-000000000002"
	)
	if !strings.Contains(string(recorded), `"id":"`+origin+`"`) {
		t.Skipf("the recording is not of thread %s", origin)
	}
	last := handTotals(t, src) // the origin's last running total
	dir := filepath.Join(t.TempDir(), "sessions", "2026", "05", "24")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	originPath := filepath.Join(dir, "rollout-2026-05-23T17-39-37-"+origin+".jsonl")
	forkPath := filepath.Join(dir, "rollout-2026-05-24T10-00-00-"+fork+".jsonl")
	if err := os.WriteFile(originPath, recorded, 0o644); err != nil {
		t.Fatal(err)
	}
	line := func(sec int, typ, payload string) string {
		return fmt.Sprintf(`{"timestamp":"2026-05-24T10:00:%02d.000Z","type":%q,"payload":%s}`+"\n", sec, typ, payload)
	}
	var b strings.Builder
	b.WriteString(line(0, "session_meta", `{"id":"`+fork+`","forked_from_id":"`+origin+`","cwd":"/home/user/p","cli_version":"0.130.0","source":"cli"}`))
	b.Write(recorded)
	b.WriteString(line(1, "turn_context", `{"turn_id":"`+turn+`","cwd":"/home/user/p","model":"gpt-5.5","sandbox_policy":{"type":"workspace-write"}}`))
	b.WriteString(line(1, "event_msg", `{"type":"task_started","turn_id":"`+turn+`"}`))
	b.WriteString(line(1, "event_msg", `{"type":"user_message","message":"and now?"}`))
	in, cached, out := last.Input+last.CacheRead+1000, last.CacheRead+800, last.Output+7
	b.WriteString(line(3, "event_msg", fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":100,"total_tokens":%d}}}`, in, cached, out, in+out))) // reasoning: the origin's 13 and more
	b.WriteString(line(4, "event_msg", `{"type":"task_complete","turn_id":"`+turn+`"}`))
	if err := os.WriteFile(forkPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	log := ingesttest.OpenLog(t)
	cx, err := codex.NewIngester(codex.IngestConfig{Log: log, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{originPath, forkPath} {
		if _, err := cx.ImportFile(t.Context(), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := viewTotals(t, log, origin); got != last {
		t.Errorf("origin: view %+v, by hand %+v", got, last)
	}
	want := Tokens{Input: 200, CacheRead: 800, Output: 7}
	got, st := viewTotals(t, log, fork)
	if got != want || st.ForkedFrom != origin {
		t.Errorf("fork (from %q): view %+v, want its own turn only %+v", st.ForkedFrom, got, want)
	}
}

// vendorRate is a model's price per million tokens as its vendor
// publishes it, written here apart from the shipped tables: Anthropic's
// pricing page (platform.claude.com/docs/en/about-claude/pricing: a
// five-minute cache write 1.25x input, a one-hour one 2x, a cache read
// 0.1x) and OpenAI's model pages (developers.openai.com/api/docs/models:
// cached input; gpt-5.6-sol at its promotional price until 2026-11-21,
// cache writes 1.25x input; other models' cache writes billed as input;
// past 272K input tokens, input 2x and output 1.5x).
type vendorRate struct{ in, out, cw5m, cw1h, cr float64 }

func vendorRateOf(t *testing.T, model string, at time.Time, prompt int64) vendorRate {
	t.Helper()
	anthropic := func(in, out float64) vendorRate { return vendorRate{in, out, in * 1.25, in * 2, in / 10} }
	openai := func(in, out, cached float64) vendorRate {
		if prompt > 272_000 {
			in, out, cached = in*2, out*1.5, cached*2
		}
		return vendorRate{in, out, in, in, cached}
	}
	switch model {
	case "claude-opus-4-7":
		return anthropic(5, 25)
	case "claude-sonnet-4-6":
		return anthropic(3, 15)
	case "claude-haiku-4-5-20251001":
		return anthropic(1, 5)
	case "gpt-5.4":
		return openai(2.5, 15, 0.25)
	case "gpt-5.5":
		return openai(5, 30, 0.5)
	case "gpt-5.6-sol":
		if at.Before(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) {
			r := openai(4, 20, 0.4)
			r.cw5m, r.cw1h = r.in*1.25, r.in*1.25
			return r
		}
		r := openai(5, 30, 0.5)
		r.cw5m, r.cw1h = r.in*1.25, r.in*1.25
		return r
	}
	t.Fatalf("no vendor rate written down for %q: add it from the vendor's page", model)
	return vendorRate{}
}

// handCost prices a recording by the vendors' rates, by the hand rules of
// handTotals: each Claude Code message once (its one-hour cache writes at
// the one-hour rate), each Codex call as the growth of the running total
// (cached input and cache writes parts of the input) at the model of the
// last turn_context.
func handCost(t *testing.T, path string) float64 {
	t.Helper()
	type msg struct {
		model                 string
		at                    time.Time
		in, out, cw, cw1h, cr int64
	}
	byID := map[string]*msg{}
	var order []string
	var cost float64
	var model string
	var prev [4]int64
	eachLine(t, path, func(l corpusLine) {
		if l.Type == "turn_context" && l.Payload.Model != "" {
			model = l.Payload.Model
		}
		if l.Type == "assistant" && l.Message.Usage != nil && !strings.HasPrefix(l.Message.Model, "<") {
			u := l.Message.Usage
			m := byID[l.Message.ID]
			if m == nil {
				m = &msg{model: l.Message.Model, at: l.Timestamp}
				byID[l.Message.ID] = m
				order = append(order, l.Message.ID)
			}
			m.in, m.out, m.cw, m.cr, m.cw1h = max(m.in, u.In), max(m.out, u.Out), max(m.cw, u.CW), max(m.cr, u.CR), max(m.cw1h, u.CC.H1)
		}
		if l.Type == "event_msg" && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Total != nil {
			tt := l.Payload.Info.Total
			cur := [4]int64{tt.In, tt.Cached, tt.Write, tt.Out}
			d := [4]int64{cur[0] - prev[0], cur[1] - prev[1], cur[2] - prev[2], cur[3] - prev[3]}
			prev = cur
			var prompt int64
			if l.Payload.Info.Last != nil {
				prompt = l.Payload.Info.Last.In
			}
			r := vendorRateOf(t, model, l.Timestamp, prompt)
			fresh := d[0] - d[1] - d[2]
			cost += (float64(fresh)*r.in + float64(d[1])*r.cr + float64(d[2])*r.cw5m + float64(d[3])*r.out) / 1e6
		}
	})
	for _, id := range order {
		m := byID[id]
		r := vendorRateOf(t, m.model, m.at, m.in+m.cw+m.cr)
		cost += (float64(m.in)*r.in + float64(m.out)*r.out + float64(m.cw-m.cw1h)*r.cw5m + float64(m.cw1h)*r.cw1h + float64(m.cr)*r.cr) / 1e6
	}
	return cost
}

// TestCorpus_Cost imports every recording and compares the cost Logbook
// gives each one's session (priced by the shipped tables) with handCost,
// the vendors' rates applied by hand, to a millionth of a dollar; and the
// cost by day in Asia/Kolkata adds up to the same.
func TestCorpus_Cost(t *testing.T) {
	root := ingesttest.Corpus(t)
	log, files, _ := importCorpus(t, root)
	tb := Shipped()
	var states []session.State
	var total, hand float64
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.path)
		_, st := viewTotals(t, log, f.session)
		states = append(states, st)
		want := handCost(t, f.path)
		sp := SpendOf([]session.State{st}, tb)
		got := 0.0
		if sp.Cost != nil {
			got = *sp.Cost
		}
		if len(sp.Unpriced) > 0 || math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: Logbook $%.6f (unpriced %v), by the vendors' rates $%.6f", rel, got, sp.Unpriced, want)
		}
		t.Logf("%-62s $%.6f", rel, got)
		total += got
		hand += want
	}
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	rep, err := NewReport(states, Query{By: ByDay, Loc: kolkata}, tb, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var days float64
	for _, l := range rep.Lines {
		if l.Cost == nil {
			t.Errorf("day %s %s: no price", l.Key, l.Model)
			continue
		}
		days += *l.Cost
	}
	if math.Abs(days-hand) > 1e-6 || math.Abs(total-hand) > 1e-6 {
		t.Errorf("by day in Asia/Kolkata $%.6f, by session $%.6f, by the vendors' rates $%.6f", days, total, hand)
	}
}
