package execfast

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseArgs: what logbook-exec sends serve, and what it hands to
// `logbook exec` (ok false).
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		wantRest []string
		wantData string
		wantOK   bool
	}{
		{"Plain", []string{"--session", "S", "--", "make", "test"}, []string{"--session=S", "--", "make", "test"}, "", true},
		{"DataTaken", []string{"--data", "/d", "--session=S", "--", "true"}, []string{"--session=S", "--", "true"}, "/d", true},
		{"DataEquals", []string{"--data=/d", "--json", "--session", "S", "true"}, []string{"--json", "--session=S", "true"}, "/d", true},
		{"AfterDashDash", []string{"--session", "S", "--", "ls", "--data", "x", "-la"}, []string{"--session=S", "--", "ls", "--data", "x", "-la"}, "", true},
		{"ValueLooksLikeFlag", []string{"--env", "--data", "--session", "S", "--", "true"}, []string{"--env=--data", "--session=S", "--", "true"}, "", true},
		{"BoolWithValue", []string{"--tty=false", "--session", "S", "--", "true"}, []string{"--tty=false", "--session=S", "--", "true"}, "", true},
		{"Help", []string{"--help"}, nil, "", false},
		{"ShortHelp", []string{"--session", "S", "-h"}, nil, "", false},
		{"Unknown", []string{"--bogus", "--session", "S", "--", "true"}, nil, "", false},
		{"Shorthand", []string{"--session", "S", "-x", "--", "true"}, nil, "", false},
		{"NatsURL", []string{"--nats-url", "nats://h:4222", "--session", "S", "--", "true"}, nil, "", false},
		{"Creds", []string{"--creds=c.json", "--session", "S", "--", "true"}, nil, "", false},
		{"Socket", []string{"--socket", "/run/logbook", "--session", "S", "--", "true"}, nil, "", false},
		{"MissingValue", []string{"--session"}, nil, "", false},
		{"NoArgs", nil, nil, "", false},
		{"EmptyData", []string{"--data=", "--session", "S", "--", "true"}, nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rest, data, ok := parseArgs(c.args)
			if ok != c.wantOK || data != c.wantData {
				t.Fatalf("parseArgs(%q) = _, %q, %v; want %q, %v", c.args, data, ok, c.wantData, c.wantOK)
			}
			if ok {
				if diff := cmp.Diff(c.wantRest, rest); diff != "" {
					t.Errorf("rest (-want +got):\n%s", diff)
				}
			}
		})
	}
}
