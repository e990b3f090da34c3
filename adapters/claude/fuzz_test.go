package claude

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// checkObservation asserts what every parse guarantees, error or not:
// Raw is valid UTF-8 within the cap and signal texts are short and valid.
func checkObservation(t *testing.T, p *Parser, o events.Observation) {
	t.Helper()
	if !utf8.ValidString(o.Raw) || len(o.Raw) > p.MaxRaw() {
		t.Fatalf("raw: %d bytes (cap %d), valid UTF-8 %v", len(o.Raw), p.MaxRaw(), utf8.ValidString(o.Raw))
	}
	if o.Cut != nil && o.Cut.Kept != len(o.Raw) {
		t.Fatalf("cut keeps %d bytes, raw has %d", o.Cut.Kept, len(o.Raw))
	}
	for _, s := range o.Signals {
		if len(s.Text) > MaxSigText || !utf8.ValidString(s.Text) {
			t.Fatalf("%s text: %d bytes, valid UTF-8 %v", s.Kind, len(s.Text), utf8.ValidString(s.Text))
		}
	}
}

// FuzzParseLine: parsing never panics, and yields an error or an
// observation whose Raw is valid UTF-8 within the cap. Seeds: every line
// of testdata/session.jsonl and testdata/fuzz/FuzzParseLine.
func FuzzParseLine(f *testing.F) {
	for l, err := range ingest.ReadLines(filepath.Join("testdata", "session.jsonl"), 0) {
		if err == nil && !l.Torn {
			f.Add(l.Bytes)
		}
	}
	p, err := NewParser(Config{MaxRaw: 512})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := p.Line("f.jsonl", 1, b)
		if err != nil {
			if _, ok := err.(*LineError); !ok {
				t.Fatalf("error %v is a %T, want *LineError", err, err)
			}
		}
		checkObservation(t, p, o)
	})
}

// FuzzParseHook: parsing never panics, and yields an error or an
// observation whose Raw is valid UTF-8 within the cap. Seeds: every
// payload in testdata/hooks and testdata/fuzz/FuzzParseHook.
func FuzzParseHook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hooks", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	p, err := NewParser(Config{MaxRaw: 256})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := p.Hook(b)
		if err != nil {
			if _, ok := err.(*HookError); !ok {
				t.Fatalf("error %v is a %T, want *HookError", err, err)
			}
			return
		}
		if o.Key == "" || o.Kind == "" {
			t.Fatalf("observation without key or kind: %+v", o)
		}
		checkObservation(t, p, o)
	})
}
