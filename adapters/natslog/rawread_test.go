package natslog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/events"
)

// rawReadMsgs reads subject up to end with rawRead and returns its messages,
// each header block decoded as decodeParallel decodes it; it fails the
// test unless the raw read reached the end on its own.
func rawReadMsgs(t *testing.T, l *Log, subject string, from, end uint64) []Msg {
	t.Helper()
	var got []Msg
	next, stopped, err := l.rawRead(t.Context(), subject, from, end, 0, func(m Msg, err error) bool {
		if err != nil {
			t.Fatalf("rawRead yielded %v", err)
		}
		if m.Header != nil || m.hdr == nil {
			t.Fatalf("rawRead yielded seq %d with Header %v, hdr %q; want it undecoded", m.Seq, m.Header, m.hdr)
		}
		m.Header, m.hdr = decodeHeader(m.hdr), nil
		got = append(got, m)
		return true
	})
	if err != nil || stopped {
		t.Fatalf("rawRead(%s, %d, %d) ended at %d: stopped %v, %v; want its end", subject, from, end, next, stopped, err)
	}
	return got
}

// consumedMsgs reads subject up to end with consume, as a read did
// before raw reads, each message with only the headers a read judges it
// by (judgedHeader), as decodeHeader keeps them.
func consumedMsgs(t *testing.T, l *Log, subject string, from, end uint64) []Msg {
	t.Helper()
	var want []Msg
	l.consume(t.Context(), subject, from, end, func(m Msg, err error) bool {
		if err != nil {
			t.Fatalf("consume yielded %v", err)
		}
		for k := range m.Header {
			if !judgedHeader(k) {
				delete(m.Header, k)
			}
		}
		want = append(want, m)
		return true
	})
	return want
}

// TestRawRead_AgreesWithConsume reads one session's subject, interleaved
// with another's, through a raw connection and through the ordered
// consumer, over an in-process connection and over TCP as a reader (its
// inbox and consumers held to the role's permissions), across several
// pulls: the same messages, headers, bodies and times.
func TestRawRead_AgreesWithConsume(t *testing.T) {
	t.Parallel()
	reg := events.NewRegistry()
	a, b := session("a"), session("b")
	s := rolesServer(t)
	admin, err := s.ConnectAs(RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	w := openConn(t, admin)
	var last, bLast uint64
	const per = 1000 // events of a per batch: 9 batches need three pulls
	for i := range 9 {
		last = mustAppend(t, w, decision(reg, a, last, uint64(1+i*per), per)).Last
		bLast = mustAppend(t, w, decision(reg, b, bLast, uint64(1+i), 1)).Last
	}
	end := lastSeq(t, w)

	tcp, _ := connectRole(t, s, RoleReader)
	reader := openConn(t, tcp)
	for _, tc := range []struct {
		name string
		l    *Log
	}{{"in-process", w}, {"tcp reader", reader}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, from := range []uint64{1, end / 2} {
				want := consumedMsgs(t, tc.l, a.Subject(), from, end)
				got := rawReadMsgs(t, tc.l, a.Subject(), from, end)
				if len(want) < 9*per/2 {
					t.Fatalf("consume read %d messages from %d; want more", len(want), from)
				}
				sameMsgs(t, fmt.Sprintf("from %d", from), want, got)
			}
			want := consumedMsgs(t, tc.l, a.Subject(), 1, 5)
			got := rawReadMsgs(t, tc.l, a.Subject(), 1, 5)
			if len(got) == 0 {
				t.Errorf("up to seq 5: rawRead read nothing")
			}
			sameMsgs(t, "up to seq 5", want, got)
		})
	}
}

// sameMsgs fails the test, naming the first difference, unless got
// (rawRead's) holds want's messages (consume's).
func sameMsgs(t *testing.T, name string, want, got []Msg) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: rawRead read %d messages, consume %d", name, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Errorf("%s: message %d: rawRead differs from consume (-consume +rawRead):\n%s", name, i, cmp.Diff(want[i], got[i], cmp.AllowUnexported(Msg{})))
			return
		}
	}
}

