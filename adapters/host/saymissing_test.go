package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// An event that follows one its aggregate lost is said at ERROR, once per
// aggregate however many follow; a forgery's quarantine is not said here.
func TestSayMissing(t *testing.T) {
	var said []string
	f := sayMissing(func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) })
	a := events.Aggregate{Kind: events.KindSession, ID: "a"}
	b := events.Aggregate{Kind: events.KindSession, ID: "b"}
	missing := attestation.Verdict{Status: attestation.FollowsMissing, Why: "ver 10 comes after ver 8"}
	for seq := uint64(14); seq < 20; seq++ {
		f(natslog.Quarantined{Seq: seq, Agg: a, Verdict: missing})
	}
	f(natslog.Quarantined{Seq: 30, Agg: b, Verdict: attestation.Verdict{Status: attestation.Unsigned}})
	f(natslog.Quarantined{Seq: 31, Agg: b, Verdict: missing})
	if len(said) != 2 || !strings.HasPrefix(said[0], "ERROR: the log lost an event of session/a: seq 14: ver 10") || !strings.HasPrefix(said[1], "ERROR: the log lost an event of session/b: seq 31") {
		t.Errorf("said %q", said)
	}
}
