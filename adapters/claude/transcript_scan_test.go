package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
)

// parseBoth parses line n, b, with p as it reads JSON now (in one pass)
// and as it did before (decoded into maps by encoding/json, decodeMaps),
// and fails t when the two differ in the observation or the error.
func parseBoth(t *testing.T, p *Parser, path string, n int, b []byte) {
	t.Helper()
	got, gerr := p.Line(path, n, b)
	decodeMaps.Store(true)
	want, werr := p.Line(path, n, b)
	decodeMaps.Store(false)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s:%d %q: observation differs from the map decoding (-maps +one pass):\n%s", path, n, b, d)
	}
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s:%d %q: error %v, map decoding %v", path, n, b, gerr, werr)
	}
	var gl, wl *LineError
	if errors.As(gerr, &gl) != errors.As(werr, &wl) || gl != nil && gl.Col != wl.Col {
		t.Fatalf("%s:%d %q: error %#v, map decoding %#v", path, n, b, gerr, werr)
	}
	for _, e := range []error{ErrSyntax, ErrInvalidUTF8, ErrNotObject} {
		if errors.Is(gerr, e) != errors.Is(werr, e) {
			t.Fatalf("%s:%d %q: error %v, map decoding %v", path, n, b, gerr, werr)
		}
	}
}

// scanLines returns the transcript lines the differential tests start
// from: testdata's, the generated bench transcript's, hand-made lines at
// the parser's edges and, when present, the shared corpus's.
func scanLines(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join("testdata", "lifecycle", "*.jsonl"))
	files = append(files, more...)
	if dir, err := os.Getwd(); err == nil {
		corpus, _ := filepath.Glob(filepath.Join(dir, "..", "..", "..", "shared", "corpus", "claude", "*", "*.jsonl"))
		files = append(files, corpus...)
	}
	for _, f := range files {
		for l, err := range ingest.ReadLines(f, 0) {
			if err == nil && !l.Torn {
				out = append(out, slices.Clone(l.Bytes))
			}
		}
	}
	for n := 1; n <= 13; n++ {
		out = append(out, benchLine("5e551011-0000-4000-8000-000000000007", n))
	}
	for _, s := range edgeLines {
		out = append(out, []byte(s))
	}
	return out
}

