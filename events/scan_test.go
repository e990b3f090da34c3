package events

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/oklog/ulid/v2"
)

// decodeReference is the decoder the scanner must agree with: the
// encoding/json tier alone.
func (r *Registry) decodeReference(b []byte) (Envelope, error) { return r.decodeSlow(b) }

// checkSame fails when Decode and the encoding/json tiers disagree on b:
// accept or refuse, the error's text, or the envelope's value. It also
// checks that the scanner alone never accepts what they refuse, and that
// d, a Decoder used for many inputs in turn, agrees too.
func checkSame(t *testing.T, r *Registry, d *Decoder, b []byte) {
	t.Helper()
	want, werr := r.decodeReference(b)
	got, gerr := r.Decode(b)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("input %q:\nDecode error %v\nreference    %v", b, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("input %q:\nDecode    %#v\nreference %#v", b, got, want)
	}
	got, gerr = d.Decode(b)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !reflect.DeepEqual(got, want) {
		t.Fatalf("input %q:\nDecoder   %#v, %v\nreference %#v, %v", b, got, gerr, want, werr)
	}
	if e, ok, err := r.decodeScan(b, nil); ok {
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || !reflect.DeepEqual(e, want) {
			t.Fatalf("input %q: scanner decided %#v, %v; reference %#v, %v", b, e, err, want, werr)
		}
	}
}

// seeds returns the golden envelopes in their indented form and in the
// compact form MarshalJSON writes.
func seeds(t testing.TB) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "events", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no golden envelopes under testdata/events")
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b, c.Bytes())
	}
	return append(out, richSeeds(t)...)
}

// richSeeds are wire forms of nested payloads with what the golden
// envelopes lack: escapes and non-ASCII text, floats, empty and
// several-element arrays, time.Time members, every pointer set.
func richSeeds(t testing.TB) [][]byte {
	r := NewRegistry()
	obs := Observation{
		Key: "line:9", Parser: "codex-rollout/1", Kind: "event_msg", Line: 9,
		Meta:     Meta{Cwd: "/home/u/é 项目", Model: "gpt-5"},
		Signals:  []Sig{{Kind: SigUsage, Usage: &Usage{Model: "gpt-5", Input: 120, Output: 7, CacheRead: 1 << 33, Cumulative: true}}, {Kind: "rate_limit", Limit: &Limit{Account: "codex/plus", Window: "primary", UsedPercent: 12.5, Minutes: 300, ResetsAt: 1764500000}}, {Kind: "text", Text: "tab\tquote\" back\\ nl\n <&> \u2028 \x01 ☃"}},
		Raw:      "{\"type\":\"event_msg\",\"text\":\"a\\nb\"}\n",
		Problems: []string{"one", "", "three 🙂"},
	}
	tick := obs
	tick.Kind, tick.Signals, tick.Problems = "tick", []Sig{}, nil
	tick.Tick = &Tick{Now: time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC), LastObserved: time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("", 3600)), AbandonAfter: 60000,
		Check: &ProcessCheck{Process: Process{PID: 1, Start: 2, Host: "h", Boot: "b"}, Result: "alive"}}
	var out [][]byte
	for _, p := range []Payload{CodexLineObserved{obs}, TickObserved{tick}, ClaudeHookObserved{Observation{Key: "k", Parser: "p", Kind: "Stop"}}} {
		e := r.New(p)
		e.ID, e.Agg, e.Ver, e.At = ulid.MustParse("01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8"), Aggregate{Kind: KindSession, ID: "s1"}, 3, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "\t"); err != nil {
			t.Fatal(err)
		}
		out = append(out, b, ind.Bytes())
	}
	return out
}

