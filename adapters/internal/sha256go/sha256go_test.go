package sha256go

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// TestSum256 compares Sum256 with crypto/sha256 on the FIPS 180-4
// examples, on every length around the padding's block boundaries and
// on a few large random inputs.
func TestSum256(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	} {
		got := Sum256([]byte(c.in))
		if h := hex.EncodeToString(got[:]); h != c.want {
			t.Errorf("Sum256(%q) = %s, want %s", c.in, h, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20+37)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for n := range 300 {
		if got, want := Sum256(buf[:n]), sha256.Sum256(buf[:n]); got != want {
			t.Fatalf("Sum256 of %d bytes = %x, want %x", n, got, want)
		}
	}
	for _, n := range []int{1 << 10, 256<<10 + 1, len(buf)} {
		if got, want := Sum256(buf[:n]), sha256.Sum256(buf[:n]); got != want {
			t.Fatalf("Sum256 of %d bytes = %x, want %x", n, got, want)
		}
	}
}

func BenchmarkSum256(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		Sum256(buf)
	}
}
