package merkle

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// TestLoadTree_AsParsed: LoadTree, which reads a stored-hash file
// straight into the tree's hashes, gives the tree parseTree gives of the
// file's bytes, for files of no leaf, one, a few, whole and partial
// chunks and a long log, each with a tail that is not a whole hash.
func TestLoadTree_AsParsed(t *testing.T) {
	for _, leaves := range []int64{0, 1, 2, 3, 1000, 1025, 200000} {
		path := filepath.Join(t.TempDir(), "hashes")
		b := make([]byte, tlog.StoredHashCount(leaves)*tlog.HashSize+40)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		want := parseTree(b)
		got, err := LoadTree(path)
		if err != nil {
			t.Fatalf("%d leaves: %v", leaves, err)
		}
		if got.n != want.n || len(got.hashes) != len(want.hashes) {
			t.Fatalf("%d leaves: loaded %d leaves, %d hashes; parsed %d, %d", leaves, got.n, len(got.hashes), want.n, len(want.hashes))
		}
		for i := range want.hashes {
			if got.hashes[i] != want.hashes[i] {
				t.Fatalf("%d leaves: stored hash %d differs", leaves, i)
			}
		}
	}
	if _, err := LoadTree(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadTree of no file = %v, want one that wraps fs.ErrNotExist", err)
	}
}
