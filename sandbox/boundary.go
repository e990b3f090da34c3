package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ProtectedNames are the file names protected wherever they occur in the
// workspace of a restricted command: git's repository directories (nested
// ones included) and the configuration that coding agents, git, direnv and
// Logbook itself read, and in part execute, outside any sandbox. A
// directory of one of these names is protected as a whole. The caller owns
// the returned slice.
func ProtectedNames() []string {
	return []string{".git", ".claude", ".codex", ".agents", ".logbook", ".mcp.json", ".envrc"}
}

// absentDirNames are the ProtectedNames that, when missing from the
// workspace's top level, are kept missing as directories; the others as
// files.
func absentDirNames() []string { return []string{".git", ".claude", ".codex", ".agents", ".logbook"} }

// Scan bounds: a workspace is searched for protected names and hard links
// up to this many directory entries; a larger workspace cannot be written
// by a restricted command (ErrRefused), since a nested repository or a
// hard link could hide in the part not searched.
const maxScanEntries = 400_000

// etcScanEntries bounds the search of /etc for files other users may not
// read; past it the rest of /etc is covered as a whole.
const etcScanEntries = 20_000

// Default sizes of the private RAM-backed file systems, in bytes.
const (
	DefaultTmpBytes = 1 << 30  // /tmp, and the home directory
	DefaultShmBytes = 64 << 20 // /dev/shm
	DefaultRunBytes = 16 << 20 // /run
)

// viewKind is what a view shows at its path.
type viewKind int

const (
	viewRO    viewKind = iota // the host directory, read-only
	viewRW                    // the host directory, writable
	viewEmpty                 // an empty private tmpfs
)

// view is a host directory (or an empty tmpfs) a restricted command sees
// at path.
type view struct {
	path string
	kind viewKind
}

// layout is the file system a restricted command sees, computed on the
// host before the command starts: deny by default, so only what is listed
// here exists inside.
type layout struct {
	mode    Mode
	ws, dir string
	system  []string // system dirs: bound read-only, or "=target" for a symbolic link
	sysLink map[string]string
	views   []view // home, allowlist and workspace, in mount order (parents first)
	// WorkspaceWrite only.
	protected []string // existing paths, bound read-only onto themselves
	links     linkPlan // what is bound read-only for its hard links
	extra     []string // Spec.Protected, for scan
	// Missing top-level paths the git configuration names (see
	// gitNamed), for claim to keep missing.
	absentNamed []namedAbsent
	ancestors   []string // directories above nested protected paths, bound onto themselves
	// Set by claim, WorkspaceWrite only.
	absentDirs  []string   // missing top-level names kept missing: empty read-only dirs
	absentFiles []string   // missing top-level names kept missing: /dev/null bound
	held        []*os.File // the directories locked (see lock), from claim to release
	ledger      *ledger    // where the placeholders are recorded (Spec.Ledger); nil if nowhere
	// recorded, when not nil, gives the error of the ledger's record of
	// the missing names (record), begun before claim: as the start began
	// (recordEarly), or under its locks.
	recorded <-chan error

	inHidden  string   // a hidden path the workspace lies in: the start is refused
	hideDirs  []string // directories covered by an empty read-only tmpfs
	hideFiles []string // files covered by /dev/null
	// aliases holds the hidden paths (in hideDirs and hideFiles) that
	// are other places a mount shows a hidden path at (withMountAliasesIn):
	// the mount table they come from may change between the plans of
	// one start, which covers those of the later one (see differs).
	aliases  map[string]bool
	tmpBytes int64
}

// newLayout computes the layout of a restricted command in mode m on
// workspace ws (resolved) with working directory dir. home is the
// command's HOME ("" if unset), allow is Spec.Allow, hide is Spec.Hidden.
// etc holds /etc's covered paths (nil: /etc is searched). It does not
// search the workspace (scan does).
func newLayout(m Mode, ws, dir, home string, allow []Allow, hide []string, etc *EtcWatch) layout {
	return planLayout(m, ws, dir, home, allow, hide, etc, &Resolver{})
}

