package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	home, _ := os.UserHomeDir()
	return hiddenPaths(dd, AccountHomes("/etc/passwd"), home), workspaceRoots()
}

// hiddenPaths is HiddenPaths' hide with the accounts' homes
// (AccountHomes) and the process's home ("" for none) given.
func hiddenPaths(dd string, homes []string, home string) []string {
	hide := []string{dd}
	homes = slices.Clone(homes)
	if home != "" && !slices.Contains(homes, filepath.Clean(home)) {
		homes = append(homes, filepath.Clean(home))
	}
	for _, home := range homes {
		hide = append(hide, sandbox.CredentialPaths(home)...)
	}
	return hide
}

// workspaceRoots is HiddenPaths' keep: the workspace roots that resolve,
// resolved.
func workspaceRoots() []string {
	var keep []string
	for _, root := range []func() (string, error){workspace.DefaultRoot, workspace.LegacyRoot} {
		if r, err := root(); err == nil {
			if real, err := filepath.EvalSymlinks(r); err == nil {
				keep = append(keep, real)
			}
		}
	}
	return keep
}

// HiddenSet is HiddenPaths of one data dir kept current for a process
// that checks many commands: Paths reads the accounts' homes again at
// each call (AccountHomes: /etc/passwd, and a stat(2) of each home it
// names), and builds the hidden paths again only when those homes, or
// the process's home, changed since the last call; else it returns the
// hidden paths it returned before (shared: the caller must not change
// them). The workspace roots are resolved at each call. So an account
// made after a worker started, or a home made or given to its account
// since, is covered from the next command on. A HiddenSet is safe for
// concurrent use; make one with NewHiddenSet.
type HiddenSet struct {
	dd     string
	passwd string

	mu     sync.Mutex
	homes  []string // AccountHomes, then the process's home ("" for none)
	filled bool
	hide   []string
}

// NewHiddenSet returns the HiddenSet of the data dir dd.
func NewHiddenSet(dd string) *HiddenSet { return &HiddenSet{dd: dd, passwd: "/etc/passwd"} }

// Paths returns HiddenPaths(dd) as of now (see HiddenSet).
func (h *HiddenSet) Paths() (hide, keep []string) {
	home, _ := os.UserHomeDir()
	homes := append(AccountHomes(h.passwd), home)
	h.mu.Lock()
	if !h.filled || !slices.Equal(homes, h.homes) {
		h.hide = hiddenPaths(h.dd, homes[:len(homes)-1], home)
		h.homes, h.filled = homes, true
	}
	hide = h.hide
	h.mu.Unlock()
	return hide, workspaceRoots()
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
// they resolve (else cleaned). The error names ws as given (and where
// it leads, when a symbolic link does) and the path it lies in.
func CheckHidden(ws string, hide, keep []string) error {
	return resolveHidden(hide).check(ws, keep)
}

// hiddenReals are hidden paths as CheckHidden compares a workspace with
// them: resolved where they resolve, else cleaned, and the other places
// a bind mount shows one that resolves at.
type hiddenReals struct {
	paths   []string
	aliases []string
}

// resolveHidden resolves hide (HiddenPaths) as they are now
// (sandbox.ResolveHidden).
func resolveHidden(hide []string) hiddenReals {
	paths, aliases := sandbox.ResolveHidden(hide)
	return hiddenReals{paths: paths, aliases: aliases}
}

// check is CheckHidden of workspace ws against h, with keep.
func (h hiddenReals) check(ws string, keep []string) error {
	var rs sandbox.Resolver
	given := ws
	ws = resolvedBy(&rs, ws)
	if ws != filepath.Clean(given) {
		// Named as given, then where it leads.
		given = fmt.Sprintf("%s (it resolves to %s)", given, ws)
	}
	for _, k := range keep {
		if within(ws, resolvedBy(&rs, k)) {
			return nil
		}
	}
	for _, r := range h.paths {
		if within(ws, r) {
			return fmt.Errorf("workspace %s lies in %s (the data dir or a credential directory), which no command may work on in any mode", given, r)
		}
	}
	// A bind mount shows a hidden path at another place too.
	for _, a := range h.aliases {
		if within(ws, a) {
			return fmt.Errorf("workspace %s lies in %s, a mount of the data dir or a credential directory, which no command may work on in any mode", given, a)
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

// resolvedBy is resolved through rs, which looks at each directory
// along the paths of one check once.
func resolvedBy(rs *sandbox.Resolver, p string) string {
	if r, err := rs.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies inside it (both clean).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
