package claude

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
)

// prepareReference is PrepareHook as it was before the one-pass scan:
// encoding/json over the whole payload, redact.CutStrings, the cut
// member, and a check of the result. The scan must give the same bytes.
func prepareReference(b []byte) ([]byte, error) {
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) <= MaxHookSend {
		if _, _, err := decodeObject(b); err != nil {
			return nil, &HookError{Err: err}
		}
		return b, nil
	}
	if _, _, err := decodeObject(b); err != nil {
		return nil, &HookError{Err: err}
	}
	cut, ok := redact.CutStrings(string(b), MaxHookString)
	sum := sha256.Sum256(b)
	i := strings.IndexByte(cut, '{')
	if !ok || i < 0 {
		return nil, &HookError{Err: ErrNotObject}
	}
	member := fmt.Sprintf(`{%q:{"size":%d,"sha256":%q}`, CutMember, len(b), hex.EncodeToString(sum[:]))
	if !strings.HasPrefix(strings.TrimLeft(cut[i+1:], " \t\r\n"), "}") {
		member += ","
	}
	out := cut[:i] + member + cut[i+1:]
	if len(out) > MaxHookSend {
		return []byte(out), &HookError{Err: ErrTooLarge}
	}
	return []byte(out), nil
}

// sameButDropped reports why got, a prepared payload that dropped
// members, is not ref (the payload with its strings cut, over the cap)
// with members replaced by their size and listed in the cut member; ""
// when it is.
func sameButDropped(got, ref []byte) string {
	var g, r map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(ref, &r); err != nil {
		return err.Error()
	}
	var cut struct{ Dropped []string }
	if err := json.Unmarshal(g[CutMember], &cut); err != nil || len(cut.Dropped) == 0 {
		return fmt.Sprintf("cut member %s lists nothing dropped", g[CutMember])
	}
	if len(g) != len(r) {
		return fmt.Sprintf("%d members, reference %d", len(g), len(r))
	}
	for k, rv := range r {
		gv := g[k]
		switch {
		case k == CutMember:
		case slices.Contains(cut.Dropped, k):
			if want := fmt.Sprintf(`{"logbook_dropped":%d}`, len(rv)); string(gv) != want {
				return fmt.Sprintf("dropped %s is %s, want %s", k, gv, want)
			}
		case !bytes.Equal(gv, rv):
			return fmt.Sprintf("member %s differs", k)
		}
	}
	return ""
}

// randomText returns n bytes or so of JSON string content (no quotes)
// mixing plain ASCII, punctuation, multi-byte runes, escapes, escaped
// surrogate pairs and lone escaped surrogates.
func randomText(r *rand.Rand, n int) string {
	parts := []string{"a", "bc", " ", ",", "(", "é", "世", "😀", `\n`, `\t`, `\"`, `\\`, `\/`, `\u00e9`, `\u4e16`, `\ud83d\ude00`, `\ud800`, `\udc00x`, `\u0000`, "xyz", "\u00a0"}
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(4) == 0 {
			b.WriteString(parts[r.IntN(len(parts))])
		} else {
			b.WriteString(strings.Repeat("w", 1+r.IntN(40)))
		}
	}
	return b.String()
}