// mutations are edits that keep an envelope close to valid, so both
// decoders get past the first byte: the corners of strict JSON decoding.
var mutations = []func(r *rand.Rand, b []byte) []byte{
	func(r *rand.Rand, b []byte) []byte { // flip a byte
		b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
		return b
	},
	func(r *rand.Rand, b []byte) []byte { // delete a run
		i := r.IntN(len(b))
		j := min(len(b), i+1+r.IntN(8))
		return append(b[:i:i], b[j:]...)
	},
	func(r *rand.Rand, b []byte) []byte { // insert a token
		toks := []string{`"`, `\`, `\u00e9`, `\n`, `\/`, `\"`, `\\`, `\u0041`, `\u2028`, `\ud83d\ude00`, `\ud83d`, `\x`, `\u12`, `\U0041`, `,`, `:`, `{`, `}`, `[`, `]`, ` `, "\t", "\x00", "\xff", "é", `null`, `true`, `0`, `-`, `.5`, `e3`, `"x":1,`, `"id":"s",`, `"ver":2,`, `"type":"session.ended",`, `"data":{},`, `"data":null,`}
		i := r.IntN(len(b) + 1)
		tok := toks[r.IntN(len(toks))]
		return append(b[:i:i], append([]byte(tok), b[i:]...)...)
	},
	func(r *rand.Rand, b []byte) []byte { // change a key's case
		for range 4 {
			i := r.IntN(len(b))
			if b[i] >= 'a' && b[i] <= 'z' {
				b[i] -= 'a' - 'A'
				break
			}
		}
		return b
	},
	func(r *rand.Rand, b []byte) []byte { // trailing data
		tails := []string{` `, "\n", `}`, `]`, `x`, `{}`, ` 1`}
		return append(b, tails[r.IntN(len(tails))]...)
	},
	func(r *rand.Rand, b []byte) []byte { // replace a number
		nums := []string{`0`, `-1`, `01`, `1.0`, `1e0`, `18446744073709551616`, `9223372036854775808`, `2`, `-0`, `1.`, `.5`, `-`, `1e`, `1E+2`, `2.5e-3`, `-0.0`, `1e400`, `0x10`, `"1"`, `null`, `true`, `[]`, `{}`}
		for i := range b {
			if b[i] >= '0' && b[i] <= '9' && i > 0 && b[i-1] == ':' {
				j := i
				for j < len(b) && b[j] >= '0' && b[j] <= '9' {
					j++
				}
				if r.IntN(3) == 0 {
					return append(b[:i:i], append([]byte(nums[r.IntN(len(nums))]), b[j:]...)...)
				}
			}
		}
		return b
	},
}

// TestDecodeScanMatchesReference is the differential property of the
// scanner: on the golden envelopes and on many random mutations of them,
// Decode agrees with the encoding/json tiers exactly.
func TestDecodeScanMatchesReference(t *testing.T) {
	r := NewRegistry()
	d := r.NewDecoder()
	base := seeds(t)
	for _, b := range base {
		checkSame(t, r, d, b)
		if _, ok, err := r.decodeScan(b, nil); !ok || err != nil {
			t.Fatalf("scanner does not decide golden envelope %s: %v", b, err)
		}
	}
	rng := rand.New(rand.NewPCG(9, 3))
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for range n {
		b := bytes.Clone(base[rng.IntN(len(base))])
		for range 1 + rng.IntN(3) {
			if len(b) == 0 {
				break
			}
			b = mutations[rng.IntN(len(mutations))](rng, b)
		}
		checkSame(t, r, d, b)
	}
}

// FuzzDecodeScan runs the differential property on arbitrary bytes:
//
//	go test -run '^$' -fuzz FuzzDecodeScan -fuzztime 5m ./events/
func FuzzDecodeScan(f *testing.F) {
	for _, b := range seeds(f) {
		f.Add(b)
	}
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, b []byte) { checkSame(t, r, r.NewDecoder(), b) })
}

// checkTime fails when parseTimeZ decides b and time.Parse (RFC 3339 with
// nanoseconds, the decoding tier's) reads it differently or refuses it.
func checkTime(t *testing.T, b []byte) {
	t.Helper()
	got, ok := parseTimeZ(b)
	if !ok {
		return
	}
	want, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil || !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("parseTimeZ(%q) = %v; time.Parse: %v, %v", b, got, want, err)
	}
}

