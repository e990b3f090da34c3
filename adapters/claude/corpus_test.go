package claude

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// short renders a signal compactly: kind[:name][#id][=status][@task][&bg].
func short(s events.Sig) string {
	var b strings.Builder
	b.WriteString(s.Kind)
	if s.Name != "" {
		b.WriteString(":" + s.Name)
	}
	if s.ID != "" {
		b.WriteString("#" + s.ID)
	}
	if s.Status != "" {
		b.WriteString("=" + s.Status)
	}
	if s.Task != "" {
		b.WriteString("@" + s.Task)
	}
	if s.Background {
		b.WriteString("&bg")
	}
	return b.String()
}

// parseFile parses every complete line of the transcript at path and
// returns the observations.
func parseFile(t *testing.T, p *Parser, path string) []events.Observation {
	t.Helper()
	var obs []events.Observation
	for l, err := range ingest.ReadLines(path, 0) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if l.Torn {
			t.Fatalf("%s: line %d torn in a finished recording", path, l.N)
		}
		o, err := p.Line(path, l.N, l.Bytes)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		obs = append(obs, o)
	}
	return obs
}

// sequence returns the short forms of every signal of obs, in order.
func sequence(obs []events.Observation) []string {
	var seq []string
	for _, o := range obs {
		for _, s := range o.Signals {
			seq = append(seq, short(s))
		}
	}
	return seq
}

