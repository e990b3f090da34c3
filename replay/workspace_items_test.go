package replay

import (
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestPayloadItems_NumbersAsWritten: a count in a payload is shown as
// written, a large one never in exponent form.
func TestPayloadItems_NumbersAsWritten(t *testing.T) {
	recs := []events.Record{{Seq: 1, Envelope: events.Envelope{Type: "check.ended", Data: events.CheckEnded{OutputBytes: 100_000_000, DurationMS: 1500}}}}
	d := payloadItems(recs, "")[0].Detail
	if !strings.Contains(d, "output_bytes=100000000") || !strings.Contains(d, "duration_ms=1500") {
		t.Errorf("detail %s", d)
	}
}