// TestParseTimeZ holds the envelope time's fast path to time.Parse on
// the shapes it decides and around their edges: leap days, month ends,
// fractions of every length, and random edits.
func TestParseTimeZ(t *testing.T) {
	for _, s := range []string{
		"2026-04-24T19:00:00.133000Z", "2026-04-24T19:00:00Z", "2024-02-29T23:59:59.999999999Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.1Z", "2000-02-29T00:00:00Z",
	} {
		if _, ok := parseTimeZ([]byte(s)); !ok {
			t.Errorf("parseTimeZ(%q) leaves it to time.Parse", s)
		}
		checkTime(t, []byte(s))
	}
	for _, s := range []string{
		"2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
		"2026-01-01T00:00:60Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567890Z",
		"2026-01-01T00:00:00+00:00", "2026-01-01t00:00:00Z", "2026-01-01T00:00:00z", "+026-01-01T00:00:00Z",
		"2026-01-01T00:00:00,5Z", "2026-01-01T00:00:0aZ",
	} {
		if _, ok := parseTimeZ([]byte(s)); ok {
			t.Errorf("parseTimeZ(%q) decides it", s)
		}
	}
	rng := rand.New(rand.NewPCG(5, 8))
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 20000 {
		tm := base.Add(time.Duration(rng.Int64N(int64(20 * 365 * 24 * time.Hour))))
		b := []byte(tm.Format(time.RFC3339Nano))
		checkTime(t, b)
		if _, ok := parseTimeZ(b); !ok {
			t.Fatalf("parseTimeZ(%q) leaves a MarshalJSON time to time.Parse", b)
		}
		for range 1 + rng.IntN(2) {
			i := rng.IntN(len(b))
			b[i] = "0123456789-:.TZ+x"[rng.IntN(17)]
		}
		checkTime(t, b)
	}
}

// FuzzParseTimeZ runs checkTime on arbitrary bytes:
//
//	go test -run '^$' -fuzz FuzzParseTimeZ -fuzztime 1m ./events/
func FuzzParseTimeZ(f *testing.F) {
	f.Add([]byte("2026-04-24T19:00:00.133000Z"))
	f.Add([]byte("2024-02-29T23:59:59Z"))
	f.Fuzz(func(t *testing.T, b []byte) { checkTime(t, b) })
}

// TestOnSubject holds Aggregate.OnSubject to comparing with Subject.
func TestOnSubject(t *testing.T) {
	aggs := []Aggregate{{KindSession, "s1"}, {KindCommand, "c-7"}, {KindSession, ""}, {"", "x"}}
	subjects := []string{"lb.ev.session.s1", "lb.ev.command.c-7", "lb.ev.session.", "lb.ev..x", "lb.ev.session.s1x",
		"lb.ev.session.s", "lb.ev.sessions1", "lb.ev.session.s1.", "lb.out.session.s1", "lb.ev.session", "", "lb.ev.commands.c-7"}
	for _, a := range aggs {
		for _, s := range subjects {
			if got, want := a.OnSubject(s), a.Subject() == s; got != want {
				t.Errorf("%#v.OnSubject(%q) = %v, want %v", a, s, got, want)
			}
		}
	}
}

// TestBox holds box to the Payload encoding/json's tier builds: for every
// type of the catalogue the Payload box makes of a decoded value has the
// type and value of the one reflect makes, and every payload type larger
// than a pointer takes the path that does not copy.
func TestBox(t *testing.T) {
	r := NewRegistry()
	for _, b := range seeds(t) {
		e, err := r.decodeSlow(b)
		if err != nil {
			t.Fatal(err)
		}
		ti := r.types[e.Type]
		if ti.tab == nil && ti.typ.Size() > unsafe.Sizeof(uintptr(0)) {
			t.Errorf("%s: box copies its payloads", e.Type)
		}
		pv := reflect.New(ti.typ)
		pv.Elem().Set(reflect.ValueOf(e.Data))
		if got := ti.box(pv); reflect.TypeOf(got) != ti.typ || !reflect.DeepEqual(got, e.Data) {
			t.Errorf("%s: box gives %#v, want %#v", e.Type, got, e.Data)
		}
	}
}

