package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestUsage_Signals: an assistant message's usage becomes one usage
// signal with its message id; a refused reading yields no signal and a
// problem, and the line keeps its other signals.
func TestUsage_Signals(t *testing.T) {
	t.Parallel()
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	line := func(usage string) []byte {
		return fmt.Appendf(nil, `{"type":"assistant","uuid":"a1","sessionId":"s1","timestamp":"2026-04-24T19:19:02.584Z","message":{"id":"msg_1","model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"%s}}`, usage)
	}
	usageOf := func(o events.Observation) *events.Usage {
		for _, s := range o.Signals {
			if s.Kind == events.SigUsage {
				if s.ID != "msg_1" {
					t.Errorf("usage id %q", s.ID)
				}
				return s.Usage
			}
		}
		return nil
	}
	o, err := p.Line("t.jsonl", 1, line(`,"usage":{"input_tokens":6,"cache_creation_input_tokens":12819,"cache_read_input_tokens":16742,"output_tokens":115,"server_tool_use":{"web_search_requests":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if u := usageOf(o); u == nil || *u != (events.Usage{Model: "claude-opus-4-7", Input: 6, Output: 115, CacheWrite: 12819, CacheRead: 16742}) || len(o.Problems) != 0 {
		t.Fatalf("usage %+v problems %v", u, o.Problems)
	}
	// One-hour cache writes, and what bills a call otherwise: a tier, fast
	// mode, US-only inference.
	o, _ = p.Line("t.jsonl", 1, line(`,"usage":{"input_tokens":6,"cache_creation_input_tokens":12783,"cache_read_input_tokens":16742,"output_tokens":6,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":12783},"service_tier":"standard","speed":"standard","inference_geo":"not_available"}`))
	if u := usageOf(o); u == nil || u.CacheWrite1h != 12783 || u.CacheWrite != 12783 || u.ServiceTier != "" {
		t.Fatalf("one-hour writes: %+v %v", u, o.Problems)
	}
	o, _ = p.Line("t.jsonl", 1, line(`,"usage":{"input_tokens":6,"output_tokens":6,"service_tier":"priority","speed":"fast","inference_geo":"us"}`))
	if u := usageOf(o); u == nil || u.ServiceTier != "priority+speed-fast+geo-us" {
		t.Fatalf("tier: %+v", u)
	}
	for name, bad := range map[string]string{
		"1h over all":    `,"usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":5,"cache_creation":{"ephemeral_1h_input_tokens":9}}`,
		"negative":       `,"usage":{"input_tokens":-5,"output_tokens":1}`,
		"non-numeric":    `,"usage":{"input_tokens":"many","output_tokens":1}`,
		"fractional":     `,"usage":{"input_tokens":1.5,"output_tokens":1}`,
		"absurd":         `,"usage":{"input_tokens":1,"output_tokens":99999999999999999}`,
		"usage a string": `,"usage":"lots"`,
		"input missing":  `,"usage":{"output_tokens":1,"cache_read_input_tokens":5}`,
		"output null":    `,"usage":{"input_tokens":1,"output_tokens":null}`,
	} {
		o, err := p.Line("t.jsonl", 1, line(bad))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if u := usageOf(o); u != nil {
			t.Errorf("%s: usage %+v", name, u)
		}
		if len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "usage") {
			t.Errorf("%s: problems %v", name, o.Problems)
		}
		if len(o.Signals) != 2 { // text, turn_end
			t.Errorf("%s: signals %+v", name, o.Signals)
		}
	}
	// Cache counts may be absent: 0.
	if o, _ := p.Line("t.jsonl", 1, line(`,"usage":{"input_tokens":4,"output_tokens":2}`)); usageOf(o) == nil || len(o.Problems) != 0 {
		t.Errorf("no cache counts: %+v", o)
	}
	// No usage, or a synthetic message: no signal, no problem.
	for _, l := range [][]byte{line(""), []byte(`{"type":"assistant","message":{"id":"m","model":"<synthetic>","content":[],"usage":{"input_tokens":0,"output_tokens":0}}}`)} {
		o, err := p.Line("t.jsonl", 1, l)
		if err != nil || usageOf(o) != nil || len(o.Problems) != 0 {
			t.Errorf("%s: %+v %v", l, o, err)
		}
	}
}

// TestUsage_RefusedIsWarned: importing a line whose usage is refused
// warns, naming the file, the line and the field; the line is recorded
// and counts nothing, and the lines around it count.
func TestUsage_RefusedIsWarned(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	path := filepath.Join(t.TempDir(), "5e551011-0000-4000-8000-000000000031.jsonl")
	asst := func(uuid, msg, usage string) string {
		return fmt.Sprintf(`{"type":"assistant","uuid":%q,"sessionId":"5e551011-0000-4000-8000-000000000031","timestamp":"2026-04-24T19:19:02.584Z","message":{"id":%q,"model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":%s}}`+"\n", uuid, msg, usage)
	}
	body := asst("a1", "m1", `{"input_tokens":-5,"output_tokens":1}`) + asst("a2", "m2", `{"output_tokens":"lots"}`) + asst("a3", "m3", `{"input_tokens":2,"output_tokens":3}`)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "5e551011-0000-4000-8000-000000000031"}
	r, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || r.Appended != 3 {
		t.Fatalf("%+v, %v", r, err)
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], ":1: usage refused: field \"message.usage.input_tokens\": -5 is negative") ||
		!strings.Contains(r.Warnings[1], ":2: usage refused: field \"message.usage.input_tokens\": missing") {
		t.Errorf("warnings %q", r.Warnings)
	}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	var in3, out3 int64
	for _, rec := range recs {
		if o, ok := events.Observed(rec.Data); ok {
			for _, s := range o.Signals {
				if s.Usage != nil {
					in3, out3 = in3+s.Usage.Input, out3+s.Usage.Output
				}
			}
		}
	}
	if in3 != 2 || out3 != 3 {
		t.Errorf("usage counted: input %d, output %d; want the third line's 2 and 3", in3, out3)
	}
}
