package events

import (
	"strings"
	"testing"
)

// TestValidID_NamesAByteAsItIs: a byte of an id outside ASCII is named in
// hex, not as the Latin-1 letter it would pass for.
func TestValidID_NamesAByteAsItIs(t *testing.T) {
	for id, want := range map[string]string{"sé": `byte '\xc3' at 1`, "a.b": `byte '.' at 1`, "a\nb": `byte '\n' at 1`} {
		if err := ValidID(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidID(%q) = %v, want %s", id, err, want)
		}
	}
}