// TestKnownIn reads keys of up to, exactly and over eight bytes from
// inputs long and short, and refuses near misses.
func TestKnownIn(t *testing.T) {
	keys := wireKeys(`"id":`, `"name12":`, `"session_id":`, `"ab":`)
	for _, c := range []struct {
		in   string
		next int
		want int
		at   int // s.i after
	}{
		{`"id":"x"`, 0, 0, 5},
		{`"id":`, 0, 0, 5},
		{`"id":`, 3, 0, 5},
		{`"name12":1`, 0, 1, 9},
		{`"name12":`, 0, 1, 9},
		{`"session_id":"s"`, 0, 2, 13},
		{`"session_id":`, 2, 2, 13},
		{`"ab":1`, 0, 3, 5},
		{`"session_ix":"s"`, 0, -1, 0},
		{`"session_id" :"s"`, 0, -1, 0},
		{`"name1":1`, 0, -1, 0},
		{`"name123":1`, 0, -1, 0},
		{`"i":"x"`, 0, -1, 0},
		{`"id"`, 0, -1, 0},
		{`"i`, 0, -1, 0},
		{`id":"x"`, 0, -1, 0},
		{``, 0, -1, 0},
	} {
		s := scanner{b: []byte(c.in)}
		if got := s.knownIn(keys, c.next); got != c.want || s.i != c.at {
			t.Errorf("knownIn(%q, from %d) = %d at %d, want %d at %d", c.in, c.next, got, s.i, c.want, c.at)
		}
	}
}

// TestDecodeScanSurrogates checks that the scanner decides a string
// holding an escaped UTF-16 surrogate pair, as encoding/json decodes it,
// and leaves one holding a lone surrogate to the encoding/json tier.
func TestDecodeScanSurrogates(t *testing.T) {
	r := NewRegistry()
	b := richSeeds(t)[0]
	for _, c := range []struct {
		esc    string
		decide bool
	}{{`\ud83d\ude00`, true}, {`\ud83d`, false}, {`\ude00\ud83d`, false}} {
		in := bytes.Replace(b, []byte("☃"), []byte(c.esc), 1)
		if bytes.Equal(in, b) {
			t.Fatal("the rich seed holds no ☃")
		}
		checkSame(t, r, r.NewDecoder(), in)
		if _, ok, _ := r.decodeScan(in, nil); ok != c.decide {
			t.Errorf("%s: scanner decides %v, want %v", c.esc, ok, c.decide)
		}
	}
}

// TestInternHashShort: on strings shorter than eight bytes, which intern
// finds by their hash alone, internHash is one to one.
func TestInternHashShort(t *testing.T) {
	seen := map[uint64][]byte{}
	var add func(b []byte)
	add = func(b []byte) {
		h := internHash(b)
		if o, ok := seen[h]; ok {
			t.Fatalf("internHash(%q) = internHash(%q)", b, o)
		}
		seen[h] = bytes.Clone(b)
		if len(b) < 3 {
			for _, c := range []byte{0, 1, 7, 'a', 0xff} {
				add(append(b, c))
			}
		}
	}
	add(nil)
	for _, s := range []string{"abcdefg", "\x07abcdef", "bcdefg", "\x06bcdefg", "session", "hook", "turn-0"} {
		h := internHash([]byte(s))
		if o, ok := seen[h]; ok && string(o) != s {
			t.Fatalf("internHash(%q) = internHash(%q)", s, o)
		}
		seen[h] = []byte(s)
	}
}

// TestIntern: a Decoder's table gives back each string it is asked for,
// whatever it held before in the string's slot.
func TestIntern(t *testing.T) {
	d := NewRegistry().NewDecoder()
	d.strs, d.shift = make([]internSlot, 4), 62 // four slots: strings meet in them
	s := scanner{d: d}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(internLen+2))
		for i := range b {
			b[i] = "ab\x00\x07"[rng.IntN(4)]
		}
		if got := s.intern(b); got != string(b) {
			t.Fatalf("intern(%q) = %q", b, got)
		}
	}
}
