package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/sandbox"
)

// HiddenPaths returns what restricted commands must not see — the data
// dir dd and the credential paths (sandbox.CredentialPaths) in the
// process's home and in every local account's home (AccountHomes: a
// worker run as root serves sessions whose directories may be other
// users' homes) — and, as keep, the directories in them where
// workspaces lie (workspace.DefaultRoot, and workspace.LegacyRoot, the
// one inside the data dir where they went before), resolved through
// symbolic links, which they are hidden around at each command's start
// (Config.Hidden and Config.Keep). A root that does not resolve is left
// out. Accounts made after the call are not covered until the worker
// starts again.
func HiddenPaths(dd string) (hide, keep []string) {
	hide = []string{dd}
	homes := AccountHomes("/etc/passwd")
	if home, err := os.UserHomeDir(); err == nil && !slices.Contains(homes, filepath.Clean(home)) {
		homes = append(homes, filepath.Clean(home))
	}
	for _, home := range homes {
		hide = append(hide, sandbox.CredentialPaths(home)...)
	}
	for _, root := range []func() (string, error){workspace.DefaultRoot, workspace.LegacyRoot} {
		if r, err := root(); err == nil {
			if real, err := filepath.EvalSymlinks(r); err == nil {
				keep = append(keep, real)
			}
		}
	}
	return hide, keep
}

// AccountHomes returns the home directories of the accounts in passwd
// (a passwd(5) file, /etc/passwd) that are theirs: an absolute path
// other than /, a directory owned by the account's uid. That leaves out
// the homes system accounts share with the system (daemon's /usr/sbin,
// nobody's /nonexistent) and keeps root's, people's and services' own
// (postgres's /var/lib/postgresql). An unreadable file gives none.
func AccountHomes(passwd string) []string {
	b, err := os.ReadFile(passwd)
	if err != nil {
		return nil
	}
	var homes []string
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimRight(line, "\n"), ":")
		if len(f) < 7 || strings.HasPrefix(f[0], "#") {
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		home := filepath.Clean(f[5])
		if err != nil || !filepath.IsAbs(f[5]) || home == "/" || slices.Contains(homes, home) {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(home, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || uint64(st.Uid) != uid {
			continue
		}
		homes = append(homes, home)
	}
	return homes
}

// CheckHidden refuses a workspace ws (absolute) that is, or lies inside,
// one of hide (HiddenPaths: the data dir and the credential paths)
// unless it is, or lies inside, one of keep (the workspace roots there):
// a command of any mode, full_access included, never works on the data
// dir's credentials, spool or views, nor on a credential directory. ws
// and the paths are compared with their symbolic links resolved where
// they resolve (else cleaned). The error names ws and the path it lies
// in.
func CheckHidden(ws string, hide, keep []string) error {
	// The paths share most of their directories (the home, its
	// .config): each is looked at once a call, not once a path.
	var rs resolver
	ws = rs.resolved(ws)
	for _, k := range keep {
		if within(ws, rs.resolved(k)) {
			return nil
		}
	}
	for _, h := range hide {
		if h == "" {
			continue
		}
		if r := rs.resolved(h); within(ws, r) {
			return fmt.Errorf("workspace %s lies in %s (the data dir or a credential directory), which no command may work on in any mode", ws, r)
		}
	}
	return nil
}

// resolved is p cleaned, with its symbolic links resolved when it
// resolves.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// resolver is resolved for many paths at once: it remembers, by
// cleaned absolute path, what each directory along them resolved to,
// so that paths in the same directories cost one lstat(2) each rather
// than one a component. Its answers are resolved's. The zero resolver
// is ready; it is for one goroutine and one check (what it remembers
// is not looked at again).
type resolver struct {
	seen map[string]resolution
}

// resolution is what a cleaned absolute path resolved to: real, or
// nothing (ok false) when it does not resolve.
type resolution struct {
	real string
	ok   bool
}

// resolved returns p cleaned, with its symbolic links resolved when it
// resolves (filepath.EvalSymlinks), as the package's resolved does.
func (rs *resolver) resolved(p string) string {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		// A .. after a link goes up from where the link leads, not
		// from the link: such a path is resolved alone.
		return resolved(p)
	}
	if r := rs.resolve(p); r.ok {
		return r.real
	}
	return p
}

// resolve resolves the clean absolute path p: its parent through rs,
// then p's last component by one lstat(2); a symbolic link there is
// resolved in full (filepath.EvalSymlinks).
func (rs *resolver) resolve(p string) resolution {
	if p == "/" {
		return resolution{real: "/", ok: true}
	}
	if r, ok := rs.seen[p]; ok {
		return r
	}
	var r resolution
	if parent := rs.resolve(filepath.Dir(p)); parent.ok {
		next := filepath.Join(parent.real, filepath.Base(p))
		if fi, err := os.Lstat(next); err == nil {
			if fi.Mode()&os.ModeSymlink == 0 {
				r = resolution{real: next, ok: true}
			} else if real, err := filepath.EvalSymlinks(next); err == nil {
				r = resolution{real: real, ok: true}
			}
		}
	}
	if rs.seen == nil {
		rs.seen = make(map[string]resolution)
	}
	rs.seen[p] = r
	return r
}

// within reports whether p is dir or lies inside it (both clean).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
