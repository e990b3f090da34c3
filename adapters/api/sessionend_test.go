package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// TestEndSession_RefusesBlankReason: a client talking NATS directly gets
// the CLI's rule for a reason: blank (whitespace only) or over 200 bytes
// is malformed, refused before anything is looked up or appended.
func TestEndSession_RefusesBlankReason(t *testing.T) {
	s := &Service{}
	for _, reason := range []string{"", " ", "\t\n \r", strings.Repeat("x", 201)} {
		b, err := json.Marshal(SessionEndRequest{ID: "s1", Reason: reason, Actor: "person:a", Ref: ulid.Make().String()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.EndSession(t.Context(), b); !errors.Is(err, events.ErrMalformed) || !strings.Contains(err.Error(), "not blank") {
			t.Errorf("reason %q: %v, want a malformed request naming the rule", reason, err)
		}
	}
}