// TestPrepareHook_MatchesReference: over-size payloads of random strings
// (escapes, surrogates, runes about the cut point, long member names)
// are cut to the same bytes as before the one-pass scan.
func TestPrepareHook_MatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		var b strings.Builder
		fmt.Fprintf(&b, ` {"session_id":"s%d","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"t1","tool_response":{`, i)
		for j := range 8 + r.IntN(40) {
			if j > 0 {
				b.WriteString(",")
			}
			key := fmt.Sprintf("k%d", j)
			if r.IntN(10) == 0 {
				key = randomText(r, MaxHookString+r.IntN(200))
			}
			size := r.IntN(300)
			if r.IntN(2) == 0 {
				size = MaxHookString - 50 + r.IntN(MaxHookString)
			}
			fmt.Fprintf(&b, `%q : ["%s", %d, {"x":"%s"}]`, key, randomText(r, size), j, randomText(r, r.IntN(MaxHookString*2)))
		}
		b.WriteString(`},"pad":"` + strings.Repeat("p", MaxHookSend) + `"}` + "\n")
		payload := []byte(b.String())
		want, werr := prepareReference(payload)
		got, gerr := PrepareHook(payload)
		if errors.Is(werr, ErrTooLarge) {
			// Over the cap with its strings cut: the largest members
			// are dropped until it fits.
			if gerr != nil || len(got) > MaxHookSend {
				t.Fatalf("payload %d: %d bytes, err %v; want its largest members dropped to fit", i, len(got), gerr)
			}
			if why := sameButDropped(got, want); why != "" {
				t.Fatalf("payload %d: %s", i, why)
			}
			continue
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("payload %d: err %v, reference %v", i, gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload %d: %d bytes, reference %d bytes; first difference at %d", i, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPrepareHook_DropsWhatDoesNotFit: a PostToolUse whose tool_response
// lists 20,000 paths (920 KB, no string long enough to cut) is recorded
// with tool_response replaced by its size, named in the cut member, and
// the call it reports still ends.
func TestPrepareHook_DropsWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString(`{"session_id":"S1","hook_event_name":"PostToolUse","tool_name":"Glob","tool_use_id":"tg1","tool_input":{"pattern":"**/*"},"tool_response":{"filenames":[`)
	for i := range 20_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"/home/user/project/src/module_%05d/file_%05d.go"`, i, i)
	}
	b.WriteString(`],"numFiles":20000}}`)
	out, err := PrepareHook(b.Bytes())
	if err != nil {
		t.Fatalf("PrepareHook(%d bytes): %v", b.Len(), err)
	}
	if len(out) > MaxHookSend {
		t.Fatalf("%d bytes prepared, over %d", len(out), MaxHookSend)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatal(err)
	}
	if got := string(top["tool_response"]); !strings.HasPrefix(got, `{"logbook_dropped":`) {
		t.Errorf("tool_response = %.80s; want it dropped", got)
	}
	if got := string(top[CutMember]); !strings.Contains(got, `"dropped":["tool_response"]`) || !strings.Contains(got, fmt.Sprintf(`"size":%d`, b.Len())) {
		t.Errorf("%s = %s", CutMember, got)
	}
	if string(top["tool_input"]) != `{"pattern":"**/*"}` || string(top["tool_use_id"]) != `"tg1"` {
		t.Errorf("kept members changed: %s", out)
	}
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.Hook(out)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cut == nil || o.Cut.Size != int64(b.Len()) {
		t.Errorf("observation cut = %+v", o.Cut)
	}
	var result bool
	for _, s := range o.Signals {
		if s.ID == "tg1" && s.Kind == events.SigToolResult {
			result = true
		}
	}
	if !result {
		t.Errorf("no tool result for tg1 in %+v", o.Signals)
	}
	again, err := PrepareHook(b.Bytes())
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("PrepareHook is not the same twice: %v", err)
	}
}

// TestPrepareHook_Hostile: hostile payloads are refused at once with an
// error naming what and where, small or huge.
func TestPrepareHook_Hostile(t *testing.T) {
	t.Parallel()
	const head = `{"session_id":"S1","hook_event_name":"PostToolUse","tool_use_id":"t1",`
	// manyKeys puts n members in tool_input, which the gate reviews and
	// a cut never drops.
	manyKeys := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(head + `"tool_input":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"key_%06d":"v"`, i)
		}
		b.WriteString("}}")
		return b.Bytes()
	}
	nest := func(depth int) []byte {
		return []byte(head + `"tool_response":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}")
	}
	tests := []struct {
		name    string
		payload []byte
		is      error
		message string
	}{
		{"malformed", []byte(`{"session_id":"S1",`), ErrSyntax, "claude hook: malformed JSON at byte 19: unexpected end of JSON input"},
		{"malformed huge", append([]byte(head+`"tool_response":"`+strings.Repeat("x", 6<<20)), `"]`...), ErrSyntax, "claude hook: malformed JSON at byte 6291545: invalid character ']' after object key:value pair"},
		{"binary", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), ErrSyntax, "claude hook: malformed JSON at byte 1: invalid character '\\x7f' looking for beginning of value"},
		{"invalid UTF-8 huge", append([]byte(head+`"tool_response":"`+strings.Repeat("x", 6<<20)), "\xff\"}"...), ErrInvalidUTF8, "claude hook: invalid UTF-8 at byte 6291543"},
		{"NUL in a string", []byte(head + "\"tool_response\":\"a\x00b\"}"), ErrSyntax, "claude hook: malformed JSON at byte 89: invalid character '\\x00' in string literal"},
		{"too deep", nest(MaxHookDepth + 1), ErrTooDeep, "claude hook: nested too deep: more than 512 levels at byte 597"},
		{"200,000 levels", nest(200_000), ErrTooDeep, "claude hook: nested too deep: more than 512 levels at byte 597"},
		{"300,000 keys", manyKeys(300_000), ErrTooManyKeys, "claude hook: too many keys: more than 65536 object members at byte 1114128"},
		{"60,000 keys, 1 MB", manyKeys(60_000), ErrTooLarge, "claude hook: payload too large: 1020085 bytes; with each string cut to 4096 bytes and every member dropped but those naming the session, the event and the call and the call's input, still 1020207 bytes, at most 262144 (\"tool_input\" alone is 1020001)"},
		{"not an object", []byte(`[` + strings.Repeat(`"x",`, 100_000) + `0]`), ErrNotObject, "claude hook: not a JSON object: got array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := PrepareHook(tt.payload)
			took := time.Since(start)
			if !errors.Is(err, tt.is) || err.Error() != tt.message {
				t.Errorf("error %v\n want %v: %s", err, tt.is, tt.message)
			}
			t.Logf("%d bytes refused in %v", len(tt.payload), took)
		})
	}
	t.Run("at the limits", func(t *testing.T) {
		if _, err := PrepareHook(nest(MaxHookDepth)); err != nil {
			t.Errorf("%d levels: %v", MaxHookDepth, err)
		}
		if _, err := PrepareHook(manyKeys(MaxHookKeys - 5)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d keys: %v, want ErrTooLarge", MaxHookKeys, err)
		}
		var p Parser
		if _, err := p.Hook(nest(MaxHookDepth + 1)); !errors.Is(err, ErrTooDeep) {
			t.Errorf("the parser takes %d levels: %v", MaxHookDepth+1, err)
		}
	})
}
