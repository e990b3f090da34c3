package events

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// TestMarshalJSON_ObservationSameBytes holds Envelope.MarshalJSON of an
// observation, whose data appendObservation writes by hand, to the bytes
// json.Marshal gives for the same envelope's wire struct, over
// observations of every payload type that embeds one, with every field
// set or left empty at random, strings holding every kind of byte
// encoding/json escapes, and the shapes appendObservation leaves to
// json.Marshal (a Process, Sender, Tick or Limit; a Received out of UTC
// or of years 0…9999).
func TestMarshalJSON_ObservationSameBytes(t *testing.T) {
	if !observationFieldsKnown() {
		t.Fatal("observationFieldsKnown is false: a type appendObservation writes changed; update appendObservation and observationFields")
	}
	reg := NewRegistry()
	pieces := []string{"", "a", "Bash", "\"", "\\", "<", ">", "&", "\x00", "\x1f", "\n", "\t", "\b", "\f", "\r",
		"\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\x80", "😀", "</script>", " ", `{"a":"b"}`}
	rng := rand.New(rand.NewPCG(3, 4))
	str := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		s := ""
		for range rng.IntN(6) {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	num := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int64N(1 << 40)
		default:
			return rng.Int64N(1 << 50)
		}
	}
	usage := func() *Usage {
		u := &Usage{Model: str(), Input: num(), Output: num(), CacheWrite: num(), CacheRead: num(), Reasoning: num(),
			CacheWrite1h: num(), ServiceTier: str(), Cumulative: rng.IntN(2) == 0}
		if rng.IntN(3) == 0 {
			u.RunningTotal = &Usage{Input: num(), Model: str()}
		}
		return u
	}
	wrap := []func(Observation) Payload{
		func(o Observation) Payload { return ClaudeLineObserved{o} },
		func(o Observation) Payload { return ClaudeHookObserved{o} },
		func(o Observation) Payload { return CodexLineObserved{o} },
		func(o Observation) Payload { return CodexNotifyObserved{o} },
		func(o Observation) Payload { return AgentLineObserved{o} },
		func(o Observation) Payload { return HarnessObserved{o} },
		func(o Observation) Payload { return OTelObserved{o} },
	}
	fast := 0
	for i := range 5000 {
		o := Observation{Key: str(), Parser: str(), Path: str(), Line: int(num()), Kind: str(), UUID: str(), ParentUUID: str(),
			AgentTime: str(), Raw: str(), Live: rng.IntN(2) == 0, More: rng.IntN(2) == 0, RewrittenFrom: str(), Copied: int(num())}
		if rng.IntN(3) > 0 {
			o.Meta = Meta{SessionID: str(), AgentID: str(), AgentType: str(), Cwd: str(), Model: str(), Version: str(),
				GitBranch: str(), AgentMode: str(), Title: str(), Agent: str(), ForkedFrom: str(), Depth: int(num())}
		}
		for range rng.IntN(4) {
			s := Sig{Kind: str(), ID: str(), Name: str(), Task: str(), Status: str(), Text: str(), Background: rng.IntN(2) == 0,
				AgentType: str(), By: str(), Request: str(), Counted: str()}
			if rng.IntN(2) == 0 {
				s.Usage = usage()
			}
			if rng.IntN(40) == 0 {
				s.Limit = &Limit{Window: str(), UsedPercent: rng.Float64() * 100}
			}
			o.Signals = append(o.Signals, s)
		}
		if rng.IntN(5) == 0 {
			o.Signals = []Sig{} // empty, not nil: left out as nil is
		}
		if rng.IntN(3) == 0 {
			o.Cut = &Cut{Size: num(), SHA256: str(), Kept: int(num())}
		}
		for range rng.IntN(3) {
			o.Problems = append(o.Problems, str())
		}
		if rng.IntN(2) == 0 {
			o.Fingerprint = &Fingerprint{Line: int(num()), Offset: num(), End: num(), SHA256: str()}
		}
		switch rng.IntN(8) {
		case 0: // zero
		case 1:
			o.Received = time.Date(2026, 5, 1, 10, 0, 0, rng.IntN(1e9), time.FixedZone("x", 3600))
		case 2:
			o.Received = time.Date(10000+rng.IntN(10), 1, 1, 0, 0, 0, 0, time.UTC)
		case 3:
			o.Received = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		default:
			o.Received = time.Date(1+rng.IntN(9998), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e9), time.UTC)
		}
		switch rng.IntN(6) {
		case 0:
			o.Written = time.Date(2026, 5, 1, 10, 0, 0, rng.IntN(1e9), time.FixedZone("x", 3600))
		case 1:
			o.Written = time.Date(1+rng.IntN(9998), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e9), time.UTC)
		}
		switch rng.IntN(30) {
		case 0:
			o.Process = &Process{PID: 1, Host: str()}
		case 1:
			o.Sender = &Sender{UID: 1000, User: str()}
		case 2:
			o.Tick = &Tick{Now: time.Unix(0, 0).UTC()}
		}
		e := reg.New(wrap[rng.IntN(len(wrap))](o))
		e.ID = ulid.Make()
		e.Agg = Aggregate{Kind: KindSession, ID: "s1"}
		e.Ver = uint64(i + 1)
		e.At = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
		got, gotErr := e.MarshalJSON()
		data, err := json.Marshal(e.Data)
		if err != nil {
			if gotErr == nil {
				t.Fatalf("observation %d: json.Marshal: %v, MarshalJSON: no error\n%s", i, err, got)
			}
			continue
		}
		if gotErr != nil {
			t.Fatalf("observation %d: %v", i, gotErr)
		}
		want, err := json.Marshal(wire{ID: e.ID, Type: e.Type, V: e.V, Agg: e.Agg, Ver: e.Ver, At: e.At.UTC().Format(TimeFormat), Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("observation %d:\n got %s\nwant %s", i, got, want)
		}
		checkAppendJSON(t, e, got)
		if _, ok := appendObservation(nil, &o); ok {
			fast++
		}
	}
	if fast < 2500 {
		t.Errorf("appendObservation wrote %d of 5000 observations; want most", fast)
	}
}

