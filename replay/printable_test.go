package replay

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPrintableASCII_AsByteLoop: printableASCII agrees with a test of
// each byte on every byte value at every place of strings of 0 to 20
// bytes, and on strings of random bytes.
func TestPrintableASCII_AsByteLoop(t *testing.T) {
	byteLoop := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x7f {
				return false
			}
		}
		return true
	}
	for n := range 21 {
		base := []byte(strings.Repeat("a~ Z", 6)[:n])
		if !printableASCII(string(base)) {
			t.Fatalf("printableASCII(%q) = false", base)
		}
		for at := range n {
			for c := range 256 {
				s := append([]byte(nil), base...)
				s[at] = byte(c)
				if got, want := printableASCII(string(s)), byteLoop(string(s)); got != want {
					t.Fatalf("printableASCII(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			s[i] = byte(0x1e + r.IntN(0x63)) // mostly printable, some edges
		}
		if got, want := printableASCII(string(s)), byteLoop(string(s)); got != want {
			t.Fatalf("printableASCII(%q) = %v, want %v", s, got, want)
		}
	}
}
