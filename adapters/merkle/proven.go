package merkle

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// chunkLevel is the level of the stored subtree hashes Prove proves
// against a root: chunks of 2^chunkLevel = 256 leaves, the size of the
// runs of messages a read's decoding goroutines take (natslog's
// decodeChunk), so that two of them checking consecutive runs bind
// chunks of their own at once rather than one waiting while the other
// binds a chunk both runs lie in.
const chunkLevel = 8

// Proven is a stored tree whose first Size leaves are bound to a signed
// root, lazily: Prove binds the stored hash of every complete chunk of
// 256 leaves (and each leaf of the last, incomplete chunk) to the root;
// a complete chunk's leaves are bound to its hash the first time Check
// is asked about one of them. A stored hash proven so is the hash of the
// leaf the signed tree holds (SHA-256 collision resistance), whatever
// wrote the file, so Check compares a message read from the stream with
// it: RFC 6962 leaf hashing costs a SHA-256 of the leaf and, once per
// chunk, 255 interior hashes. Safe for concurrent use.
type Proven struct {
	t *Tree
	// hashes is t's stored hashes when Prove ran, at least those of the
	// first n leaves: a Tree only appends, so they are read here without
	// its lock (two decoding goroutines taking it for every leaf
	// contended on it).
	hashes []tlog.Hash
	n      int64
	root   tlog.Hash
	full   int64         // complete chunks among the first n leaves
	bound  []atomic.Bool // per complete chunk: its leaves checked against its stored hash
	// binding serializes the binding of a chunk (chunk c takes
	// binding[c%len]): a run of messages a decoding goroutine takes
	// may straddle two chunks (a read from mid-history, messages other
	// than events), so two of them may meet the same unbound chunk at
	// once, and each hashed its 255 interior nodes.
	binding [16]sync.Mutex
}

// Prove binds the first n leaves of the stored tree t to root, as a
// signed checkpoint of n leaves states it. It fails when t holds fewer
// than n leaves or its stored hashes do not make root.
func Prove(t *Tree, n int64, root tlog.Hash) (*Proven, error) {
	if n <= 0 || t.Size() < n {
		return nil, fmt.Errorf("prove %d leaves: the stored hashes hold %d", n, t.Size())
	}
	t.mu.RLock()
	hs := t.hashes
	t.mu.RUnlock()
	p := &Proven{t: t, hashes: hs, n: n, root: root, full: n >> chunkLevel}
	p.bound = make([]atomic.Bool, p.full)
	got, err := p.rootOf(0, n, chunkLevel)
	if err != nil {
		return nil, err
	}
	if got != root {
		return nil, fmt.Errorf("prove %d leaves: the stored hashes make root %s, the checkpoint says %s", n, got, root)
	}
	return p, nil
}

// Size returns the leaves proven: stream sequences 1..Size.
func (p *Proven) Size() int64 { return p.n }

// stored returns the stored hash of the node at level and index.
func (p *Proven) stored(level int, index int64) (tlog.Hash, error) {
	i := tlog.StoredHashIndex(level, index)
	if i < 0 || i >= int64(len(p.hashes)) {
		return tlog.Hash{}, fmt.Errorf("tree of %d leaves: no stored hash at level %d, index %d", p.t.Size(), level, index)
	}
	return p.hashes[i], nil
}

// rootOf returns the RFC 6962 hash of leaves [lo, hi), taking the
// stored hash of each aligned complete subtree of 2^level leaves and
// hashing everything above it and every leaf outside one.
func (p *Proven) rootOf(lo, hi int64, level int) (tlog.Hash, error) {
	n := hi - lo
	if n == int64(1)<<level {
		return p.stored(level, lo>>level)
	}
	if n == 1 {
		return p.stored(0, lo)
	}
	k := int64(1)
	for k<<1 < n {
		k <<= 1
	}
	l, err := p.rootOf(lo, lo+k, level)
	if err != nil {
		return tlog.Hash{}, err
	}
	r, err := p.rootOf(lo+k, hi, level)
	if err != nil {
		return tlog.Hash{}, err
	}
	return tlog.NodeHash(l, r), nil
}

