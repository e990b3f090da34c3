package merkle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/mod/sumdb/tlog"
)

// Tree is an RFC 6962 tree's stored hashes (tlog.StoredHashes), in
// memory and, when opened with a path, in an append-only file of 32-byte
// hashes in stored-hash index order (hash k at offset 32k). It costs
// about 64 bytes of memory and of file per leaf. A Tree is safe for
// concurrent use; only one process may append to a file.
type Tree struct {
	mu     sync.RWMutex
	hashes []tlog.Hash
	n      int64    // leaves
	f      *os.File // nil in memory
	synced int64    // hashes known to be on disk (the file's first synced*32 bytes)
}

// NewTree returns an empty tree held in memory only.
func NewTree() *Tree { return &Tree{} }

// OpenTree opens (creating it, mode 0600) the stored-hash file at path
// and returns the tree it holds. A tail that is not a whole leaf's worth
// of hashes (a write cut short by a crash) is cut off: the tree is then
// the leaves that were stored whole. Errors name path.
func OpenTree(path string) (*Tree, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open tree %s: %w", path, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read tree %s: %w", path, err)
	}
	t := parseTree(b)
	keep := int64(len(t.hashes))
	if int64(len(b)) != keep*tlog.HashSize {
		if err := f.Truncate(keep * tlog.HashSize); err != nil {
			f.Close()
			return nil, fmt.Errorf("cut tree %s to %d leaves: %w", path, t.n, err)
		}
	}
	if _, err := f.Seek(keep*tlog.HashSize, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("open tree %s: %w", path, err)
	}
	t.f, t.synced = f, keep
	return t, nil
}

// LoadTree reads the stored-hash file at path into a tree in memory,
// leaving the file alone (another process may be appending to it): a
// tail that is not a whole leaf's worth is left out. The file is read
// straight into the tree's hashes, with no copy of its bytes kept
// beside them: the file holds every stored hash of the log (about 64
// bytes a message), so a reader of a long log would otherwise touch
// twice that.
func LoadTree(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", path, err)
	}
	stored := fi.Size() / tlog.HashSize
	hs := make([]tlog.Hash, stored, stored+1024)
	// A tlog.Hash is 32 bytes with no padding: the slice's memory is
	// the file's layout.
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(hs))), len(hs)*tlog.HashSize)
	got, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		// A file cut short since (not a writer's way) reads as what
		// it held whole.
		return nil, fmt.Errorf("read tree %s: %w", path, err)
	}
	return treeOf(hs[:got/tlog.HashSize]), nil
}

// parseTree returns the tree of the most leaves whose stored hashes b
// holds whole.
func parseTree(b []byte) *Tree {
	hs := make([]tlog.Hash, len(b)/tlog.HashSize, len(b)/tlog.HashSize+1024)
	for i := range hs {
		copy(hs[i][:], b[i*tlog.HashSize:])
	}
	return treeOf(hs)
}

// treeOf returns the tree of the most leaves whose stored hashes hs
// holds, which it keeps (and appends to, in its capacity).
func treeOf(hs []tlog.Hash) *Tree {
	stored := int64(len(hs))
	// n is the most leaves whose stored hashes fit in the file.
	var n int64
	for lo, hi := int64(0), stored; lo <= hi; {
		mid := (lo + hi) / 2
		if tlog.StoredHashCount(mid) <= stored {
			n, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return &Tree{hashes: hs[:tlog.StoredHashCount(n)], n: n}
}

// Size returns the number of leaves.
func (t *Tree) Size() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}

// ReadHashes implements tlog.HashReader over the stored hashes. An index
// not stored yet is an error.
func (t *Tree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.readLocked(idx)
}

func (t *Tree) readLocked(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(t.hashes)) {
			return nil, fmt.Errorf("tree of %d leaves: no stored hash %d", t.n, x)
		}
		out[i] = t.hashes[x]
	}
	return out, nil
}

// AppendHash adds a leaf whose RFC 6962 leaf hash is h, in memory; Sync
// writes it to the file.
func (t *Tree) AppendHash(h tlog.Hash) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	hs, err := tlog.StoredHashesForRecordHash(t.n, h, tlog.HashReaderFunc(t.readLocked))
	if err != nil {
		return fmt.Errorf("append leaf %d: %w", t.n, err)
	}
	t.hashes = append(t.hashes, hs...)
	t.n++
	return nil
}

// Sync writes out every hash appended since the last Sync, at its place in
// the file, and makes it durable (fsync); nothing for a tree in memory. A
// write that fails (a full disk) changes nothing Sync relies on: the next
// Sync writes the same hashes at the same place again.
func (t *Tree) Sync() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil || t.synced == int64(len(t.hashes)) {
		return nil
	}
	buf := make([]byte, 0, (int64(len(t.hashes))-t.synced)*tlog.HashSize)
	for _, h := range t.hashes[t.synced:] {
		buf = append(buf, h[:]...)
	}
	if _, err := t.f.WriteAt(buf, t.synced*tlog.HashSize); err != nil {
		return fmt.Errorf("write tree %s: %w", t.f.Name(), err)
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("sync tree %s: %w", t.f.Name(), err)
	}
	t.synced = int64(len(t.hashes))
	return nil
}

// Root returns the tree hash of the first n leaves (0 < n ≤ Size; the
// empty tree's hash for 0).
func (t *Tree) Root(n int64) (tlog.Hash, error) {
	if n < 0 || n > t.Size() {
		return tlog.Hash{}, fmt.Errorf("root of %d leaves: the tree has %d", n, t.Size())
	}
	return tlog.TreeHash(n, t)
}

// Leaf returns the hash of leaf i (0-based; stream sequence i+1).
func (t *Tree) Leaf(i int64) (tlog.Hash, error) {
	if i < 0 || i >= t.Size() {
		return tlog.Hash{}, fmt.Errorf("leaf %d: the tree has %d", i, t.Size())
	}
	h, err := t.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
	if err != nil {
		return tlog.Hash{}, err
	}
	return h[0], nil
}

// Close syncs and closes the file of a tree opened with OpenTree.
func (t *Tree) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.Sync()
	return errors.Join(err, t.f.Close())
}