// edgeLines are lines at the edges of what the parser reads: blocks of
// every kind, members of the wrong type, escaped and duplicate keys,
// case variants of the keys textOf reads, answers, notifications, errors.
var edgeLines = []string{
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"TYPE":"text","Text":"b"},{"type":"text","text":5},null,"x",{"type":"image"}],"is_error":true}]},"toolUseResult":"User rejected tool use"}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"tool_result","tool_use_id":"t2","content":"{\"task_id\":\"b1\",\"status\":\"completed\"}"},{"type":"text","text":"[Request interrupted by user for tool use]"}]},"toolUseResult":{"backgroundTaskId":"b9"}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"q1","content":"answered"}]},"toolUseResult":{"questions":[{"question":"Which?"},{"question":"Which?"},{"question":5},"x"],"answers":{"Which?":" Blue ","Other":"x"}}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"<retrieval_status>done</retrieval_status><task_id>b2</task_id><status>failed</status>"}]},"tool_use_result":{"task":{"task_id":"b3","status":"killed"}}}`,
	`{"type":"user","message":{"content":"<task-notification><task-id>b4</task-id><status>completed</status><summary>s</summary></task-notification>"},"promptId":"p"}`,
	`{"type":"user","message":{"content":[{"type":"text","text":"<command-name>/x</command-name>"},{"type":"image"}]},"promptId":"p2"}`,
	`{"type":"user","message":{"content":[{"type":"image"}]},"promptId":"p3"}`,
	`{"type":"user","isCompactSummary":true}`, `{"type":"user","isMeta":"yes","message":5}`,
	`{"type":"user","message":{"content":7}}`, `{"type":"user","message":{"content":null}}`,
	`{"type":"assistant","message":{"model":"claude-x","id":"m1","content":[{"type":"tool_use","id":"a1","name":"AskUserQuestion","input":{"questions":[{"question":"Q?"}],"answers":{}}},{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"sleep 1","run_in_background":true}},{"type":"weird"},{"type":"server_tool_use"},{"type":"redacted_thinking"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}}`,
	`{"type":"assistant","message":{"model":"<synthetic>","content":"  ","usage":{"input_tokens":1}}}`,
	`{"type":"assistant","message":{"model":"m","content":"hello","stop_reason":"end_turn","usage":{"input_tokens":-1,"output_tokens":2}}}`,
	`{"type":"assistant","message":{"model":"m","content":[],"usage":{"input_tokens":1.5,"output_tokens":"2"}}}`,
	`{"type":"assistant","message":{"model":"m","content":{"a":1},"usage":{"input_tokens":99999999999999999999,"output_tokens":2}}}`,
	`{"type":"assistant","isApiErrorMessage":true,"message":{"content":[{"type":"text","text":"API Error: 500"}]},"error":"unknown"}`,
	`{"type":"assistant","isApiErrorMessage":true,"message":{"content":null},"error":"overloaded"}`,
	`{"type":"system","subtype":"api_error","error":{"status":529,"error":{"type":"x","error":{"type":"o","message":"Overloaded"}}},"retryAttempt":1,"maxRetries":10}`,
	`{"type":"system","subtype":"api_error","error":"plain","retryAttempt":2}`,
	`{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto"}}`,
	`{"type":"system","subtype":"turn_duration"}`, `{"type":"system","subtype":5}`,
	`{"type":"attachment","attachment":{"type":"queued_command","content":[{"type":"text","text":"<task-notification><task-id>b5</task-id><status>killed</status></task-notification>"}]}}`,
	`{"type":"attachment","attachment":{"type":"queued_command","prompt":"<task-notification><task-id>b6</task-id><status>error</status></task-notification>"}}`,
	`{"type":"attachment","attachment":"x"}`,
	`{"type":"queue-operation","operation":"enqueue","content":"<task-notification><task-id>b7</task-id><status>done</status></task-notification>"}`,
	`{"type":"permission-mode","permissionMode":"plan"}`, `{"type":"ai-title","aiTitle":"T"}`, `{"type":"custom-title","customTitle":"C"}`,
	`{"type":"summary"}`, `{"type":"mystery"}`, `{"uuid":"u"}`, `{"type":null}`, `{"type":7}`,
	`{"type":"user","type":"assistant","message":{"model":"dup","content":[{"type":"text","text":"second type wins"}]}}`,
	`{"\u0074ype":"user","message":{"content":"escaped key \u00e9 \ud83d\ude00 \ud800 tab\tnl\n"},"sessionId":"s\u0031"}`,
	`{"type":"user","message":{"content":"password=hunter2222 and sk-ant-abcdefghijklmnopqrstuvwxyz"},"cwd":"/home/u/AKIAABCDEFGHIJKLMNOP"}`,
	`{"type":"user","parentUuid":null,"logicalParentUuid":"l1","timestamp":"2026-01-01T00:00:00Z","agentId":"a","version":"2.1.0","gitBranch":"main","permissionMode":"default"}`,
	`{"type":"user","uuid":5,"parentUuid":[],"timestamp":{},"sessionId":true}`,
	` {"type":"summary"} `, "{\"type\":\"summary\"}\r\n", `[]`, `"x"`, `null`, `5`, `{`, `{"type":"user",}`, "{\"type\":\"\xff\"}", `{"a":1}x`,
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	`{"type":"user","message":{"content":"` + strings.Repeat("long text ", 8000) + `"}}`,
	`{"type":"summary","x":[` + strings.Repeat("0,", jsonx.MaxValues) + `0]}`,
}

// mutateLine returns b with a few bytes changed, inserted or removed,
// drawn from JSON's punctuation: mostly near misses of valid lines.
func mutateLine(r *rand.Rand, b []byte) []byte {
	const alphabet = "{}[]\",:\\ u0123456789abcdeftrunlsE.-\n\t\x00\xc3\xa9\xff"
	b = slices.Clone(b)
	for range 1 + r.IntN(3) {
		c := alphabet[r.IntN(len(alphabet))]
		switch k := r.IntN(3); {
		case k == 0 && len(b) > 0:
			b[r.IntN(len(b))] = c
		case k == 1:
			b = slices.Insert(b, r.IntN(len(b)+1), c)
		case len(b) > 0:
			i := r.IntN(len(b))
			b = slices.Delete(b, i, i+1)
		}
	}
	return b
}

// reshape returns the valid line b with some of its values replaced by
// values of other types (null, a number, a string, an array, an object,
// a boolean), so members turn up absent, null or of the wrong type; nil
// when b is not a JSON object.
func reshape(r *rand.Rand, b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	others := []any{nil, 3.0, "s", []any{}, map[string]any{}, true, []any{map[string]any{"type": "text", "text": "t"}}}
	var walk func(v any) any
	walk = func(v any) any {
		if r.IntN(8) == 0 {
			return others[r.IntN(len(others))]
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return nil
	}
	return out
}

// TestLine_OnePassAgreesWithMaps: reading lines in one pass gives the
// same observation and error as decoding them into maps did, for every
// line of the testdata, the shared corpus (when present), the bench
// transcript and edge cases, and for 12,000 mutants of them (bytes
// changed, values swapped for other types), with a small Raw cap so cut
// lines are compared too.
func TestLine_OnePassAgreesWithMaps(t *testing.T) {
	t.Parallel()
	lines := scanLines(t)
	for _, maxRaw := range []int{0, 300} {
		p, err := NewParser(Config{MaxRaw: maxRaw, RedactPatterns: []string{`hunter\d+`}})
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range lines {
			parseBoth(t, p, "t.jsonl", i+1, b)
		}
	}
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 2))
	n := 12000
	if testing.Short() {
		n = 1200
	}
	for i := range n {
		b := lines[r.IntN(len(lines))]
		if len(b) > 8<<10 {
			continue
		}
		if i%2 == 0 {
			b = mutateLine(r, b)
		} else if b = reshape(r, b); b == nil {
			continue
		}
		parseBoth(t, p, "m.jsonl", i+1, b)
	}
}

// FuzzLineOnePass: on every input, reading a line in one pass gives the
// observation and error that decoding it into maps gave. Seeds: the lines
// of TestLine_OnePassAgreesWithMaps.
func FuzzLineOnePass(f *testing.F) {
	for _, b := range scanLines(f) {
		if len(b) < 4<<10 {
			f.Add(b)
		}
	}
	p, err := NewParser(Config{MaxRaw: 512})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		parseBoth(t, p, "f.jsonl", 1, b)
	})
}
