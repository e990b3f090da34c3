package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Allow is one host path a restricted command sees besides its workspace
// and the system directories (SystemDirs), at the same path. Everything
// else on the host is absent from the boundary: deny by default.
type Allow struct {
	// Path is absolute, clean and resolved (as filepath.EvalSymlinks
	// returns it; ResolveAllow resolves a list). A path that does not
	// exist when the command starts is skipped; one inside the workspace
	// is skipped too (the workspace's own mode decides there); and so is
	// one that then resolves elsewhere, through a symbolic link: a command
	// that can write where the entry lies could have swapped it for a
	// link to a directory the allowlist never named.
	Path string
	// Write makes it writable in WorkspaceWrite; in ReadOnly it is
	// read-only all the same. What a command writes there reaches the host
	// at once: never allow a cache the host later executes from (Go's build
	// cache, say) unless the commands are trusted with it.
	Write bool
}

// String returns the path, with ":rw" when the entry is writable: the
// form ParseAllow reads.
func (a Allow) String() string {
	if a.Write {
		return a.Path + ":rw"
	}
	return a.Path
}

// ParseAllow reads one allowlist entry, "PATH", "PATH:ro" or "PATH:rw".
// A PATH starting with "~/" is taken from home. Errors wrap ErrInvalidSpec:
// a relative path, "/", "~/" without a home, a path holding ":" (a
// suffix other than :ro or :rw), or home itself or an ancestor of it.
func ParseAllow(s, home string) (Allow, error) {
	a := Allow{Path: s}
	if p, ok := strings.CutSuffix(s, ":rw"); ok {
		a = Allow{Path: p, Write: true}
	} else if p, ok := strings.CutSuffix(s, ":ro"); ok {
		a.Path = p
	}
	if rest, ok := strings.CutPrefix(a.Path, "~/"); ok {
		if !filepath.IsAbs(home) {
			return Allow{}, fmt.Errorf("allow %q: %w: no home directory for ~/", s, ErrInvalidSpec)
		}
		a.Path = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(a.Path) {
		return Allow{}, fmt.Errorf("allow %q: %w: want an absolute path (or ~/…), with :ro or :rw", s, ErrInvalidSpec)
	}
	a.Path = filepath.Clean(a.Path)
	if a.Path == "/" {
		return Allow{}, fmt.Errorf("allow %q: %w: / would show the whole host", s, ErrInvalidSpec)
	}
	if strings.Contains(a.Path, ":") {
		return Allow{}, fmt.Errorf("allow %q: %w: a path holding \":\" (want PATH, PATH:ro or PATH:rw)", s, ErrInvalidSpec)
	}
	if h := filepath.Clean(home); filepath.IsAbs(home) && (a.Path == h || strings.HasPrefix(h, a.Path+"/")) {
		return Allow{}, fmt.Errorf("allow %q: %w: it would show the whole home directory, credential files included; name the folders commands need", s, ErrInvalidSpec)
	}
	return a, nil
}

// DefaultAllow returns the allowlist a worker uses unless told otherwise:
// toolchain caches and stores below home, all read-only. Go's module
// cache ($GOMODCACHE, else the first $GOPATH entry's pkg/mod, else
// ~/go/pkg/mod; getenv reads the worker's environment, nil means none);
// Rust's ~/.rustup, ~/.cargo/bin, ~/.cargo/registry and ~/.cargo/git; the
// npm cache ~/.npm; pip's and uv's caches ~/.cache/pip and ~/.cache/uv.
// Go's build cache is not among them: go fails on a read-only one, and a
// writable one shared with the host could be poisoned; inside the
// boundary GOCACHE falls in the private home, empty at each start. The
// caller owns the returned slice; entries that do not exist are skipped
// by Start.
func DefaultAllow(home string, getenv func(string) string) []Allow {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var out []Allow
	add := func(p string) {
		if filepath.IsAbs(p) && filepath.Clean(p) != "/" {
			out = append(out, Allow{Path: filepath.Clean(p)})
		}
	}
	switch gopath, _, _ := strings.Cut(getenv("GOPATH"), string(os.PathListSeparator)); {
	case getenv("GOMODCACHE") != "":
		add(getenv("GOMODCACHE"))
	case gopath != "":
		add(filepath.Join(gopath, "pkg", "mod"))
	case home != "":
		add(filepath.Join(home, "go", "pkg", "mod"))
	}
	if !filepath.IsAbs(home) {
		return out
	}
	for _, rel := range []string{".rustup", ".cargo/bin", ".cargo/registry", ".cargo/git", ".npm", ".cache/pip", ".cache/uv"} {
		add(filepath.Join(home, rel))
	}
	return out
}

// SystemDirs are the host directories every restricted command sees,
// read-only: programs, libraries and configuration. A symbolic link among
// them (/bin to usr/bin on a merged /usr) is the same link inside. In /etc,
// every file and directory that other users may not read (mode without
// o+r, or o+rx for a directory: /etc/shadow, /etc/sudoers, private keys)
// is covered by an empty one. The caller owns the returned slice.
func SystemDirs() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}
}

// ResolveAllow returns as with each Path that exists resolved through its
// symbolic links (filepath.EvalSymlinks), once: how a worker pins its
// allowlist when it starts. Paths that do not exist are kept as given.
// The caller owns the returned slice.
func ResolveAllow(as []Allow) []Allow {
	out := make([]Allow, len(as))
	for i, a := range as {
		if real, err := filepath.EvalSymlinks(a.Path); err == nil {
			a.Path = real
		}
		out[i] = a
	}
	return out
}

// HideAround returns hidden (Spec.Hidden) with each path that holds one of
// keep (a directory where workspaces lie, such as Logbook's own
// workspaces root inside its data dir) replaced by what it holds but the
// way to that keep path, level by level: a restricted command's workspace
// may lie in a kept directory, and never in a hidden path (Start refuses
// it), nor see what else the hidden path holds. Entries are read now: one
// made later in such a directory is not in the result, so Start calls it
// anew for each command (Spec.Keep). The caller owns the returned slice.
func HideAround(hidden, keep []string) []string {
	return hideAround(hidden, keep, &Resolver{})
}

// hideAround is HideAround with the hidden paths resolved by r.
func hideAround(hidden, keep []string, r *Resolver) []string {
	var out []string
	var add func(h string)
	add = func(h string) {
		var inside []string
		for _, k := range keep {
			if k != h && within(h, k) {
				inside = append(inside, k)
			}
		}
		if len(inside) == 0 {
			if !slices.ContainsFunc(keep, func(k string) bool { return k == h }) {
				out = append(out, h)
			}
			return
		}
		var werr error
		if r.watch != nil {
			werr = r.watch(h, "")
		}
		des, err := os.ReadDir(h)
		if werr != nil && !(errors.Is(werr, syscall.EACCES) && errors.Is(err, syscall.EACCES)) {
			r.unwatched = true // read (or not) with no watch told of it
		}
		if err != nil {
			return // unreadable by the worker, so by its commands
		}
		for _, de := range des {
			add(filepath.Join(h, de.Name()))
		}
	}
	for _, h := range hidden {
		if real, err := r.EvalSymlinks(h); err == nil {
			add(real)
		} else {
			out = append(out, h)
		}
	}
	return out
}