// chunkRoot returns the RFC 6962 hash of the complete chunk of leaves
// [lo, lo+256) from their stored hashes, level by level (the tree of a
// power of two leaves is complete: each node hashes two neighbours of
// the level below), with one SHA-256 state reset for each node: what
// rootOf(lo, lo+256, 0) returns, without a call of tlog.NodeHash's
// state made anew, or of rootOf, for each of its 255 nodes.
func (p *Proven) chunkRoot(lo int64) (tlog.Hash, error) {
	var level [1 << chunkLevel]tlog.Hash
	for i := range level {
		h, err := p.stored(0, lo+int64(i))
		if err != nil {
			return tlog.Hash{}, err
		}
		level[i] = h
	}
	var nh nodeHasher
	nh.init()
	for n := len(level); n > 1; n /= 2 {
		for i := range n / 2 {
			level[i] = nh.node(level[2*i], level[2*i+1])
		}
	}
	return level[0], nil
}

// nodeHasher hashes interior nodes as tlog.NodeHash does (SHA-256 of
// 0x01, the left and the right hash) with one SHA-256 state, reset for
// each node. Not safe for concurrent use.
type nodeHasher struct {
	h   hash.Hash
	in  [1 + 2*tlog.HashSize]byte
	sum [sha256.Size]byte
}

// init makes nh's SHA-256 state.
func (nh *nodeHasher) init() { nh.h = sha256.New() }

// node returns tlog.NodeHash(left, right).
func (nh *nodeHasher) node(left, right tlog.Hash) tlog.Hash {
	nh.in[0] = 0x01
	copy(nh.in[1:], left[:])
	copy(nh.in[1+tlog.HashSize:], right[:])
	nh.h.Reset()
	nh.h.Write(nh.in[:])
	return tlog.Hash(nh.h.Sum(nh.sum[:0]))
}

// Leaf returns the proven hash of leaf i (0-based: stream sequence i+1).
func (p *Proven) Leaf(i int64) (tlog.Hash, error) {
	if i < 0 || i >= p.n {
		return tlog.Hash{}, fmt.Errorf("leaf %d: the checkpoint covers %d", i, p.n)
	}
	if c := i >> chunkLevel; c < p.full && !p.bound[c].Load() {
		if err := p.bind(c); err != nil {
			return tlog.Hash{}, err
		}
	}
	return p.stored(0, i)
}

// bind checks the stored leaf hashes of complete chunk c against its
// stored subtree hash, which Prove bound to the root, once: a caller
// that finds another binding c waits for it.
func (p *Proven) bind(c int64) error {
	mu := &p.binding[c%int64(len(p.binding))]
	mu.Lock()
	defer mu.Unlock()
	if p.bound[c].Load() {
		return nil
	}
	lo := c << chunkLevel
	got, err := p.chunkRoot(lo)
	if err != nil {
		return err
	}
	want, err := p.stored(chunkLevel, c)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("seq %d..%d: the stored leaf hashes do not make the stored subtree hash the checkpoint's root binds (the stored hashes, merkle/ in the data dir, were changed or damaged: move merkle/ aside and start serve again, which makes them anew from the log, then run `logbook verify`)", lo+1, lo+1<<chunkLevel)
	}
	p.bound[c].Store(true)
	return nil
}

// Check returns nil when m is the leaf at its sequence of the proven
// tree, and otherwise an error naming m's sequence: "seq N: the stored
// message hashes to X, the signed checkpoint's tree (size S) holds Y".
func (p *Proven) Check(m natslog.Msg) error {
	want, err := p.Leaf(int64(m.Seq) - 1)
	if err != nil {
		return fmt.Errorf("seq %d: %w", m.Seq, err)
	}
	return p.compare(m.Seq, LeafHash(m), want)
}

// CheckHeader is Check of m, a raw read's message whose header block
// (m.HeaderBlock(), not nil) h holds parsed by h.Parse, which reported
// true: the leaf is hashed from h's fields, the block not walked again
// (natslog.Judged.CheckHeader). Given a message whose block h was not
// parsed from, it checks the headers h holds, not the block's.
func (p *Proven) CheckHeader(m natslog.Msg, h *natslog.RawHeader) error {
	want, err := p.Leaf(int64(m.Seq) - 1)
	if err != nil {
		return fmt.Errorf("seq %d: %w", m.Seq, err)
	}
	return p.compare(m.Seq, leafHashFields(m.Seq, m.Subject, h.Fields(), m.Data), want)
}

// compare returns nil when got, the leaf hash of the message at seq,
// is want, the proven one, and Check's error otherwise.
func (p *Proven) compare(seq uint64, got, want tlog.Hash) error {
	if got != want {
		return fmt.Errorf("seq %d: the stored message hashes to %s, the signed checkpoint's tree (seq 1..%d, root %s) holds %s: changed since serve judged it"+natslog.VerifyHint, seq, got, p.n, p.root, want)
	}
	return nil
}
