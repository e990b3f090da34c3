package events_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// FuzzDecode feeds arbitrary bytes to the strict decoder. The property:
// it never panics; it either refuses with one of the events sentinels, or
// returns an envelope that validates and whose wire form decodes to an
// equal envelope (a fixed point after one round).
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 10m ./events/
func FuzzDecode(f *testing.F) {
	golden, _ := filepath.Glob(filepath.Join("..", "testdata", "events", "*.json"))
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8","type":"session.ended","v":1,"agg":{"kind":"session","id":"s"},"ver":1,"at":"2026-11-30T10:00:00Z","data":{}}`))
	reg := events.NewRegistry()
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := reg.Decode(b)
		if err != nil {
			for _, s := range []error{events.ErrMalformed, events.ErrUnknownType, events.ErrUnknownVersion, events.ErrMissingCause} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no events sentinel: %v", err)
		}
		if err := reg.Validate(e); err != nil {
			t.Fatalf("decoded envelope does not validate: %v", err)
		}
		wire, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := reg.Decode(wire)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", wire, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(wire) {
			t.Fatalf("wire form not stable:\n%s\n%s", wire, again)
		}
	})
}
