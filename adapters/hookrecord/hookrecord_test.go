package hookrecord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/redact"
)

func recorder(t *testing.T, deliver func(context.Context, api.HookRequest) error) (Recorder, *strings.Builder) {
	var warn strings.Builder
	return Recorder{
		Spool: filepath.Join(t.TempDir(), "spool"), MaxPayload: 1 << 20, Timeout: time.Second, Warn: &warn,
		Rules:   func() (*claude.Redactor, error) { return redact.Default(), nil },
		Deliver: deliver,
	}, &warn
}

// TestRecord_Delivered: with nothing waiting, the payload goes to the
// server and nothing is spooled.
func TestRecord_Delivered(t *testing.T) {
	var got api.HookRequest
	r, warn := recorder(t, func(_ context.Context, req api.HookRequest) error { got = req; return nil })
	if err := r.Record(t.Context(), "hook test", []byte(`{"a":1}`), func(b []byte) ([]byte, error) { return b, nil }); err != nil {
		t.Fatal(err)
	}
	if got.Text != `{"a":1}` || got.ID == "" || warn.Len() != 0 {
		t.Errorf("delivered %+v, warned %q", got, warn.String())
	}
}

// TestRecord_Spooled: a server that does not answer has the payload
// spooled, with a line saying so.
func TestRecord_Spooled(t *testing.T) {
	r, warn := recorder(t, func(context.Context, api.HookRequest) error { return errors.New("no server running") })
	if err := r.Record(t.Context(), "hook test", []byte(`{"a":1}`), func(b []byte) ([]byte, error) { return b, nil }); err != nil {
		t.Fatal(err)
	}
	sp, err := claude.Open(r.Spool)
	if err != nil {
		t.Fatal(err)
	}
	if waiting, err := sp.HasPending(); err != nil || !waiting {
		t.Errorf("spool pending = %v, %v; want the payload", waiting, err)
	}
	if !strings.Contains(warn.String(), "kept in spool: no server running") {
		t.Errorf("warned %q", warn.String())
	}
}

// TestRecord_Held: a server that holds its appends for want of disk
// space (api.ErrHeld) has the payload spooled, with a line saying
// serve's reason and that it goes in once the disk frees.
func TestRecord_Held(t *testing.T) {
	why := fmt.Errorf("%w: the disk under the log's store is short of its reserve of free space (3 bytes free)", api.ErrHeld)
	r, warn := recorder(t, func(context.Context, api.HookRequest) error { return why })
	if err := r.Record(t.Context(), "hook test", []byte(`{"a":1}`), func(b []byte) ([]byte, error) { return b, nil }); err != nil {
		t.Fatal(err)
	}
	want := "logbook hook: kept in spool: serve holds appends: the disk under the log's store is short of its reserve of free space (3 bytes free); " + hooksock.HeldKept + "\n"
	if warn.String() != want {
		t.Errorf("warned %q\nwant   %q", warn.String(), want)
	}
}

// TestRecord_KeptAside: a payload prepare refuses is kept aside and the
// error names where.
func TestRecord_KeptAside(t *testing.T) {
	r, _ := recorder(t, func(context.Context, api.HookRequest) error { t.Error("delivered"); return nil })
	err := r.Record(t.Context(), "hook test", []byte(`nope`), func([]byte) ([]byte, error) { return nil, errors.New("not JSON") })
	if err == nil || !strings.HasPrefix(err.Error(), "hook test: not JSON (kept aside as "+filepath.Join(r.Spool, claude.RejectedDir)) {
		t.Fatalf("Record = %v", err)
	}
	es, _ := os.ReadDir(filepath.Join(r.Spool, claude.RejectedDir))
	if len(es) == 0 {
		t.Error("nothing kept aside")
	}
}

func TestRedactMessage_QuotedSpans(t *testing.T) {
	red, err := redact.New([]string{`word`})
	if err != nil {
		t.Fatal(err)
	}
	got := RedactMessage(red, `word refused: field "a word"`)
	if got != `word refused: field "a [REDACTED:custom-1]"` {
		t.Errorf("RedactMessage = %q; want the quoted span redacted, the message's own words kept", got)
	}
}

// A quoted span whose redaction is longer than the span leaves the rest
// of the message whole: the scan goes on after the span it read, not
// after the span it wrote.
func TestRedactMessage_LongerRedactionKeepsTheRest(t *testing.T) {
	red, err := redact.New([]string{`word`})
	if err != nil {
		t.Fatal(err)
	}
	got := RedactMessage(red, `field "a word" refused: see "x word" at line 3`)
	want := `field "a [REDACTED:custom-1]" refused: see "x [REDACTED:custom-1]" at line 3`
	if got != want {
		t.Errorf("RedactMessage = %q; want %q", got, want)
	}
}

// TestRecord_NoPayload: an empty stdin, or one of white space only, is
// refused naming what was read; nothing is delivered, spooled or kept.
func TestRecord_NoPayload(t *testing.T) {
	for _, in := range []string{"", " \n\t"} {
		r, _ := recorder(t, func(context.Context, api.HookRequest) error {
			t.Errorf("%q delivered", in)
			return nil
		})
		err := r.Record(t.Context(), "hook test", []byte(in), func(b []byte) ([]byte, error) { return b, nil })
		if err == nil || !strings.HasPrefix(err.Error(), "hook test: no payload on standard input") {
			t.Errorf("%q: %v, want no payload", in, err)
		}
		if ents, _ := os.ReadDir(filepath.Join(r.Spool, claude.RejectedDir)); len(ents) != 0 {
			t.Errorf("%q: kept aside %d files", in, len(ents))
		}
		if sp, err := claude.Open(r.Spool); err == nil {
			if waiting, _ := sp.HasPending(); waiting {
				t.Errorf("%q: spooled", in)
			}
		}
	}
}
