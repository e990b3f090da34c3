package attestation

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"sync/atomic"
)

// checkSlots is how many verdicts a checks record keeps: one per stream
// sequence modulo it, so that a reader up to this many events behind
// another of the same process still finds the other's verdicts.
const checkSlots = 1 << 14

// checks is the record of the Ed25519 checks the Verifiers of one
// process made, shared among them (Verifier.Sibling): the verdict on a
// signature is a function of the public key, the signature and the
// signed bytes alone, so a Verifier that meets the same three at the same
// sequence takes the verdict instead of verifying again, and one that
// meets them while another is verifying them waits for that verdict.
// Each verdict is kept under the SHA-256 of those three, never under the
// sequence alone: other bytes at a sequence (a stream made again, another
// server) miss and are verified. It holds checkSlots verdicts (about
// 0.8 MiB), each new one at a sequence replacing the one kept at its
// slot; safe for concurrent use. Only Verifiers that have siblings keep
// one: a lone Verifier verifies without hashing anything first.
type checks struct {
	mu    sync.Mutex
	slots [checkSlots]checkSlot // guarded by mu
}

type checkSlot struct {
	seq uint64   // 0: empty
	sum [32]byte // checkSum of the verdict's key, signature and signed bytes
	c   *check
}

// check is one Ed25519 verification, under way until done is closed.
type check struct {
	done chan struct{}
	ok   bool // the signature verified; set before done is closed
}

// checkSum returns the SHA-256 of pub, sig and signed, each but the last
// prefixed by its length: the identity of one Ed25519 check.
func checkSum(pub ed25519.PublicKey, sig, signed []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{byte(len(pub)), byte(len(sig))})
	h.Write(pub)
	h.Write(sig)
	h.Write(signed)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// verify reports whether m's signature verifies with pub, taking the
// verdict of a check of the same key, signature and bytes at m.Seq when
// c (nil: none) keeps one, done or under way, and keeping its own
// otherwise; it adds each Ed25519 verification it makes to count.
func (c *checks) verify(pub ed25519.PublicKey, m Message, count *atomic.Uint64) bool {
	sig, err := base64.StdEncoding.DecodeString(m.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	signed := Signed(m.Subject, m.Expect, m.Data)
	if c == nil || m.Seq == 0 {
		count.Add(1)
		return ed25519.Verify(pub, signed, sig)
	}
	sum := checkSum(pub, sig, signed)
	slot := &c.slots[m.Seq%checkSlots]
	c.mu.Lock()
	if slot.seq == m.Seq && slot.sum == sum {
		k := slot.c
		c.mu.Unlock()
		<-k.done
		return k.ok
	}
	k := &check{done: make(chan struct{})}
	*slot = checkSlot{seq: m.Seq, sum: sum, c: k}
	c.mu.Unlock()
	k.ok = ed25519.Verify(pub, signed, sig)
	count.Add(1)
	close(k.done)
	return k.ok
}