// TestCorpus parses every line of every recorded transcript and subagent
// transcript, logs each file's signal sequence, and checks the facts each
// scenario exists to show.
func TestCorpus(t *testing.T) {
	t.Parallel()
	corpus := ingesttest.Corpus(t, "claude")
	files, err := filepath.Glob(filepath.Join(corpus, "*", "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	subs, err := filepath.Glob(filepath.Join(corpus, "*", "subagents", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, subs...)
	if len(files) == 0 {
		t.Skipf("no transcripts under %s", corpus)
	}
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[string][]string{}
	for _, f := range files {
		rel, _ := filepath.Rel(corpus, f)
		obs := parseFile(t, p, f)
		for _, o := range obs {
			for _, pr := range o.Problems {
				t.Errorf("%s:%d (%s): problem: %s", rel, o.Line, o.Kind, pr)
			}
			if len(o.Raw) > p.MaxRaw() {
				t.Errorf("%s:%d: raw %d bytes over the cap", rel, o.Line, len(o.Raw))
			}
		}
		seqs[rel] = sequence(obs)
		t.Logf("%s: %s", rel, strings.Join(seqs[rel], " "))
	}

	// has reports whether seq holds want, in order, as a subsequence.
	has := func(seq []string, want ...string) bool {
		i := 0
		for _, s := range seq {
			if i < len(want) && s == want[i] {
				i++
			}
		}
		return i == len(want)
	}
	facts := []struct {
		file string
		want []string // a subsequence of the file's signals
		not  []string // signals the file must not yield
	}{
		{"2-1_basic-turn/transcript.jsonl", []string{"prompt#d482bf9d-40ee-4abf-b33d-de6dc037b330", "text", "turn_end:end_turn"}, nil},
		{"2-2_auto-executed-tool-call/transcript.jsonl", []string{
			"prompt#feaa15d6-4075-46c0-92ec-97f9817fc650", "tool_use:Bash#toolu_01JnbJc7QW1fSWeb9c4tF4eA",
			"tool_result#toolu_01JnbJc7QW1fSWeb9c4tF4eA=ok", "text", "turn_end:end_turn", "turn_end:turn_duration",
		}, nil},
		{"3-3_background-process/transcript.jsonl", []string{
			"tool_use:Bash#toolu_0164wBRoFCtAUpwBtavhf5CB&bg",
			"tool_result#toolu_0164wBRoFCtAUpwBtavhf5CB=backgrounded@b1zlcp11f",
			"background_done=completed@b1zlcp11f",
			"turn_end:end_turn",
		}, nil},
		// The recording stops before the interrupt marker was written: the
		// prompt opens a turn that nothing in the file closes.
		{"2-20_user-esc-interrupt/transcript.jsonl", []string{"prompt#6a09b141-cf0e-49be-b298-9bc4dfe17e40"}, []string{"turn_end:end_turn", "text"}},
		{"permission-hook-denial/transcript.jsonl", []string{
			"tool_use:Bash#toolu_017TgGJSGaQuuCNwL2UUjgkm", "tool_result#toolu_017TgGJSGaQuuCNwL2UUjgkm=error", "turn_end:end_turn",
		}, nil},
		{"2-12_context-compaction/transcript.jsonl", []string{
			"prompt#435befb5-4f1d-42bd-afe0-70ebd1433bf3", "turn_end:end_turn", "compact_end:manual", "compact_end:summary",
			"prompt#5dce62dc-b7d4-4ee5-933c-49b8335dfb86", "turn_end:end_turn",
		}, nil},
		// The question is the reply's text ending in "?"; the reducer reads
		// it from the text signal that precedes the turn end.
		{"2-17_user-blocking-question/transcript.jsonl", []string{"prompt#8f1a0e00-4e6b-445d-b470-336e58c32dde", "text", "turn_end:end_turn"}, nil},
		{"2-16_oversized-transcript-line/transcript.jsonl", []string{"prompt#7d69cbdd-8111-4dfd-94df-cd80dde51317", "thinking", "text", "turn_end:end_turn"}, nil},
		{"subagent-spawn/transcript.jsonl", []string{
			"tool_use:Agent#toolu_011VLA5nubMbAxeXLzaBxRFD", "tool_use:Agent#toolu_012DReUnukw9L6TJQiwXmcXQ", "tool_use:Agent#toolu_014b1ybD9GTsyaY5DxfyvZru",
			"tool_result#toolu_012DReUnukw9L6TJQiwXmcXQ=ok@a5435e8f32c1127d1", "tool_result#toolu_014b1ybD9GTsyaY5DxfyvZru=ok@a8662875f7da1388c",
			"tool_result#toolu_011VLA5nubMbAxeXLzaBxRFD=ok@a31559a022d9a2cb6", "turn_end:end_turn",
		}, nil},
		{"subagent-spawn/subagents/agent-a5435e8f32c1127d1.jsonl", []string{"prompt#00fa1bf8-3684-4b11-8b45-cc276499e122", "tool_use:Glob#toolu_01FmYQzQKeSrcwksoQoWKmTs", "tool_result#toolu_01FmYQzQKeSrcwksoQoWKmTs=ok", "turn_end:end_turn"}, nil},
	}
	for _, f := range facts {
		seq, ok := seqs[filepath.FromSlash(f.file)]
		if !ok {
			t.Errorf("%s: not in the corpus", f.file)
			continue
		}
		if !has(seq, f.want...) {
			t.Errorf("%s: signals %v\ndo not hold, in order, %v", f.file, seq, f.want)
		}
		for _, n := range f.not {
			if slices.Contains(seq, n) {
				t.Errorf("%s: signals %v hold %s", f.file, seq, n)
			}
		}
	}

	// The oversized line keeps its signals and is cut only past the cap.
	small, err := NewParser(Config{MaxRaw: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	obs := parseFile(t, small, filepath.Join(corpus, "2-16_oversized-transcript-line", "transcript.jsonl"))
	cut := 0
	for _, o := range obs {
		if o.Cut != nil {
			cut++
			if o.Cut.Kept != len(o.Raw) || o.Cut.Size <= int64(o.Cut.Kept) || len(o.Cut.SHA256) != 64 {
				t.Errorf("line %d: cut %+v, raw %d bytes", o.Line, *o.Cut, len(o.Raw))
			}
		}
	}
	if cut == 0 {
		t.Error("no line of the oversized scenario was cut at 4 KiB")
	}
}

// TestCorpus_Discover finds the recorded subagent transcripts beside
// their parent.
func TestCorpus_Discover(t *testing.T) {
	t.Parallel()
	corpus := ingesttest.Corpus(t, "claude")
	dir := filepath.Join(corpus, "subagent-spawn")
	got, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != filepath.Join(dir, "transcript.jsonl") || got[0].SessionID != "transcript" {
		t.Fatalf("Discover(%s) = %+v", dir, got)
	}
	var ids []string
	for _, s := range got[0].Subagents {
		ids = append(ids, s.AgentID)
		if s.SessionID != "transcript" {
			t.Errorf("subagent %s: session %q", s.Path, s.SessionID)
		}
	}
	want := []string{"a31559a022d9a2cb6", "a5435e8f32c1127d1", "a8662875f7da1388c"}
	if !slices.Equal(ids, want) {
		t.Errorf("subagent ids = %v, want %v", ids, want)
	}
}