// checkAppendJSON holds e.AppendJSON to want, e's MarshalJSON bytes,
// appended after a prefix that it must keep.
func checkAppendJSON(t *testing.T, e Envelope, want []byte) {
	t.Helper()
	prefix := []byte("prefix,")
	got, err := e.AppendJSON(prefix[:len(prefix):len(prefix)])
	if err != nil {
		t.Fatalf("AppendJSON: %v", err)
	}
	if string(got) != string(prefix)+string(want) {
		t.Fatalf("AppendJSON:\n got %s\nwant %s%s", got, prefix, want)
	}
}

// TestObservationFieldsKnown turns appendObservation off when a type it
// writes gains a field: the check it runs finds a struct unlike the one
// it was written for.
func TestObservationFieldsKnown(t *testing.T) {
	type grown struct {
		Key string `json:"key"`
		New string `json:"new"`
	}
	// The answer the package keeps is taken before the list is swapped.
	observationFieldsKnown()
	saved := observationFields
	defer func() { observationFields = saved }()
	observationFields = map[reflect.Type][]string{reflect.TypeFor[grown](): {"Key string key"}}
	if observationFieldsCheck() {
		t.Fatal("a struct with a field the list lacks passed the check")
	}
	observationFields = map[reflect.Type][]string{reflect.TypeFor[grown](): {"Key string key", "New string new"}}
	if !observationFieldsCheck() {
		t.Fatal("a struct with the listed fields failed the check")
	}
}

// BenchmarkMarshalJSON_Observation encodes the envelope of one
// transcript line's observation (a tool call of the bench transcripts:
// its raw line, meta, two signals, a fingerprint) through
// json.Marshal ("reflect", appendObservation turned off) and through
// appendObservation ("hand"). Run:
//
//	go test -run '^$' -bench MarshalJSON_Observation -benchmem ./events/
func BenchmarkMarshalJSON_Observation(b *testing.B) {
	reg := NewRegistry()
	raw := `{"isSidechain":false,"userType":"external","cwd":"/home/user/project","sessionId":"5e551011-0000-4000-8000-000000000001","version":"2.1.140","gitBranch":"main","parentUuid":"5e551011-3","type":"assistant","uuid":"5e551011-4","timestamp":"2026-05-01T10:00:04.000Z","message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./pkg1/..."}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}`
	o := Observation{Key: "uuid:5e551011-4", Parser: "claude-transcript/1", Path: "/home/user/.claude/projects/x/5e551011-0000-4000-8000-000000000001.jsonl", Line: 4, Kind: "assistant", UUID: "5e551011-4", ParentUUID: "5e551011-3", AgentTime: "2026-05-01T10:00:04.000Z",
		Meta:    Meta{SessionID: "5e551011-0000-4000-8000-000000000001", Cwd: "/home/user/project", Model: "claude-opus-4-7", Version: "2.1.140", GitBranch: "main"},
		Signals: []Sig{{Kind: "tool_use", ID: "toolu_1", Name: "Bash"}, {Kind: "usage", ID: "msg_1", Usage: &Usage{Model: "claude-opus-4-7", Input: 3, Output: 5}, Counted: "new"}},
		Raw:     raw, Fingerprint: &Fingerprint{Line: 4, Offset: 1234, End: 1700, SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		Received: time.Now().UTC().Truncate(time.Microsecond), More: true}
	e := reg.New(ClaudeLineObserved{o})
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), Aggregate{Kind: KindSession, ID: "s1"}, 3, time.Now()
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "reflect", true: "hand"}[on]
		b.Run(name, func(b *testing.B) {
			saved := observationFieldsKnown
			observationFieldsKnown = func() bool { return on }
			defer func() { observationFieldsKnown = saved }()
			b.ReportAllocs()
			for range b.N {
				e.MarshalJSON()
			}
		})
	}
}