// planLayout is newLayout with the allowlist and the hidden paths
// resolved by r.
func planLayout(m Mode, ws, dir, home string, allow []Allow, hide []string, etc *EtcWatch, r *Resolver) layout {
	l := layout{mode: m, ws: ws, dir: dir, tmpBytes: DefaultTmpBytes}
	l.system, l.sysLink = systemMounts()

	wsKind := viewRO
	if m == WorkspaceWrite {
		wsKind = viewRW
	}
	views := []view{{ws, wsKind}}
	for _, a := range allow {
		real, err := r.EvalSymlinks(a.Path)
		if err != nil || real == "/" || within(ws, real) || real != filepath.Clean(a.Path) {
			continue // missing, the workspace's own mode decides, or swapped for a link
		}
		if fi, err := r.stat(real); err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		k := viewRO
		if a.Write && m == WorkspaceWrite {
			k = viewRW
		}
		if i := slices.IndexFunc(views, func(v view) bool { return v.path == real }); i >= 0 {
			if k == viewRW { // listed twice: writable if either is
				views[i].kind = k
			}
			continue
		}
		views = append(views, view{real, k})
	}
	// A linked worktree's git directory lies in its project's, outside
	// the workspace: read-only, so git works in it and nothing there
	// changes (its configuration names what host git runs).
	for _, d := range worktreeGitDirs(ws, r) {
		if !slices.ContainsFunc(views, func(v view) bool { return v.path == d }) {
			views = append(views, view{d, viewRO})
		}
	}
	if h := homeView(home, ws, views, l.system); h != "" {
		views = append(views, view{h, viewEmpty})
	}
	// Parents before children: a mount hides what an earlier one put
	// below it. The home comes before what lies in it.
	slices.SortStableFunc(views, func(a, b view) int {
		return cmp.Compare(strings.Count(a.path, "/"), strings.Count(b.path, "/"))
	})
	l.views = views

	for _, h := range hide {
		if !filepath.IsAbs(h) {
			continue
		}
		real, err := r.EvalSymlinks(filepath.Clean(h))
		if err != nil || real == "/" {
			continue // missing
		}
		// A view inside a hidden path would show it from within, where
		// covering the hidden path itself hides nothing: the workspace is
		// refused (validate), an allowlist entry left out.
		if within(real, ws) && l.inHidden == "" {
			l.inHidden = real
		}
		l.views = slices.DeleteFunc(l.views, func(v view) bool { return v.path != ws && within(real, v.path) })
		if !l.sees(real) {
			continue // already out of sight
		}
		fi, err := r.stat(real)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			l.hideDirs = append(l.hideDirs, real)
		} else {
			l.hideFiles = append(l.hideFiles, real)
		}
	}
	if slices.Contains(l.system, "/etc") && l.sysLink["/etc"] == "" {
		dirs, files := etc.secrets()
		l.hideDirs = append(l.hideDirs, dirs...)
		l.hideFiles = append(l.hideFiles, files...)
		// A bind mount of /etc (or of /) in sight shows them too.
		for _, a := range MountAliases(slices.Concat(dirs, files)) {
			fi, err := os.Stat(a)
			if err != nil || !l.sees(a) {
				continue
			}
			if fi.IsDir() {
				l.hideDirs = append(l.hideDirs, a)
			} else {
				l.hideFiles = append(l.hideFiles, a)
			}
			if l.aliases == nil {
				l.aliases = map[string]bool{}
			}
			l.aliases[a] = true
		}
	}
	return l
}

// systemMounts returns the SystemDirs present on this host, and the
// targets of those that are symbolic links.
func systemMounts() ([]string, map[string]string) {
	var dirs []string
	links := map[string]string{}
	for _, d := range SystemDirs() {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				links[d] = target
				dirs = append(dirs, d)
			}
		case fi.IsDir():
			dirs = append(dirs, d)
		}
	}
	return dirs, links
}

// homeView returns where the command's home is an empty private tmpfs:
// home, unless it is relative or /, lies in the workspace (the workspace
// is the home then), in a system directory, or is an allowlisted path
// itself. In an allowlisted directory it must exist already, so that
// nothing is made on the host for it.
func homeView(home, ws string, views []view, system []string) string {
	if !filepath.IsAbs(home) {
		return ""
	}
	home = filepath.Clean(home)
	if home == "/" || within(ws, home) {
		return ""
	}
	for _, d := range system {
		if within(d, home) {
			return ""
		}
	}
	for _, v := range views {
		if v.path == home {
			return ""
		}
		if within(v.path, home) {
			if fi, err := os.Lstat(home); err != nil || !fi.IsDir() {
				return ""
			}
		}
	}
	return home
}

