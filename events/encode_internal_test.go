package events

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// TestMarshalJSON_SameBytes holds Envelope.MarshalJSON, which writes the
// wire form by hand, to the bytes json.Marshal gives for the wire struct,
// over envelopes whose strings hold every kind of byte encoding/json
// escapes: control bytes, quotes, backslashes, <, > and &, U+2028 and
// U+2029, DEL, non-ASCII and invalid UTF-8; with and without a cause,
// detail and the optional members.
func TestMarshalJSON_SameBytes(t *testing.T) {
	reg := NewRegistry()
	pieces := []string{"", "a", "Bash", "\"", "\\", "<", ">", "&", "\x00", "\x1f", "\n", "\t", "\b", "\f", "\r",
		"\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\x80", "😀", "</script>", " "}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		s := ""
		for range rng.IntN(5) {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	for i := range 3000 {
		e := reg.New(SessionActivityChanged{From: str(), To: str()})
		e.ID = ulid.Make()
		e.Agg = Aggregate{Kind: KindSession, ID: "s-" + str()}
		e.Ver = rng.Uint64()
		e.At = time.Date(2026, 11, 30, 20, 0, 0, rng.IntN(1e9), time.FixedZone("x", rng.IntN(7200)))
		if rng.IntN(4) > 0 {
			e.Cause = &Cause{Kind: str(), Event: str(), Detail: str(), Ref: str()}
		}
		e.Corr, e.Host, e.Actor = str(), str(), str()
		e.Type = str() + e.Type
		e.V = rng.IntN(1000) - 10
		got, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(wire{
			ID: e.ID, Type: e.Type, V: e.V, Agg: e.Agg, Ver: e.Ver,
			At:    e.At.UTC().Format(TimeFormat),
			Cause: e.Cause, Corr: e.Corr, Host: e.Host, Actor: e.Actor,
			Data: data,
		})
		if err != nil {
			t.Fatal(err)
		}
		checkAppendJSON(t, e, got)
		if string(got) != string(want) {
			t.Fatalf("envelope %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func BenchmarkMarshalJSON(b *testing.B) {
	reg := NewRegistry()
	e := reg.New(SessionActivityChanged{From: "thinking", To: "tool:Bash"})
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), Aggregate{Kind: KindSession, ID: "bench"}, 7, time.Now()
	e.Cause = &Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: ulid.Make().String()}
	e.Corr, e.Host, e.Actor = "turn-1", "bench", "claude-code"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
