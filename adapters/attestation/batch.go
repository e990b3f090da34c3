package attestation

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/mod/sumdb/tlog"
)

// Headers of a message signed as one of a batch (see the package doc,
// "Batch signatures"). Such a message carries Lb-Key and these four, and
// no Lb-Sig.
const (
	// HeaderBatch holds "<index>/<n>": the message's leaf index in its
	// batch (0-based) and the batch's leaf count, both decimal.
	HeaderBatch = "Lb-Batch"
	// HeaderRoot holds the standard base64 of the batch's 32-byte RFC 6962
	// root: the tree hash of its n leaves (BatchLeaf).
	HeaderRoot = "Lb-Root"
	// HeaderBatchSig holds the standard base64 Ed25519 signature of
	// BatchStatement(n, root).
	HeaderBatchSig = "Lb-Batch-Sig"
	// HeaderProof holds the standard base64 of the message's RFC 6962
	// inclusion proof (audit path): its hashes, 32 bytes each, concatenated
	// in tlog.RecordProof order (the leaf's sibling first).
	HeaderProof = "Lb-Proof"
)

// MaxBatchLeaves is the most messages one batch signature covers; a
// batch form that claims more is refused unread.
const MaxBatchLeaves = 1 << 16

// batchPrefix starts every batch statement. It differs from the single
// form's first line (signedPrefix), so neither signature is ever taken
// for the other.
const batchPrefix = "logbook batch signature v1\n"

// BatchStatement returns the bytes a batch signature covers:
//
//	logbook batch signature v1
//	<n>                 the batch's leaf count, decimal
//	<root>              standard base64 of its 32-byte RFC 6962 root
//
// each line ended by '\n'.
func BatchStatement(n int64, root tlog.Hash) []byte {
	b := make([]byte, 0, len(batchPrefix)+20+46)
	b = append(b, batchPrefix...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, '\n')
	b = base64.StdEncoding.AppendEncode(b, root[:])
	return append(b, '\n')
}

// BatchLeaf returns the RFC 6962 leaf hash of one message of a batch:
// tlog.RecordHash (SHA-256 of 0x00 and the data) of exactly the bytes a
// single signature covers, Signed(subject, expect, data).
func BatchLeaf(subject, expect string, data []byte) tlog.Hash {
	return tlog.RecordHash(Signed(subject, expect, data))
}

// Signable is one message to sign: its subject, its
// Nats-Expected-Last-Subject-Sequence header ("" when it carries none)
// and its body. Data is not retained.
type Signable struct {
	Subject, Expect string
	Data            []byte
}

// BatchSig is the header values that one message of a signed batch
// carries: Lb-Key, Lb-Batch, Lb-Root, Lb-Batch-Sig and Lb-Proof.
type BatchSig struct {
	Key, Batch, Root, Sig, Proof string
}

// SignBatch signs msgs, 2 to MaxBatchLeaves messages, with one Ed25519
// signature over the RFC 6962 root of their leaves (BatchLeaf, in
// order), and returns each message's header values, in the order of
// msgs. Each message's proof shows its leaf under the root, so a reader
// checks it alone. It errors on fewer than 2 or more than
// MaxBatchLeaves messages (sign one with Sign).
func (k *Key) SignBatch(msgs []Signable) ([]BatchSig, error) {
	n := len(msgs)
	if n < 2 || n > MaxBatchLeaves {
		return nil, fmt.Errorf("attest: sign a batch of %d messages: want 2 to %d", n, MaxBatchLeaves)
	}
	leaves := make([]tlog.Hash, n)
	for i, m := range msgs {
		leaves[i] = BatchLeaf(m.Subject, m.Expect, m.Data)
	}
	root, proofs := batchTree(leaves)
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(k.Private, BatchStatement(int64(n), root)))
	rootText := base64.StdEncoding.EncodeToString(root[:])
	nText := "/" + strconv.Itoa(n)
	out := make([]BatchSig, n)
	buf := make([]byte, 0, 32*len(proofs[0]))
	for i, p := range proofs {
		buf = buf[:0]
		for _, h := range p {
			buf = append(buf, h[:]...)
		}
		out[i] = BatchSig{Key: k.ID, Batch: strconv.Itoa(i) + nText, Root: rootText, Sig: sig, Proof: base64.StdEncoding.EncodeToString(buf)}
	}
	return out, nil
}

