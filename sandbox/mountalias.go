package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mountEntry is what a restricted start needs of one line of
// /proc/self/mountinfo (proc(5), Linux 2.6.26 on): the file system's
// device ("major:minor"), the directory of that file system the mount
// shows (root), and where it shows it (point), octal escapes undone.
type mountEntry struct {
	dev, root, point string
}

// parseMountinfo returns the entries of b, a /proc/<pid>/mountinfo, in
// its order (a mount made later comes later). A line too short to hold
// the fields is skipped.
func parseMountinfo(b []byte) []mountEntry {
	var ms []mountEntry
	for line := range bytes.Lines(b) {
		// 36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw
		// (1)(2)(3)   (4)   (5)          (6) ...
		f := strings.Fields(string(line))
		if len(f) < 5 {
			continue
		}
		ms = append(ms, mountEntry{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mountAliases returns the other places the mount table ms shows the
// file at the real path p (resolved, no symbolic link in it) at: a bind
// mount of p, of a directory above it or of one inside it, made
// anywhere, shows what p holds under another path, where covering p
// itself does not reach. For each mount of the same file system as the
// one p lies on (its device) whose root holds p, the path p has below
// that mount; for each whose root lies inside p, its mount point (all
// it shows is p's). p's own place is left out; nil when there is none
// other. Paths under a mount hidden by a later one are returned too:
// the plan leaves what no view shows alone.
func mountAliases(ms []mountEntry, p string) []string {
	// The mount p lies on: the deepest mount point above it, the last
	// made of those there (it covers the ones before).
	on := -1
	for i, m := range ms {
		if within(m.point, p) && (on < 0 || len(m.point) >= len(ms[on].point)) {
			on = i
		}
	}
	if on < 0 {
		return nil
	}
	rel, err := filepath.Rel(ms[on].point, p)
	if err != nil {
		return nil
	}
	inFS := filepath.Join(ms[on].root, rel) // p in its file system
	var out []string
	for i, m := range ms {
		if i == on || m.dev != ms[on].dev {
			continue
		}
		var at string
		switch {
		case within(m.root, inFS):
			r, err := filepath.Rel(m.root, inFS)
			if err != nil {
				continue
			}
			at = filepath.Join(m.point, r)
		case within(inFS, m.root):
			at = m.point
		default:
			continue
		}
		if at != p && !within(p, at) {
			out = append(out, at)
		}
	}
	return out
}

// withMountAliasesIn returns hidden with the other places the mount
// table ms shows each path that resolves through r at (mountAliasesIn)
// after it, and those places alone: a bind mount of the data dir or of a
// home inside a workspace or an allowlisted directory shows its
// credentials no more than the original place does.
func withMountAliasesIn(hidden []string, r *Resolver, ms []mountEntry) (all, aliases []string) {
	var reals []string
	for _, h := range hidden {
		if real, err := r.EvalSymlinks(h); err == nil {
			reals = append(reals, real)
		}
	}
	if aliases = mountAliasesIn(ms, reals); len(aliases) > 0 {
		return append(slices.Clone(hidden), aliases...), aliases
	}
	return hidden, nil
}

// MountAliases returns the other places this process's mount table
// (/proc/self/mountinfo, read now) shows each of paths (resolved: no
// symbolic link in them) at, by mountAliases: a bind mount of a path, of
// a directory above it or of one inside it shows what it holds there
// too. Nil when there are none, or the table cannot be read.
func MountAliases(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return mountAliasesIn(parseMountinfo(b), paths)
}

// mountAliasesIn is MountAliases with the mount table ms.
func mountAliasesIn(ms []mountEntry, paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(ms))
	again := false
	for _, m := range ms {
		again = again || seen[m.dev]
		seen[m.dev] = true
	}
	if !again {
		return nil // no file system is mounted twice
	}
	var out []string
	for _, p := range paths {
		out = append(out, mountAliases(ms, p)...)
	}
	return out
}