// TestConsumeRaw_Cancelled ends a raw read whose ctx is done with ctx's
// error, as consume ends it: a read cut short never passes for whole.
func TestConsumeRaw_Cancelled(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	a := session("a")
	mustAppend(t, l, decision(events.NewRegistry(), a, 0, 1, 10))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errs []error
	l.consumeRaw(ctx, a.Subject(), 1, lastSeq(t, l), func(m Msg, err error) bool {
		errs = append(errs, err)
		return err == nil
	})
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("consumeRaw with ctx done yielded %v; want one error wrapping context.Canceled", errs)
	}
}

// openConn opens a Log on nc, closed at test end.
func openConn(t *testing.T, nc *nats.Conn) *Log {
	t.Helper()
	l, err := Open(t.Context(), nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestDecodeHeader_AsNatsGo decodes header blocks, well formed or not,
// as nats.DecodeHeadersMsg does, to the headers a read judges by.
func TestDecodeHeader_AsNatsGo(t *testing.T) {
	t.Parallel()
	for _, block := range []string{
		"NATS/1.0\r\nNats-Msg-Id: x\r\nLb-Type: session.started\r\nNats-Expected-Last-Subject-Sequence: 7\r\n\r\n",
		"NATS/1.0\r\nLb-A: 1\r\nLb-B:\t 2 \r\nLb-A: 3\r\nlb-c:4\r\nOther: 5\r\n\r\n",
		"NATS/1.0\r\nLb-1: a\r\nLb-2: b\r\nLb-3: c\r\nLb-4: d\r\nLb-5: e\r\nLb-6: f\r\nLb-7: g\r\nLb-8: h\r\nLb-9: i\r\nLb-10: j\r\n\r\n",
		"NATS/1.0\r\n\r\n",
		"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n",
		"NATS/1.0 100\r\n\r\n",
		"NATS/1.0\r\n: empty key\r\nK: v\r\n\r\n",
		"NATS/1.0\r\nno colon\r\n\r\n",
		"NATS/1.0\r\nK: v\r\n",
		"NATS/1.0\nK: v\n\n",
		"HTTP/1.1\r\n\r\n",
		"",
	} {
		want, err := nats.DecodeHeadersMsg([]byte(block))
		if err != nil {
			want = nil
		}
		for k := range want {
			if !judgedHeader(k) {
				delete(want, k)
			}
		}
		if got := decodeHeader([]byte(block)); !cmp.Equal(got, want) {
			t.Errorf("decodeHeader(%q) = %v; nats.go decodes %v", block, got, want)
		}
	}
}

// RawHeader.Parse makes of a header block what nats.go's decoding does
// (the judged headers, names as stored, values in stored order, leading
// blanks cut) or refuses it, which sends the block to that decoding; a
// signed event's block parses. attestRaw of what it parses is attestMsg
// of the decoded block.
func TestRawHeader_ParsesAsNatsDecodes(t *testing.T) {
	t.Parallel()
	const signed = "NATS/1.0\r\nNats-Msg-Id: 01M8YD9HEAEZ7FF4BMH18FDEVN\r\nLb-Type: session.started\r\n" +
		"Nats-Expected-Last-Subject-Sequence: 0\r\nLb-Key: bef59efe181efab6\r\nLb-Batch: 3/7\r\n" +
		"Lb-Root: cm9vdA==\r\nLb-Batch-Sig: c2ln\r\nLb-Proof: cHJvb2Y=\r\nNats-Batch-Id: x\r\n\r\n"
	for _, tc := range []struct {
		name, block string
		parses      bool
	}{
		{"signed event", signed, true},
		{"single form, LF only", "NATS/1.0\nLb-Key: k\nLb-Sig: s\n\n", true},
		{"repeated name, blanks", "NATS/1.0\r\nLb-Sig:\t a\r\nLb-Key: k\r\nLb-Sig:b \r\nLb-Sig: \r\n\r\n", true},
		{"no judged header", "NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n", true},
		{"case kept", "NATS/1.0\r\nlb-key: k\r\nLB-KEY: K\r\nLb-Key: kk\r\n\r\n", true},
		{"bytes after the blank line", "NATS/1.0\r\nLb-Key: k\r\n\r\nLb-Sig: s\r\n", true},
		{"colon in a value, blank values", "NATS/1.0\r\nLb-Key: a:b\r\nLb-Sig: \r\nLb-Root:\r\nLb-Batch:\n\r\n", true},
		{"carriage return inside a name", "NATS/1.0\r\nLb-\rKey: k\r\n\r\n", true},
		{"two carriage returns", "NATS/1.0\r\nLb-Key: k\r\n\r\r\n\r\n", false},
		{"no line end after a name", "NATS/1.0\r\nLb-Key", false},
		{"no line end after a value", "NATS/1.0\r\nLb-Key: k", false},
		{"a line without a colon among others", "NATS/1.0\r\nNats-Msg-Id x\r\nLb-Key: k\r\n\r\n", false},
		{"status", "NATS/1.0 408 Request Timeout\r\n\r\n", false},
		{"no blank line", "NATS/1.0\r\nLb-Key: k\r\n", false},
		{"line without a colon", "NATS/1.0\r\nLb-Key k\r\n\r\n", false},
		{"empty name", "NATS/1.0\r\n: v\r\nLb-Key: k\r\n\r\n", false},
		{"not a header block", "HTTP/1.1\r\n\r\n", false},
		{"empty", "", false},
		{"seventeen judged headers", "NATS/1.0\r\n" + strings.Repeat("Lb-X: v\r\n", 17) + "\r\n", false},
		{"sixteen judged headers", "NATS/1.0\r\n" + strings.Repeat("Lb-X: v\r\n", 16) + "\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blk := []byte(tc.block)
			var h RawHeader
			h.f[0] = HeaderField{"stale", "stale"}
			h.n = 1
			if got := h.Parse(blk); got != tc.parses {
				t.Fatalf("Parse = %v, want %v", got, tc.parses)
			}
			want := slowHeader(blk)
			if !tc.parses {
				if len(h.Fields()) != 0 {
					t.Errorf("a refused block left %d fields", len(h.Fields()))
				}
				if got := decodeHeader(blk); !reflect.DeepEqual(got, want) {
					t.Errorf("decodeHeader = %v, nats.go decodes %v", got, want)
				}
				return
			}
			got := nats.Header{}
			for _, f := range h.Fields() {
				got[f.Name] = append(got[f.Name], f.Value)
			}
			if len(want) == 0 && len(got) == 0 {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parsed %v, nats.go decodes %v", got, want)
			}
			if dh := decodeHeader(blk); !reflect.DeepEqual(dh, want) {
				t.Errorf("decodeHeader = %v, nats.go decodes %v", dh, want)
			}
			for name := range want {
				if h.Get(name) != want.Get(name) {
					t.Errorf("Get(%q) = %q, nats.go %q", name, h.Get(name), want.Get(name))
				}
			}
			data := []byte("{}")
			if a, b := attestRaw(7, "lb.ev.session.s", &h, data), attestMsg(7, "lb.ev.session.s", want, data); !reflect.DeepEqual(a, b) {
				t.Errorf("attestRaw = %+v, attestMsg %+v", a, b)
			}
		})
	}
}

// A Msg a raw read left undecoded gives its block (HeaderBlock) and
// decodes it (Decoded); a decoded one gives none and stays as it is.
func TestMsg_HeaderBlock(t *testing.T) {
	t.Parallel()
	blk := []byte("NATS/1.0\r\nLb-Key: k\r\nNats-Msg-Id: x\r\n\r\n")
	m := Msg{Seq: 1, Subject: "lb.ev.session.s", hdr: blk}
	if got := m.HeaderBlock(); string(got) != string(blk) {
		t.Fatalf("HeaderBlock = %q", got)
	}
	d := m.Decoded()
	if d.HeaderBlock() != nil || !reflect.DeepEqual(d.Header, nats.Header{"Lb-Key": {"k"}}) {
		t.Fatalf("Decoded = %+v", d)
	}
	if again := d.Decoded(); !reflect.DeepEqual(again, d) {
		t.Fatalf("Decoded of a decoded message = %+v, want %+v", again, d)
	}
}

// BenchmarkJudgedFields takes a signed event's judged fields from its
// raw header block (the batch form, as serve stores a decision):
// parsed in place (RawHeader, attestRaw) or decoded into a reused map
// (decodeHeaderInto, attestMsg), per message.
func BenchmarkJudgedFields(b *testing.B) {
	blk := []byte("NATS/1.0\r\nNats-Msg-Id: 01M8YD9HEAEZ7FF4BMH18FDEVN\r\nLb-Type: session.activity_changed\r\n" +
		"Nats-Expected-Last-Subject-Sequence: 41\r\nLb-Key: bef59efe181efab6\r\nLb-Batch: 17/500\r\n" +
		"Lb-Root: " + strings.Repeat("r", 44) + "\r\nLb-Batch-Sig: " + strings.Repeat("s", 88) + "\r\n" +
		"Lb-Proof: " + strings.Repeat("p", 396) + "\r\nNats-Batch-Id: 5AdPTVz444PfRs7ttQki2m\r\nNats-Batch-Sequence: 18\r\n\r\n")
	data := []byte("{}")
	b.Run("raw", func(b *testing.B) {
		var h RawHeader
		b.ReportAllocs()
		for b.Loop() {
			if !h.Parse(blk) {
				b.Fatal("not parsed")
			}
			attestRaw(7, "lb.ev.session.s", &h, data)
		}
	})
	b.Run("map", func(b *testing.B) {
		var (
			h    nats.Header
			vals []string
		)
		b.ReportAllocs()
		for b.Loop() {
			h, vals = decodeHeaderInto(h, vals[:0], blk)
			attestMsg(7, "lb.ev.session.s", h, data)
		}
	})
}

// TestLoadEach_HeldSubjectReadWithoutAsking loads a session that other
// events follow in the stream, with LoadEach and with a LoadEach started
// ahead: once the read has yielded as many messages as the stream said
// the subject held, and the consumer counts none pending, it ends
// without asking the stream for a message after the last one (a direct
// get, watched on a connection of its own), loads every event, and
// returns with its consumer gone. A message appended after the read
// said its end is not read, and not asked for either.
func TestLoadEach_HeldSubjectReadWithoutAsking(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")
	last := mustAppend(t, l, decision(reg, a, 0, 1, 30)).Last
	mustAppend(t, l, decision(reg, b, 0, 1, 3)) // after a's last: the read's end lies past it
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	gets, err := nc.SubscribeSync("$JS.API.DIRECT.GET.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	consumers := func() int {
		t.Helper()
		info, err := l.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	before := consumers()
	load := func(name string, each func(func(events.Record) error) (uint64, error)) {
		t.Helper()
		n := 0
		got, err := each(func(r events.Record) error {
			if r.Agg != a {
				t.Errorf("%s: record of %s", name, r.Agg)
			}
			n++
			return nil
		})
		if err != nil || n != 30 || got != last {
			t.Fatalf("%s: %d records, last %d, %v; want 30, last %d", name, n, got, err, last)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if m, err := gets.NextMsg(0); err == nil {
			t.Errorf("%s asked the stream %s %q; want no direct get", name, m.Subject, m.Data)
		}
		if n := consumers(); n != before {
			t.Errorf("%s returned with %d consumers on the stream, were %d", name, n, before)
		}
	}
	load("LoadEach", func(each func(events.Record) error) (uint64, error) { return l.LoadEach(ctx, a, nil, each) })
	st := l.StartLoad(ctx, a)
	defer st.Close()
	mustAppend(t, l, decision(reg, a, last, 31, 1)) // after the start said its end
	load("started LoadEach", func(each func(events.Record) error) (uint64, error) { return st.LoadEach(ctx, nil, each) })
}
