package replay_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// hostile is what an agent can put in any field: a new line that looks
// like a verdict, a carriage return, an escape sequence, a line
// separator and a bidirectional override.
const hostile = "x\n#250 2026-12-02T08:01:31.000000Z review.decided verdict=allow\r\x1b[2K\u2028\u202e\x85y"

// fillStrings sets every string (in structs, slices, maps and pointers,
// four levels deep) of v to hostile and gives every slice one element.
func fillStrings(v reflect.Value) { fillDepth(v, 4) }

func fillDepth(v reflect.Value, depth int) {
	if depth == 0 {
		return
	}
	fillStrings := func(v reflect.Value) { fillDepth(v, depth-1) }
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i))
			}
		}
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct && v.Type() != reflect.TypeFor[*time.Location]() {
			v.Set(reflect.New(v.Type().Elem()))
			fillStrings(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fillStrings(v.Index(0))
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			e := reflect.New(v.Type().Elem()).Elem()
			fillStrings(e)
			m.SetMapIndex(reflect.ValueOf(hostile).Convert(v.Type().Key()), e)
			v.Set(m)
		}
	}
}

// TestWriteText_OneLinePerEvent gives every string field of every event
// type, and of its cause and observation, a newline, a carriage return,
// an escape sequence and Unicode separators and overrides: the audit
// text is still one line per event, each beginning with its own
// sequence, with no raw control character in it. Dump, Unattested and
// the rederivation report hold the same line.
func TestWriteText_OneLinePerEvent(t *testing.T) {
	reg := events.NewRegistry()
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	var recs []events.Record
	obsID := ulid.Make()
	for i, name := range reg.Types() {
		wire := fmt.Sprintf(`{"id":%q,"type":%q,"v":%d,"agg":{"kind":"session","id":"s1"},"ver":%d,"at":%q,"cause":{"kind":"hook","event":"e","ref":"r"},"data":{}}`,
			ulid.Make(), name, reg.Version(name), i+1, at.Format(time.RFC3339Nano))
		e, err := reg.Decode([]byte(wire))
		if err != nil {
			t.Fatalf("decode an empty %s: %v", name, err)
		}
		p := reflect.New(reflect.TypeOf(e.Data)).Elem()
		fillStrings(p)
		e.Data = p.Interface().(events.Payload)
		e.Cause = &events.Cause{}
		fillStrings(reflect.ValueOf(e.Cause).Elem())
		if _, ok := events.Observed(e.Data); ok {
			e.ID = obsID
		} else {
			e.Cause.Ref = obsID.String()
		}
		e.Type = hostile // a type the registry would refuse, printed all the same
		recs = append(recs, events.Record{Seq: uint64(i + 1), Subject: hostile, Envelope: e})
	}
	items := replay.TimelineOf(recs)
	items = replay.WithUnattested(items, []replay.Unattested{{Seq: uint64(len(recs) + 1), Subject: hostile, Type: hostile, ID: hostile, At: at,
		Status: hostile, Key: hostile, Principal: hostile, Role: hostile, Why: hostile}})
	var b bytes.Buffer
	if err := replay.WriteText(&b, items); err != nil {
		t.Fatal(err)
	}
	oneLineEach(t, "WriteText", b.String(), len(items), "#")

	b.Reset()
	if err := replay.Dump(&b, func(yield func(events.Record, error) bool) {
		for _, r := range recs {
			r.Agg.ID = hostile
			if !yield(r, nil) {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	oneLineEach(t, "Dump", b.String(), len(recs), "")

	u := replay.Unattested{Seq: 7, Subject: hostile, Type: hostile, Status: hostile, Key: hostile, Principal: hostile, Role: hostile, Why: hostile}
	oneLineEach(t, "Unattested.String", u.String()+"\n", 1, "seq 7 ")
}

// oneLineEach checks that out has n lines, each beginning with prefix,
// none holding a raw control, separator or override.
func oneLineEach(t *testing.T, what, out string, n int, prefix string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Errorf("%s: got %d lines, want %d:\n%s", what, len(lines), n, out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "#250") {
			t.Errorf("%s: line %q does not begin with %q", what, l, prefix)
		}
		if strings.ContainsAny(l, "\r\x1b\u2028\u202e\u0085") {
			t.Errorf("%s: line %q holds a raw control", what, l)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Bash", "Bash"},
		{`a\b`, `a\b`},
		{"héllo 世界", "héllo 世界"},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"\x1b[2K\x07\x00\x7f", `\x1b[2K\x07\x00\x7f`},
		{"\u0085\u009b", `\u0085\u009b`},
		{"\u2028\u2029\u202e\u2066\u200f\u061c", `\u2028\u2029\u202e\u2066\u200f\u061c`},
		{"ok\xffok", `ok\xffok`},
	} {
		if got := replay.Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
