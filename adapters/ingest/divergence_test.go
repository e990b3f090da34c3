package ingest

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestDivergence_Counts: how a changed transcript is said counts its
// lines and bytes in words that agree with them ("1 line", not "1 lines").
func TestDivergence_Counts(t *testing.T) {
	one := events.Fingerprint{Line: 1, Offset: 0, End: 1, SHA256: "x"}
	three := events.Fingerprint{Line: 3, Offset: 10, End: 20, SHA256: "x"}
	for _, tc := range []struct {
		imported, found events.Fingerprint
		size            int64
		want            string
	}{
		{one, events.Fingerprint{}, 0, "it is empty now (1 line, 1 byte imported)"},
		{three, events.Fingerprint{}, 0, "it is empty now (3 lines, 20 bytes imported)"},
		{three, events.Fingerprint{Line: 1}, 1, "it is shorter than what was imported, truncated after line 1 (1 byte now; 3 lines, 20 bytes imported)"},
	} {
		if _, got := divergence(tc.imported, tc.found, tc.size); got != tc.want {
			t.Errorf("divergence(%+v, %+v, %d) = %q, want %q", tc.imported, tc.found, tc.size, got, tc.want)
		}
	}
}