// sees reports whether host path p (resolved) is visible inside the
// boundary: the deepest mount that holds it is a host directory.
func (l layout) sees(p string) bool {
	best, vis := "", false
	consider := func(root string, visible bool) {
		if within(root, p) && len(root) >= len(best) {
			best, vis = root, visible
		}
	}
	for _, d := range l.system {
		if l.sysLink[d] == "" {
			consider(d, true)
		}
	}
	for _, r := range privateRoots() {
		consider(r, false)
	}
	for _, v := range l.views {
		consider(v.path, v.kind != viewEmpty)
	}
	return vis
}

// privateRoots are the directories a restricted command sees as fresh,
// empty file systems of its own.
func privateRoots() []string { return []string{"/tmp", "/run", "/dev", "/proc"} }

// etcSecrets returns what other users may not read in /etc (root): the
// directories without o+rx, and the files without o+r. They are what a
// root worker's command, as the owner of root's files, could otherwise
// read (/etc/shadow, /etc/sudoers, /etc/ssl/private). Past
// etcScanEntries entries the directory being read is returned whole.
func etcSecrets(root string) (dirs, files []string) { return etcSecretsWatched(root, nil) }

// scan searches workspace ws of a WorkspaceWrite layout for protected
// paths (extra are Spec.Protected) and for files with hard links that
// must be read-only. Its errors wrap ErrRefused.
func (l *layout) scan(extra []string) error {
	l.protected = protectedPaths(l.ws, extra)
	top := map[string]bool{}
	for _, name := range ProtectedNames() {
		top[filepath.Join(l.ws, name)] = true
	}
	// What the git configuration of the workspace's repositories names
	// in it (gitNamed): the top-level repository's before the search,
	// so that the search takes it as protected (its hard links
	// included), the nested ones' it finds after; should those name
	// more, the workspace is searched again with them.
	var gn gitNames
	users := userGitConfigs()
	if gd, wt, ok := repoOf(filepath.Join(l.ws, ".git")); ok {
		gn.gitNamed(l.ws, wt, gd, users)
	} else if gd, wt, ok := enclosingRepo(l.ws); ok {
		// A workspace inside another repository's work tree: git run
		// there on the host reads that repository's configuration.
		gn.gitNamed(l.ws, wt, gd, users)
	}
	covered := func(p string, by []string) bool {
		return slices.ContainsFunc(by, func(q string) bool { return within(q, p) }) ||
			slices.ContainsFunc(ProtectedNames(), func(name string) bool { return within(filepath.Join(l.ws, name), p) })
	}
	var found []string
	var links linkPlan
	for range 2 {
		named := slices.DeleteFunc(slices.Clone(gn.exist), func(p string) bool { return covered(p, l.protected) })
		var err error
		found, links, err = scanWorkspace(l.ws, slices.Concat(l.protected, named))
		if err != nil {
			return err
		}
		before := len(gn.exist)
		for _, p := range found {
			if filepath.Base(p) != ".git" || p == filepath.Join(l.ws, ".git") {
				continue
			}
			if gd, wt, ok := repoOf(p); ok {
				gn.gitNamed(l.ws, wt, gd, users)
			}
		}
		if !slices.ContainsFunc(gn.exist[before:], func(p string) bool {
			return !covered(p, l.protected) && !covered(p, found) && !covered(p, named)
		}) {
			break
		}
	}
	if gn.refuse != "" {
		return fmt.Errorf("%w: workspace %s: %s: run it in read_only or full_access", ErrRefused, l.ws, gn.refuse)
	}
	l.protected = append(l.protected, found...)
	l.protected = append(l.protected, slices.DeleteFunc(gn.exist, func(p string) bool { return covered(p, l.protected) })...)
	slices.Sort(l.protected)
	l.protected = slices.Compact(l.protected)
	// The top-level names are claim's to decide, under the workspace's
	// lock: one may be another command's placeholder.
	l.protected = slices.DeleteFunc(l.protected, func(p string) bool { return top[p] })
	l.absentNamed = nil
	for p, dir := range gn.absent {
		if !top[p] {
			l.absentNamed = append(l.absentNamed, namedAbsent{p, dir})
		}
	}
	slices.SortFunc(l.absentNamed, func(a, b namedAbsent) int { return cmp.Compare(a.path, b.path) })
	l.links = links
	// A protected or hidden path's parent could be renamed away and a
	// new one, with a writable path of the same name, made in its place
	// (mv vend vend-old && git init vend; or a decoy data dir, with the
	// real one moved where the hidden list does not look): each directory
	// between a writable view (the workspace, a writable allowlist entry)
	// and such a path in it is a mount point inside the boundary, bound
	// onto itself, which rename(2) and rmdir(2) refuse (EBUSY).
	var roots []string
	for _, v := range l.views {
		if v.kind == viewRW {
			roots = append(roots, v.path)
		}
	}
	seen := map[string]bool{}
	l.ancestors = nil
	for _, p := range slices.Concat(l.protected, l.hideDirs, l.hideFiles) {
		root := ""
		for _, r := range roots {
			if within(r, p) && len(r) > len(root) {
				root = r
			}
		}
		if root == "" {
			continue
		}
		for d := filepath.Dir(p); d != root && within(root, d) && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			l.ancestors = append(l.ancestors, d)
		}
	}
	if len(l.ancestors) > maxAncestorMounts {
		return fmt.Errorf("%w: workspace %s: %d directories hold protected or hidden paths below the top level (at most %d): run it in read_only or full_access", ErrRefused, l.ws, len(l.ancestors), maxAncestorMounts)
	}
	slices.SortFunc(l.ancestors, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), cmp.Compare(a, b))
	})
	return nil
}