// batchTree returns the RFC 6962 root of leaves (at least one) and each
// leaf's inclusion proof, in tlog.RecordProof order (the leaf's sibling
// first, the root's child last): the tree of RFC 6962 §2.1, each subtree
// split at the largest power of two below its size, hashed with
// tlog.NodeHash in one pass (n-1 node hashes), so that tlog.CheckRecord
// takes each proof.
func batchTree(leaves []tlog.Hash) (tlog.Hash, []tlog.RecordProof) {
	proofs := make([]tlog.RecordProof, len(leaves))
	depth := bits.Len(uint(len(leaves) - 1)) // the longest proof
	for i := range proofs {
		proofs[i] = make(tlog.RecordProof, 0, depth)
	}
	var build func(lo, hi int) tlog.Hash
	build = func(lo, hi int) tlog.Hash {
		if hi-lo == 1 {
			return leaves[lo]
		}
		k := 1 << (bits.Len(uint(hi-lo-1)) - 1) // the largest power of 2 < hi-lo
		left, right := build(lo, lo+k), build(lo+k, hi)
		for i := lo; i < lo+k; i++ {
			proofs[i] = append(proofs[i], right)
		}
		for i := lo + k; i < hi; i++ {
			proofs[i] = append(proofs[i], left)
		}
		return tlog.NodeHash(left, right)
	}
	return build(0, len(leaves)), proofs
}

// batchForm is a message's batch headers, parsed: a value with no
// pointer, so that parsing one allocates nothing.
type batchForm struct {
	index, n int64
	root     tlog.Hash
	sig      [ed25519.SignatureSize]byte
	// proof holds the proof's first hashes, proofLen of them when
	// proofLen is at most maxProof (a longer one is too long for any
	// batch: tlog.CheckRecord refuses it).
	proof    [maxProof]tlog.Hash
	proofLen int
}

// maxProof is the longest proof of a leaf of a batch of MaxBatchLeaves.
const maxProof = 16

// hashes returns f's proof, and false when it is longer than any batch's.
func (f *batchForm) hashes() (tlog.RecordProof, bool) {
	if f.proofLen > len(f.proof) {
		return nil, false
	}
	return f.proof[:f.proofLen], true
}

// errBatchForm is wrapped by every error parseBatch returns.
var errBatchForm = errors.New("malformed batch signature headers")

// parseBatch parses m's batch headers, refusing an index or count that
// is not canonical decimal, a count below 2 or above MaxBatchLeaves, an
// index not below it, a root, signature or proof that is not standard
// base64 of the right length (a proof of a whole number of 32-byte
// hashes, at most 64 of them; whether it has the length the tree needs
// is CheckRecord's).
func parseBatch(m Message) (batchForm, error) {
	var f batchForm
	is, ns, ok := strings.Cut(m.Batch, "/")
	if !ok {
		return f, fmt.Errorf("%w: %s %q is not <index>/<n>", errBatchForm, HeaderBatch, m.Batch)
	}
	var err1, err2 error
	f.index, err1 = canonicalInt(is)
	f.n, err2 = canonicalInt(ns)
	switch {
	case err1 != nil || err2 != nil:
		return f, fmt.Errorf("%w: %s %q is not <index>/<n> in decimal", errBatchForm, HeaderBatch, m.Batch)
	case f.n < 2 || f.n > MaxBatchLeaves:
		return f, fmt.Errorf("%w: %s %q: a batch has 2 to %d messages", errBatchForm, HeaderBatch, m.Batch, MaxBatchLeaves)
	case f.index >= f.n:
		return f, fmt.Errorf("%w: %s %q: index past the batch", errBatchForm, HeaderBatch, m.Batch)
	}
	// Each decoded on the stack: base64 of n bytes decodes into at most
	// n+2 before its length is checked.
	var buf [64*sha256.Size + 3]byte
	root, err := decodeBase64(buf[:0:sha256.Size+3], m.Root)
	if err != nil || len(root) != sha256.Size {
		return f, fmt.Errorf("%w: %s is not standard base64 of %d bytes", errBatchForm, HeaderRoot, sha256.Size)
	}
	copy(f.root[:], root)
	sig, err := decodeBase64(buf[:0:ed25519.SignatureSize+3], m.BatchSig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return f, fmt.Errorf("%w: %s is not standard base64 of %d bytes", errBatchForm, HeaderBatchSig, ed25519.SignatureSize)
	}
	copy(f.sig[:], sig)
	proof, err := decodeBase64(buf[:0], m.Proof)
	if err != nil || len(proof) == 0 || len(proof)%sha256.Size != 0 || len(proof)/sha256.Size > 64 {
		return f, fmt.Errorf("%w: %s is not standard base64 of 32-byte hashes", errBatchForm, HeaderProof)
	}
	f.proofLen = len(proof) / sha256.Size
	for i := range min(f.proofLen, len(f.proof)) {
		copy(f.proof[i][:], proof[i*sha256.Size:])
	}
	return f, nil
}

