package events

import "testing"

// TestIsUUID: a UUID's 8-4-4-4-12 hexadecimal text, either case, and
// nothing else.
func TestIsUUID(t *testing.T) {
	for s, want := range map[string]bool{
		"5e551011-0000-4000-8000-000000000001":  true,
		"5E551011-ABCD-4000-8000-00000000000F":  true,
		"5e551011-0000-4000-8000-00000000000g":  false,
		"5e551011-0000-4000-8000-0000000000011": false,
		"5e551011_0000-4000-8000-000000000001":  false,
		"agent-b0b0":                            false,
		"":                                      false,
	} {
		if got := IsUUID(s); got != want {
			t.Errorf("IsUUID(%q) = %v, want %v", s, got, want)
		}
	}
}
