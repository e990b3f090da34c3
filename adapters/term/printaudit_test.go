package term

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// auditHostile holds what Sanitize rewrites or drops, and what it passes:
// an escape sequence, a bell, a lone carriage return, a tab, a newline,
// DEL, a C1 control, bidirectional overrides and isolates, line
// separators, bytes that are not UTF-8, a cut rune, and plain text.
const auditHostile = "a\x1b[31mred\x1b]0;title\x07\rb\tc\nd\x7fe\u0085f\u202eg\u2066h\u2028i\xff\xfej\xe2\x80k é 世🙂"

// fillAuditStrings sets every string (and string slice) field reachable
// from v, through pointers and structs, to auditHostile.
func fillAuditStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(auditHostile)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			v.Set(reflect.ValueOf([]string{auditHostile, auditHostile}).Convert(v.Type()))
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillAuditStrings(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAuditStrings(v.Field(i))
			}
		}
	}
}

// PrintAudit writes the bytes Print of Audit writes, for a timeline
// whose every field holds what a terminal would obey: WriteText's text
// is a fixed point of Sanitize, so the pass PrintAudit leaves out
// changed nothing.
func TestPrintAuditAsPrint(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var items []replay.Item
	for i := range 300 {
		var it replay.Item
		fillAuditStrings(reflect.ValueOf(&it).Elem())
		if i%3 == 0 {
			it.Unattested = nil
		}
		if i%7 == 0 {
			it.Obs, it.Cause, it.Signed = nil, nil, "before-signing"
		}
		if i%11 == 0 {
			it.KeyID, it.Principal = "", ""
		}
		it.Seq, it.At = uint64(i+1), t0.Add(time.Duration(i%13)*time.Second)
		if it.Obs != nil {
			it.Obs.Line, it.Obs.Sender = i%2, &events.Sender{User: auditHostile, UID: 1000}
		}
		items = append(items, it)
	}
	for _, width := range []int{0, 39, 40, 120} {
		var printed, direct bytes.Buffer
		if err := Print(&printed, func(w io.Writer) error { return Audit(w, items, width) }); err != nil {
			t.Fatal(err)
		}
		if err := PrintAudit(&direct, items, width); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(printed.Bytes(), direct.Bytes()) {
			t.Fatalf("width %d: PrintAudit wrote %d bytes unlike Print of Audit's %d", width, direct.Len(), printed.Len())
		}
		if got := strings.Count(direct.String(), "\n#"); width < 40 && got != len(items)-1 {
			t.Fatalf("width %d: %d lines begin an item, want %d", width, got+1, len(items))
		}
	}
}
