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

// TestEndSession_RefusesSecretNames: a session id, entry id or actor a
// redaction rule matches is refused as malformed, naming the field and
// the rule and never the value, before anything is looked up or
// appended.
func TestEndSession_RefusesSecretNames(t *testing.T) {
	s := &Service{}
	secret := "gl" + "pat-" + "Zq3Xv9Lm4Tn7Pw2Rk8Hs"
	for _, c := range []struct {
		req  SessionEndRequest
		want string
	}{
		{SessionEndRequest{ID: "s-" + secret, Reason: "gone", Actor: "person:a"}, "id: holds what looks like a secret (rule "},
		{SessionEndRequest{ID: "s1", Entry: secret, Reason: "gone", Actor: "person:a"}, "entry: holds what looks like a secret (rule "},
		{SessionEndRequest{ID: "s1", Reason: "gone", Actor: "person:" + secret}, "actor: holds what looks like a secret (rule "},
	} {
		c.req.Ref = ulid.Make().String()
		b, err := json.Marshal(c.req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.EndSession(t.Context(), b)
		if !errors.Is(err, events.ErrMalformed) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%+v: %v, want a malformed request saying %q", c.req, err, c.want)
		}
	}
}
