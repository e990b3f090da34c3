package workspace

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ProtectFile is the file, in a worktree's own git directory
// (<project>/.git/worktrees/<name>/), that lists the worktree's
// protected_sync files, one path relative to the worktree per line. It
// lives outside the worktree, under the project's .git, so a command
// working in the worktree cannot change it.
const ProtectFile = "logbook-protected"

// maxProtectFile bounds how much of ProtectFile is read, in bytes.
const maxProtectFile = 64 << 10

// writeProtected records rel, the protected_sync files copied into the
// worktree wt, in wt's ProtectFile.
func writeProtected(ctx context.Context, wt string, rel []string) error {
	gd, err := git(ctx, wt, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return err
	}
	name := filepath.Join(gd, ProtectFile)
	if len(rel) == 0 {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(name, []byte(strings.Join(rel, "\n")+"\n"), 0o644)
}

// ProtectedIn returns the protected_sync files of the worktree that holds
// dir (dir itself or its nearest parent with a .git file), as absolute
// paths, for a sandbox to keep read-only; nil when dir lies in no
// workspace's worktree. It reads files only and never fails: what it
// cannot read protects nothing more.
func ProtectedIn(dir string) []string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			if !fi.Mode().IsRegular() {
				return nil // a repository's own work tree, not a worktree
			}
			return protectedOf(d)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// protectedOf reads worktree wt's ProtectFile through its .git file.
func protectedOf(wt string) []string {
	b, err := readCapped(filepath.Join(wt, ".git"))
	if err != nil {
		return nil
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(wt, gd)
	}
	b, err = readCapped(filepath.Join(gd, ProtectFile))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		rel := string(bytes.TrimSpace(line))
		if rel == "" || relPath(rel) != nil {
			continue
		}
		out = append(out, filepath.Join(wt, rel))
	}
	return out
}

func readCapped(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProtectFile))
}