// namedAbsent is a missing top-level path that the git configuration
// names (see gitNamed): a directory if dir.
type namedAbsent struct {
	path string
	dir  bool
}

// maxAncestorMounts bounds the directories above nested protected paths
// that a WorkspaceWrite command gets bound onto themselves; a workspace
// that needs more is refused (ErrRefused).
const maxAncestorMounts = 256

// args returns bwrap's arguments (without argv[0]) to run argv. Order
// matters: a mount hides what an earlier one put below it, so the private
// tmpfs mounts come first, then the views (home, allowlist, workspace;
// parents first), the directories above nested protected paths, the
// protected paths, the placeholders, the paths bound
// read-only for their hard links, and the hidden paths last. bwrap
// reports on statusFD; it writes an "exit-code" there only if the command
// was actually executed, and its first line names the sandbox's first
// process, which then waits on blockFD until its limits are in place
// (and for good if the worker dies first: see holdFD). The command runs
// under the reporter, executable rep bound read-only at reporterPath.
// With rep "" the command runs directly, as bubblewrap's first process,
// and bwrap is given none of those descriptors (see BoundaryCommand).
func (l layout) args(rep string, argv []string) []string {
	a := boundaryBase(l.system, l.sysLink, l.tmpBytes)
	if rep != "" {
		a = append(a, "--json-status-fd", strconv.Itoa(statusFD), "--block-fd", strconv.Itoa(blockFD), "--sync-fd", strconv.Itoa(holdFD))
	}
	for _, v := range l.views {
		switch v.kind {
		case viewRO:
			a = append(a, "--ro-bind", v.path, v.path)
		case viewRW:
			a = append(a, "--bind", v.path, v.path)
		case viewEmpty:
			a = append(a, "--perms", "0700", "--size", strconv.FormatInt(l.tmpBytes, 10), "--tmpfs", v.path)
		}
	}
	for _, d := range l.ancestors {
		a = append(a, "--bind", d, d)
	}
	for _, p := range l.protected {
		a = append(a, "--ro-bind", p, p)
	}
	for _, p := range l.absentDirs {
		a = append(a, "--perms", "0555", "--size", "4096", "--tmpfs", p, "--remount-ro", p)
	}
	for _, p := range l.absentFiles {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	for _, p := range l.links.mounts {
		a = append(a, "--ro-bind", p, p)
	}
	for _, p := range l.hideDirs {
		a = append(a, "--perms", "0000", "--size", "4096", "--tmpfs", p, "--remount-ro", p)
	}
	for _, p := range l.hideFiles {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	// The empty root, where bwrap made the mount points, is read-only:
	// nothing unbounded is written outside /tmp, /run and the home.
	if rep == "" {
		a = append(a, "--remount-ro", "/", "--chdir", l.dir, "--")
		return append(a, argv...)
	}
	a = append(a, "--ro-bind", rep, reporterPath, "--remount-ro", "/", "--chdir", l.dir, "--", reporterPath)
	return append(a, argv...)
}

// BoundaryCommand returns bubblewrap's command line for spec's command in
// a restricted mode with the boundary Start would build (the same
// namespaces, mounts and working directory; bwrap found as Start finds
// it; nested protected paths of a workspace_write workspace are not
// searched) and nothing of Start's own: the command runs directly as
// bubblewrap's first process, with no reporter, no status, block or hold
// descriptors, no workspace lock or placeholders (bubblewrap makes the
// mount points of missing protected names in the workspace, and they
// stay), no process, memory or cgroup limits, no output capture.
// bubblewrap runs under an argv[0] (BoundaryMarker) naming this process,
// which is to start the command itself: once this process is gone,
// SweepBoundaries kills what is left of it. It is
// bubblewrap's own cost of a command, for a benchmark to set beside Start's (logbook bench); a
// command run this way is held to none of Start's limits, and its end
// is reported as bubblewrap reports it (a signal as 128+N), so nothing
// but a measurement should run one. The caller owns the returned command
// and sets its standard streams. Errors: spec's, as Start's
// (ErrInvalidSpec, ErrNotFound), and a FullAccess spec is ErrInvalidSpec.
func BoundaryCommand(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	pl, err := validate(spec)
	if err != nil {
		return nil, err
	}
	if !pl.restricted {
		return nil, fmt.Errorf("boundary %q: %w: mode %s has no boundary", pl.name, ErrInvalidSpec, spec.Mode)
	}
	bw, err := findBwrap(spec.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("boundary %q in mode %s: %w", pl.name, spec.Mode, err)
	}
	if spec.Mode == WorkspaceWrite {
		// The protected names as claim decides them, without its lock,
		// ledger or placeholders: bubblewrap makes a missing one's mount
		// point in the workspace, where it stays.
		l := &pl.layout
		for _, name := range ProtectedNames() {
			p := filepath.Join(l.ws, name)
			switch _, err := os.Lstat(p); {
			case err == nil:
				l.protected = append(l.protected, p)
			case slices.Contains(absentDirNames(), name):
				l.absentDirs = append(l.absentDirs, p)
			default:
				l.absentFiles = append(l.absentFiles, p)
			}
		}
	}
	c := exec.CommandContext(ctx, bw)
	c.Args = append([]string{boundaryArgv0()}, pl.layout.args("", pl.args)...)
	c.Env, c.Dir = pl.env, pl.dir
	return c, nil
}

// boundaryBase returns the bwrap options shared by every restricted
// command and the availability probe: every namespace but the network's
// host side, no capabilities (root included), no nested user namespaces;
// an empty root with the system directories read-only (symbolic links
// among them as links), private, size-bounded /tmp, /run and /dev/shm, a
// read-only /dev and read-only sysctls. Nothing else of the host.
func boundaryBase(system []string, links map[string]string, tmpBytes int64) []string {
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	a := []string{
		"--die-with-parent",
		"--unshare-user", "--disable-userns",
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
	}
	for _, d := range system {
		if t := links[d]; t != "" {
			a = append(a, "--symlink", t, d)
		} else {
			a = append(a, "--ro-bind", d, d)
		}
	}
	return append(a,
		"--dev", "/dev",
		"--perms", "1777", "--size", size(DefaultShmBytes), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--proc", "/proc",
		// bwrap leaves the new /proc's sys writable, and root keeps its
		// owner's rights there without capabilities (kernel.core_pattern
		// would run a program of the command's choice on the host).
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--perms", "1777", "--size", size(tmpBytes), "--tmpfs", "/tmp",
		"--perms", "0755", "--size", size(DefaultRunBytes), "--tmpfs", "/run",
	)
}

// scanWorkspace returns every path in workspace ws (resolved) whose name is
// one of ProtectedNames, the git directories that .git files among them
// name inside ws, and the plan for files with hard links (see linkPlan).
// It does not follow symbolic links, and it does not search protected
// paths (skip, and what it finds). It refuses (ErrRefused) a workspace
// with more than maxScanEntries entries, a protected name that is a
// symbolic link (the link itself could be replaced), and hard links that
// would need more than maxLinkMounts mounts.
func scanWorkspace(ws string, skip []string) ([]string, linkPlan, error) {
	refuse := func(format string, a ...any) ([]string, linkPlan, error) {
		return nil, linkPlan{}, fmt.Errorf("%w: workspace %s: %s: run it in read_only or full_access", ErrRefused, ws, fmt.Sprintf(format, a...))
	}
	names := ProtectedNames()
	var found []string
	lw := newLinkWalk(ws)
	entries := 0
	var walk func(d string, parent int) error
	walk = func(d string, parent int) error {
		f, err := os.Open(d)
		if err != nil {
			return nil // unreadable by the worker, so by the command too
		}
		des, err := f.ReadDir(-1)
		if err != nil {
			f.Close()
			return nil
		}
		entries += len(des)
		if entries > maxScanEntries {
			f.Close()
			return fmt.Errorf("more than %d entries to search for protected paths and hard links", maxScanEntries)
		}
		me := lw.dir(d, parent)
		var subdirs []string
		for _, de := range des {
			p := filepath.Join(d, de.Name())
			if slices.Contains(names, de.Name()) {
				if de.Type()&fs.ModeSymlink != 0 {
					f.Close()
					return fmt.Errorf("%s is a symbolic link", p)
				}
				if fi, err := de.Info(); err == nil && isPlaceholder(fi) && d != ws {
					// Another command's, whose workspace this one holds:
					// a missing name below the top level, not protected.
					// Bound here, it would go when that command does.
					continue
				}
				found = append(found, p)
				if de.Name() == ".git" && de.Type().IsRegular() {
					if gd, ok := gitFileTarget(p); ok {
						if real, err := filepath.EvalSymlinks(gd); err == nil && within(ws, real) {
							found = append(found, real)
						}
					}
				}
				continue
			}
			if slices.Contains(skip, p) {
				continue
			}
			switch {
			case de.IsDir():
				subdirs = append(subdirs, p)
			case de.Type().IsRegular():
				lw.file(f, me, de.Name())
			}
		}
		f.Close()
		for _, s := range subdirs {
			if err := walk(s, me); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(ws, -1); err != nil {
		return refuse("%v", err)
	}
	plan, err := lw.plan()
	if err != nil {
		return refuse("%v", err)
	}
	return found, plan, nil
}

// CredentialPaths returns the well-known places below home where tools
// keep credentials (SSH keys, cloud and registry tokens, git and package
// manager credentials, agents' logins), for Spec.Hidden. A restricted
// command does not see the worker's home at all unless an allowlist entry
// or the workspace lies in it; these stay covered even then. The caller
// owns the returned slice; paths that do not exist are skipped by Start.
func CredentialPaths(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	rel := []string{
		// Keys, cloud and cluster logins.
		".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".oci", ".config/gcloud",
		".config/doctl", ".config/hcloud", ".terraform.d", ".terraformrc", ".pulumi",
		".vault-token", ".s3cfg", ".boto", ".config/rclone", ".config/containers",
		".local/share/containers/auth.json",
		// Git, forges and package registries.
		".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub",
		".config/glab-cli", ".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials.toml",
		".cargo/credentials", ".gem/credentials", ".m2/settings-security.xml", ".m2/settings.xml",
		".gradle/gradle.properties", ".config/github-copilot", ".config/configstore",
		// Databases.
		".pgpass", ".my.cnf", ".mylogin.cnf",
		// Shells' and REPLs' histories: tokens typed on a command line.
		".bash_history", ".zsh_history", ".local/share/fish/fish_history", ".python_history",
		".node_repl_history", ".psql_history", ".mysql_history", ".sqlite_history",
		// Password stores, keyrings and browser profiles.
		".password-store", ".local/share/keyrings", ".config/op", ".mozilla", ".config/google-chrome",
		".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
		// Agents' logins and Logbook's own.
		".claude.json", ".claude/.credentials.json", ".codex/auth.json",
		".config/logbook", ".local/share/logbook",
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(home, r)
	}
	return out
}