// decodeBase64 returns the standard base64 decoding of s
// (base64.StdEncoding.DecodeString's), in dst's memory when it fits in
// its capacity (else in memory of its own).
func decodeBase64(dst []byte, s string) ([]byte, error) {
	if base64.StdEncoding.DecodedLen(len(s)) > cap(dst) {
		return base64.StdEncoding.DecodeString(s)
	}
	src := unsafe.Slice(unsafe.StringData(s), len(s)) // only read
	n, err := base64.StdEncoding.Decode(dst[:cap(dst)], src)
	return dst[:n], err
}

// canonicalInt parses s as a non-negative decimal integer written as
// strconv writes it: no sign, no leading zero, no space.
func canonicalInt(s string) (int64, error) {
	canonical := s != "" && (s[0] != '0' || len(s) == 1)
	for i := 0; canonical && i < len(s); i++ {
		canonical = '0' <= s[i] && s[i] <= '9'
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if !canonical || err != nil {
		return 0, fmt.Errorf("%q is not a canonical decimal", s)
	}
	return v, nil
}

// roots is the record of the batch statements a Verifier and its
// siblings verified: the verdict on a batch signature is a function of
// the public key, the signature and the statement (count and root)
// alone, so each is verified once however many of the batch's messages
// are judged, and a Verifier that meets one while another verifies it
// waits for that verdict. It keeps rootSlots verdicts, the oldest
// dropped first (a batch's messages are stored together, so a reader
// meets them together); safe for concurrent use.
type roots struct {
	mu   sync.Mutex
	m    map[[32]byte]*check // guarded by mu; made on first use
	ring [][32]byte          // the keys of m in the order they were added, rootSlots of them; guarded by mu
	next int                 // guarded by mu

	// trees holds the nodes proven under the last treeSlots batch trees
	// met (batchNodes), the oldest replaced first; guarded by mu.
	trees    [treeSlots]*batchNodes
	treeNext int // guarded by mu
}

// treeSlots is how many batch trees' proven nodes a roots record keeps:
// a batch's messages are stored together, and the decoding goroutines
// of one read take consecutive runs of them, so the few last met are
// those met again.
const treeSlots = 16

// treeMaxLeaves is the largest batch whose proven nodes are kept (at
// most 2·treeMaxLeaves-1 hashes, 256 KiB); a proof in a larger one is
// checked whole each time (tlog.CheckRecord), so that a message that
// claims a batch of MaxBatchLeaves costs no memory of its size.
const treeMaxLeaves = 4096

// batchNodes is the nodes of one batch tree, its leaf count n and its
// root, that a proof checked so far showed to lie under root: each node
// on the path of a leaf proven, and each sibling of one. Nodes are kept
// by in-order index (leaf i at 2i, the inner node whose halves meet
// before leaf s at 2s-1: each of the n-1 places between two leaves is
// the split of one inner node), 2n-1 of them. A proven node's hash is
// the one hash that node can have under root (SHA-256 collision
// resistance), so a proof that reaches a proven node with that node's
// hash, and whose hashes above it are the proven siblings of the path
// on to root, holds exactly when the whole proof would
// (tlog.CheckRecord): its check hashes nothing more, and each proof of
// a batch of n messages hashes, all told, about n inner nodes rather
// than n·log2(n).
type batchNodes struct {
	n    int64
	root tlog.Hash

	mu    sync.Mutex
	hash  []tlog.Hash // by in-order index; guarded by mu
	known []bool      // hash[i] is proven; guarded by mu

	// The last verdict on the tree's statement (BatchStatement of n and
	// root): whether sig is pub's signature of it; guarded by mu.
	pub    ed25519.PublicKey // nil: none yet
	sig    [ed25519.SignatureSize]byte
	sigged bool
}

// verdict returns the verdict kept on whether sig (SignatureSize bytes)
// is pub's signature of t's statement, and whether one is kept.
func (t *batchNodes) verdict(pub ed25519.PublicKey, sig []byte) (ok, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pub == nil || !t.pub.Equal(pub) || string(t.sig[:]) != string(sig) {
		return false, false
	}
	return t.sigged, true
}

// keepVerdict keeps ok, the verdict on whether sig is pub's signature
// of t's statement, in place of the one kept before.
func (t *batchNodes) keepVerdict(pub ed25519.PublicKey, sig []byte, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pub, t.sigged = pub, ok
	copy(t.sig[:], sig)
}

// tree returns the record of the nodes proven under the batch tree of n
// leaves (2 to treeMaxLeaves) and root, made empty when none is kept
// (replacing the oldest).
func (c *roots) tree(n int64, root tlog.Hash) *batchNodes {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.trees {
		if t != nil && t.n == n && t.root == root {
			return t
		}
	}
	t := &batchNodes{n: n, root: root, hash: make([]tlog.Hash, 2*n-1), known: make([]bool, 2*n-1)}
	c.trees[c.treeNext] = t
	c.treeNext = (c.treeNext + 1) % treeSlots
	return t
}

// maxProofLen is the longest proof of a leaf of a batch of treeMaxLeaves.
const maxProofLen = 12

// check reports whether proof shows leaf, the hash of leaf index (below
// t.n), under t.root: what tlog.CheckRecord(proof, t.n, t.root, index,
// leaf) reports, taking the nodes proven before. When it holds, every
// node of the path and each sibling is proven from then on. Safe for
// concurrent use.
func (t *batchNodes) check(proof tlog.RecordProof, index int64, leaf tlog.Hash) bool {
	// The path from the root down to the leaf: at each depth the node
	// on it, its sibling, and which of the two is the left one.
	var (
		node, sib [maxProofLen]int64
		left      [maxProofLen]bool
		hs        [maxProofLen]tlog.Hash // the hash the proof gives each node of the path
	)
	d := 0
	for lo, hi := int64(0), t.n; hi-lo > 1; d++ {
		if d == maxProofLen {
			return false // not a tree of treeMaxLeaves leaves
		}
		s := lo + int64(1)<<(bits.Len64(uint64(hi-lo-1))-1) // the largest power of 2 < hi-lo, past lo
		if index < s {
			node[d], sib[d], left[d], hi = inorder(lo, s), inorder(s, hi), true, s
		} else {
			node[d], sib[d], left[d], lo = inorder(s, hi), inorder(lo, s), false, s
		}
	}
	if len(proof) != d {
		return false // as CheckRecord: no hash missing, none too many
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := leaf
	j := 0 // proof[j] is the sibling at depth d-1-j
	for ; j < d; j++ {
		e := d - 1 - j
		if t.known[node[e]] && t.hash[node[e]] == h && t.provenAbove(proof[j:], sib[:e+1]) {
			break // the rest of the path is proven
		}
		hs[e] = h
		if left[e] {
			h = tlog.NodeHash(h, proof[j])
		} else {
			h = tlog.NodeHash(proof[j], h)
		}
	}
	if j == d && h != t.root {
		return false
	}
	for k := range j { // the nodes below the proven ones, and their siblings
		e := d - 1 - k
		t.hash[node[e]], t.known[node[e]] = hs[e], true
		t.hash[sib[e]], t.known[sib[e]] = proof[k], true
	}
	return true
}

// provenAbove reports whether each hash of rest, a proof's hashes from
// one depth up to the root's child, is the proven hash of the sibling it
// stands for (sibs, from the root's child down to that depth).
func (t *batchNodes) provenAbove(rest tlog.RecordProof, sibs []int64) bool {
	for j, p := range rest {
		s := sibs[len(sibs)-1-j]
		if !t.known[s] || t.hash[s] != p {
			return false
		}
	}
	return true
}

// inorder returns the in-order index of the node of a batch tree that
// covers leaves [lo, hi) (batchTree's shape): 2lo for a leaf, else 2s-1
// where s is where its halves meet.
func inorder(lo, hi int64) int64 {
	if hi-lo == 1 {
		return 2 * lo
	}
	return 2*(lo+int64(1)<<(bits.Len64(uint64(hi-lo-1))-1)) - 1
}

// rootSlots is how many batch verdicts a roots record keeps (about
// 200 KiB).
const rootSlots = 2048

// verify reports whether sig is pub's signature of statement, taking
// the verdict of an earlier or concurrent check of the same three; it
// adds each Ed25519 verification it makes to count.
func (c *roots) verify(pub ed25519.PublicKey, sig, statement []byte, count *atomic.Uint64) bool {
	sum := checkSum(pub, sig, statement)
	c.mu.Lock()
	if k := c.m[sum]; k != nil {
		c.mu.Unlock()
		<-k.done
		return k.ok
	}
	if c.m == nil {
		c.m, c.ring = make(map[[32]byte]*check), make([][32]byte, rootSlots)
	}
	if len(c.m) >= rootSlots {
		delete(c.m, c.ring[c.next])
	}
	k := &check{done: make(chan struct{})}
	c.m[sum] = k
	c.ring[c.next] = sum
	c.next = (c.next + 1) % rootSlots
	c.mu.Unlock()
	k.ok = ed25519.Verify(pub, statement, sig)
	count.Add(1)
	close(k.done)
	return k.ok
}

// verifyBatch reports whether m, a message in the batch form, is signed
// by pub: its leaf (BatchLeaf of its subject, expect and data) is at its
// index under its root by its proof (each node proven once per batch
// tree: batchNodes), and the batch statement of its count and root
// verifies (once per key, root and signature: rs).
func verifyBatch(rs *roots, pub ed25519.PublicKey, m Message, count *atomic.Uint64) bool {
	f, err := parseBatch(m)
	if err != nil {
		return false
	}
	proof, ok := f.hashes()
	if !ok {
		return false
	}
	leaf := batchLeaf(m.Subject, m.Expect, m.Data)
	if f.n > treeMaxLeaves {
		if tlog.CheckRecord(proof, f.n, f.root, f.index, leaf) != nil {
			return false
		}
		return rs.verify(pub, f.sig[:], BatchStatement(f.n, f.root), count)
	}
	t := rs.tree(f.n, f.root)
	if !t.check(proof, f.index, leaf) {
		return false
	}
	if ok, known := t.verdict(pub, f.sig[:]); known {
		return ok
	}
	ok = rs.verify(pub, f.sig[:], BatchStatement(f.n, f.root), count)
	t.keepVerdict(pub, f.sig[:], ok)
	return ok
}

// batchLeaf is BatchLeaf, the bytes hashed written out on the stack
// when they fit.
func batchLeaf(subject, expect string, data []byte) tlog.Hash {
	if expect == "" {
		expect = "-"
	}
	var buf [2048]byte
	b := append(buf[:0], 0x00)
	b = append(b, signedPrefix...)
	b = append(b, subject...)
	b = append(b, '\n')
	b = append(b, expect...)
	b = append(b, '\n')
	return sha256.Sum256(append(b, data...))
}
