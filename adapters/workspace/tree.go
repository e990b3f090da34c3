package workspace

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Tree is what a check run judges of a work tree: HEAD's commit and a
// digest of the files as they are on disk.
type Tree struct {
	// Commit is HEAD's commit (hex), "" on a branch with no commit yet.
	Commit string
	// Digest is "sha256:" and the hex SHA-256 over one line per file,
	// "<mode> <object id> <path>\x00" in path order, of every file git
	// tracks (in the index) or would add (untracked and not ignored):
	// its git mode (100644, 100755, 120000 for a symbolic link, 160000
	// for a checked-out submodule, whose id is its HEAD) and the git
	// object id of its bytes as they are on disk, no filter applied. A
	// tracked file deleted from disk has no line; a path that leads
	// through a symbolic link, or that is no regular file, link or
	// directory (a FIFO), has mode "?".
	Digest string
	// Clean reports that the files on disk are exactly HEAD's tree:
	// the same paths, modes and object ids. A file git would change on
	// its way in (an end-of-line conversion, a clean filter) counts as
	// changed: clean is never claimed by accident.
	Clean bool
	// Changed names the paths that make the tree not Clean (added or
	// changed, then in HEAD and gone from disk), up to MaxChanged of
	// them, each quoted as a Go string (a newline in a name cannot start
	// a line of its own), and how many more: `"a.txt", "b/c.go" and 3
	// more`; "" when it is clean.
	Changed string
	// Files is how many lines the digest covers.
	Files int
}

// MaxChanged is the most paths Tree.Changed names.
const MaxChanged = 5

// Fingerprint returns "<Commit>:<Digest>": the tree a check run judged,
// as events.CheckStarted.Fingerprint.
func (t Tree) Fingerprint() string { return t.Commit + ":" + t.Digest }

// safeGit runs git in dir as git does, but with the programs a work
// tree's configuration can make git run switched off where the commands
// TreeOf uses could run them (fsmonitor, hooks). TreeOf reads file
// contents itself, so no filter runs.
func safeGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	all := append([]string{"-C", dir, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", all...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return out.Bytes(), nil
}

// TreeOf returns the Tree of the work tree whose top level is dir. It
// reads HEAD, the index's paths (git ls-files) and HEAD's tree (git
// ls-tree) through git, and every file's bytes itself, through no
// symbolic link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): nothing
// the work tree's configuration names is run, and nothing is written
// (no object, no index). Errors: dir is no work tree's top level, or
// git or a read fails.
func TreeOf(ctx context.Context, dir string) (Tree, error) {
	top, err := safeGit(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return Tree{}, fmt.Errorf("tree of %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Tree{}, fmt.Errorf("tree of %s: %w", dir, err)
	}
	if t := strings.TrimRight(string(top), "\n"); t != real {
		return Tree{}, fmt.Errorf("tree of %s: not the top level of its work tree (%s is)", dir, t)
	}
	format := "sha1"
	if f, err := safeGit(ctx, dir, "rev-parse", "--show-object-format"); err == nil {
		format = strings.TrimSpace(string(f))
	}
	var t Tree
	if out, err := safeGit(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil {
		t.Commit = strings.TrimSpace(string(out))
	}
	out, err := safeGit(ctx, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return Tree{}, fmt.Errorf("tree of %s: %w", dir, err)
	}
	paths := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(out) == 0 {
		paths = nil
	}
	slices.Sort(paths)
	paths = slices.Compact(paths) // a conflicted path is listed once per stage
	head := map[string]string{}   // path → "<mode> <id>"
	if t.Commit != "" {
		out, err := safeGit(ctx, dir, "ls-tree", "-r", "-z", "--full-tree", t.Commit)
		if err != nil {
			return Tree{}, fmt.Errorf("tree of %s: %w", dir, err)
		}
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			meta, p, ok := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if ok && len(f) == 3 {
				head[p] = f[0] + " " + f[2]
			}
		}
	}
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Tree{}, fmt.Errorf("tree of %s: %w", dir, err)
	}
	defer unix.Close(root)
	sum := sha256.New()
	clean := true
	var changed []string // the paths that make it not clean
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/") // an untracked nested repository
		if _, tracked := head[p]; !tracked && emptyPlaceholder(dir, p) {
			continue // a running restricted command's mount point, no work
		}
		e, ok, err := entryOf(ctx, dir, root, p, format)
		if err != nil {
			return Tree{}, fmt.Errorf("tree of %s: %s: %w", dir, p, err)
		}
		if !ok {
			continue // deleted from disk
		}
		fmt.Fprintf(sum, "%s %s\x00", e, p)
		t.Files++
		if h, ok := head[p]; !ok || h != e {
			clean = false
			changed = append(changed, p)
		}
		delete(head, p)
	}
	// What HEAD holds and the disk does not: deleted.
	gone := slices.Sorted(maps.Keys(head))
	t.Changed = changedText(append(changed, gone...))
	t.Clean = clean && len(gone) == 0
	t.Digest = "sha256:" + hex.EncodeToString(sum.Sum(nil))
	return t, nil
}

// entryOf returns "<mode> <object id>" of path p below root, and false
// when nothing is there.
func entryOf(ctx context.Context, dir string, root int, p, format string) (string, bool, error) {
	parent, base := path.Split(p)
	pfd := root
	if parent != "" {
		fd, err := unix.Openat2(root, strings.TrimSuffix(parent, "/"), &unix.OpenHow{
			Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			return "", false, nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV):
			return "? -", true, nil // leads through a symbolic link
		case err != nil:
			return "", false, err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return "", false, nil
	} else if err != nil {
		return "", false, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(pfd, base, buf)
		if err != nil {
			return "", false, err
		}
		return "120000 " + blobID(format, bytes.NewReader(buf[:n]), int64(n)), true, nil
	case unix.S_IFDIR:
		out, err := safeGit(ctx, path.Join(dir, p), "rev-parse", "--verify", "-q", "HEAD^{commit}")
		if err != nil {
			return "160000 -", true, nil // a folder git lists but no checkout of its own
		}
		return "160000 " + strings.TrimSpace(string(out)), true, nil
	case unix.S_IFREG:
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", false, err
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return "", false, err
		}
		if !fi.Mode().IsRegular() {
			return "? -", true, nil // swapped meanwhile
		}
		mode := "100644"
		if fi.Mode().Perm()&0o100 != 0 {
			mode = "100755"
		}
		return mode + " " + blobID(format, f, fi.Size()), true, nil
	}
	return "? -", true, nil
}

// blobID returns the git object id of a blob of n bytes read from r, in
// the repository's object format ("sha1" or "sha256"). A read that ends
// early gives an id of what was read, which matches no object.
func blobID(format string, r io.Reader, n int64) string {
	var h hash.Hash = sha1.New()
	if format == "sha256" {
		h = sha256.New()
	}
	h.Write([]byte("blob " + strconv.FormatInt(n, 10) + "\x00"))
	_, _ = io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil))
}

// changedText is Tree.Changed of paths: the first MaxChanged of them,
// quoted, and how many more.
func changedText(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	n := min(len(paths), MaxChanged)
	q := make([]string, n)
	for i, p := range paths[:n] {
		q[i] = strconv.Quote(p)
	}
	s := strings.Join(q, ", ")
	if more := len(paths) - n; more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
