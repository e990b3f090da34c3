package hookspool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/events"
)

// decodeObject is the reference the scan is held to: encoding/json's
// reading of b as one object, its refusals worded as adapters/claude's
// parser words them.
func decodeObject(b []byte) (map[string]json.RawMessage, int, error) {
	if i := jsonx.InvalidUTF8(b); i >= 0 {
		return nil, i + 1, fmt.Errorf("%w at byte %d", ErrInvalidUTF8, i)
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(b, &m)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return nil, int(se.Offset), fmt.Errorf("%w at byte %d: %v", ErrSyntax, se.Offset, se)
	}
	if err != nil || m == nil {
		return nil, 1, fmt.Errorf("%w: got %s", ErrNotObject, jsonx.Kind(bytes.TrimSpace(b)))
	}
	return m, 0, nil
}

// TestScanHook_AgreesWithEncodingJSON: the scan accepts exactly what
// encoding/json accepts (within the depth and key limits), words each
// refusal as the parser always has, and reads the same top-level members.
func TestScanHook_AgreesWithEncodingJSON(t *testing.T) {
	seeds := []string{
		`{"session_id":"S1","hook_event_name":"Stop","n":-0.5e+10,"a":[1,true,false,null,{"b":"\u00e9\ud83d\ude00\n"}],"e":{}, "f":[] }`,
		`{"a\u0062":1,"ab":2,"x":"\\\"\/\b\f\r\t"}`,
		`{}`, `[]`, `"s"`, `12`, `null`, ` {"a":{"b":{"c":[[[]]]}}}`,
		// Long strings, read eight bytes at a time.
		`{"long":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ é 😀 \n abcdefghijklmnopqrstuvwxyz","k":"` + strings.Repeat("~ !#$%&'()*+,-./", 4) + `"}`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`{}[]":,.-+eE0123456789 \tnultrfa\u` + "\x00\x7f")
	n := 0
	for _, seed := range seeds {
		for range 4000 {
			b := []byte(seed)
			for range 1 + r.IntN(3) {
				switch k := r.IntN(3); {
				case k == 0 && len(b) > 0: // replace
					b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
				case k == 1 && len(b) > 0: // delete
					i := r.IntN(len(b))
					b = append(b[:i:i], b[i+1:]...)
				default: // insert
					i := r.IntN(len(b) + 1)
					b = append(b[:i:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
				}
			}
			n++
			s, err := scanHook(b, 0)
			if errors.Is(err, ErrDuplicateKey) {
				continue // encoding/json keeps the last; TestScanHook_DuplicateKey
			}
			m, _, werr := decodeObject(b)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%q: scan %v, encoding/json %v", b, err, werr)
			}
			if err != nil {
				if err.Error() != werr.Error() {
					t.Fatalf("%q: scan says %q, encoding/json %q", b, err, werr)
				}
				continue
			}
			if diff := cmp.Diff(m, s.top, cmp.Transformer("string", func(r json.RawMessage) string { return string(r) })); diff != "" {
				t.Fatalf("%q: members (-encoding/json +scan):\n%s", b, diff)
			}
		}
	}
	t.Logf("%d inputs", n)
}

// TestScanHook_DuplicateKey: a member named twice in one object, at any
// depth, as written
// or through an escape, is refused naming it, before any later fault;
// the same name in nested objects is not a duplicate.
func TestScanHook_DuplicateKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"session_id":"s1","session_id":"s2","hook_event_name":"Stop"}`, `duplicate key "session_id" at byte 19`},
		{`{"session_id":"s1","hook_event_name":"Stop","hook_\u0065vent_name":"X"}`, `duplicate key "hook_event_name" at byte 44`},
		{`{"a":1,"a":2,`, `duplicate key "a" at byte 7`},
		// Nested: the gate would judge one command, the stored text holds two.
		{`{"tool_input":{"command":"ls","command":"rm -rf /"}}`, `duplicate key "command" at byte 30`},
		{`{"t":{"c\u006fmmand":"ls","command":"x"}}`, `duplicate key "command" at byte 26`},
		{`{"t":[{"x":1},{"y":1,"y":2}]}`, `duplicate key "y" at byte 21`},
		{`{"t":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"k\u0031":0}}`, `duplicate key "k1" at byte 140`},
		{`{"t":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"k17":0}}`, `duplicate key "k17" at byte 140`},
	} {
		_, err := scanHook([]byte(c.in), 0)
		if !errors.Is(err, ErrDuplicateKey) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.in, err, c.want)
		}
		if err := CheckHook([]byte(c.in)); !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("CheckHook(%s): %v", c.in, err)
		}
	}
	for _, in := range []string{
		`{"a":{"a":1,"b":{"a":2}},"b":[{"a":1},{"a":1}]}`,
		`{"t":{"a":1,"\u0061b":2,"b":3,"B":4,"a\u0000":5}}`,
		`{"t":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"k18":0}}`,
	} {
		if _, err := scanHook([]byte(in), 0); err != nil {
			t.Errorf("%s: %v, want no error", in, err)
		}
	}
}

// A subagent's session id is "agent-" and its agent id: an agent id of
// MaxIDLen-6 bytes names a session, one byte more is refused in the agent
// id's own terms.
func TestSessionAggregate_AgentIDLimit(t *testing.T) {
	longest := strings.Repeat("a", events.MaxIDLen-len("agent-"))
	a, err := SessionAggregate("S1", longest)
	if err != nil || a.ID != "agent-"+longest {
		t.Fatalf("agent id of %d bytes: %v, %v", len(longest), a, err)
	}
	_, err = SessionAggregate("S1", longest+"a")
	if !errors.Is(err, events.ErrMalformed) || !strings.Contains(err.Error(), "123 bytes: want at most 122") {
		t.Fatalf("agent id of %d bytes: %v", len(longest)+1, err)
	}
}

// TestPrepareHook_NoSumRefusesAsWithOne: without a sum (logbook-hook),
// PrepareHook refuses what it refuses with one: a payload over the send
// cap that its cut and drops cannot bring under it (a call's input of
// many small strings, which is never dropped) is ErrTooLarge, not
// ErrMustCut, which would have the hook spool it for the drain to refuse
// after the hook exited 0. One the cut brings under is ErrMustCut, as
// it came.
func TestPrepareHook_NoSumRefusesAsWithOne(t *testing.T) {
	sum := func(b []byte) [32]byte { return [32]byte{1} }
	// edits returns a MultiEdit call of n edits, its other member, extra,
	// m small strings (a member that may be dropped).
	edits := func(n, m int) []byte {
		var b strings.Builder
		b.WriteString(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_use_id":"t","tool_input":{"file_path":"/f","edits":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"old_string":"a%d","new_string":"b"}`, i)
		}
		b.WriteString(`]},"extra":[`)
		for i := range m {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"e%d"`, i)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	big := []byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_use_id":"t","tool_response":"` + strings.Repeat("x", MaxHookSend) + `"}`)
	for _, c := range []struct {
		name    string
		payload []byte
		refused bool
	}{
		{"input of many small strings", edits(30000, 0), true},
		{"a member of many small strings, dropped", edits(1000, 40000), false},
		{"one long string", big, false},
	} {
		if len(c.payload) <= MaxHookSend {
			t.Fatalf("%s: %d bytes, not over the send cap", c.name, len(c.payload))
		}
		_, withSum := PrepareHook(c.payload, sum)
		got, err := PrepareHook(c.payload, nil)
		if c.refused {
			if !errors.Is(withSum, ErrTooLarge) || !errors.Is(err, ErrTooLarge) || err.Error() != withSum.Error() {
				t.Errorf("%s: without a sum %v, with one %v; want both ErrTooLarge, worded alike", c.name, err, withSum)
			}
			continue
		}
		if withSum != nil || !errors.Is(err, ErrMustCut) || !bytes.Equal(got, c.payload) {
			t.Errorf("%s: without a sum %v (%d bytes), with one %v; want ErrMustCut with the payload as it came", c.name, err, len(got), withSum)
		}
	}
}
