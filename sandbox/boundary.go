package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
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
var absentDirNames = []string{".git", ".claude", ".codex", ".agents", ".logbook"}

// Scan bounds: a workspace is searched for protected names up to this many
// directory entries; a larger workspace cannot be written by a restricted
// command (ErrRefused), since a nested repository could hide in the part
// not searched.
const maxScanEntries = 400_000

// Default sizes of the private RAM-backed file systems, in bytes.
const (
	DefaultTmpBytes = 1 << 30  // /tmp
	DefaultShmBytes = 64 << 20 // /dev/shm
	DefaultRunBytes = 16 << 20 // /run
)

// layout is the file system a restricted command sees, computed on the
// host before the command starts.
type layout struct {
	mode        Mode
	ws, dir     string
	protected   []string // existing paths, bound read-only onto themselves
	absentDirs  []string // missing top-level names kept missing: empty read-only dirs
	absentFiles []string // missing top-level names kept missing: /dev/null bound
	hideDirs    []string // directories covered by an empty read-only tmpfs
	hideFiles   []string // files covered by /dev/null
	tmpBytes    int64
}

// newLayout computes the layout of a restricted command in mode m on
// workspace ws (resolved) with working directory dir. extra are
// Spec.Protected, hide are Spec.Hidden. Its errors wrap ErrRefused: the
// workspace holds something that cannot be protected.
func newLayout(m Mode, ws, dir string, extra, hide []string) (layout, error) {
	l := layout{mode: m, ws: ws, dir: dir, tmpBytes: DefaultTmpBytes}
	l.protected = protectedPaths(ws, extra)
	if m == WorkspaceWrite {
		found, err := scanWorkspace(ws)
		if err != nil {
			return layout{}, err
		}
		l.protected = append(l.protected, found...)
		slices.Sort(l.protected)
		l.protected = slices.Compact(l.protected)
		held := heldPlaceholders(ws)
		// A mount point another command of this process made for a
		// missing name is still missing: it goes when that command does.
		l.protected = slices.DeleteFunc(l.protected, func(p string) bool { return held[p] })
		for _, name := range ProtectedNames() {
			p := filepath.Join(ws, name)
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) && !held[p] {
				continue
			}
			if slices.Contains(absentDirNames, name) {
				l.absentDirs = append(l.absentDirs, p)
			} else {
				l.absentFiles = append(l.absentFiles, p)
			}
		}
	}
	for _, h := range hide {
		if !filepath.IsAbs(h) {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Clean(h))
		if err != nil || hidden(ws, real) || real == "/" {
			continue // missing, or already out of sight
		}
		fi, err := os.Stat(real)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			l.hideDirs = append(l.hideDirs, real)
		} else {
			l.hideFiles = append(l.hideFiles, real)
		}
	}
	return l, nil
}

// args returns bwrap's arguments (without argv[0]) to run argv. Order
// matters: a mount hides what an earlier one put below it, so the private
// tmpfs mounts come before the workspace, protected paths after it, and
// hidden paths last. bwrap reports on statusFD; it writes an "exit-code"
// there only if the command was actually executed, and its first line
// names the sandbox's first process, which then waits on blockFD until its
// limits are in place.
func (l layout) args(argv []string) []string {
	a := append(boundaryBase(l.tmpBytes), "--json-status-fd", strconv.Itoa(statusFD), "--block-fd", strconv.Itoa(blockFD))
	bind := "--ro-bind"
	if l.mode == WorkspaceWrite {
		bind = "--bind"
	}
	a = append(a, bind, l.ws, l.ws)
	for _, p := range l.protected {
		a = append(a, "--ro-bind", p, p)
	}
	for _, p := range l.absentDirs {
		a = append(a, "--perms", "0555", "--size", "4096", "--tmpfs", p, "--remount-ro", p)
	}
	for _, p := range l.absentFiles {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	for _, p := range l.hideDirs {
		a = append(a, "--perms", "0000", "--size", "4096", "--tmpfs", p, "--remount-ro", p)
	}
	for _, p := range l.hideFiles {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	a = append(a, "--chdir", l.dir, "--")
	return append(a, argv...)
}

// boundaryBase returns the bwrap options shared by every restricted
// command and the availability probe: every namespace but the network's
// host side, no capabilities (root included), no nested user namespaces,
// a read-only view of / with private, size-bounded /tmp, /run and
// /dev/shm, a read-only /dev and read-only sysctls.
func boundaryBase(tmpBytes int64) []string {
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []string{
		"--die-with-parent",
		"--unshare-user", "--disable-userns",
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
		"--ro-bind", "/", "/",
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
	}
}

// hiddenRoots are the directories a restricted command sees as fresh, empty
// tmpfs mounts.
func hiddenRoots() []string { return []string{"/tmp", "/run", "/dev/shm"} }

// placeholders counts, per host path, the commands of this process whose
// bubblewrap keeps a missing protected name missing there, and so may
// have made a mount point for it in the workspace. The mount point goes
// with the last of them: removed under another command's mount of it,
// it would take that mount away (the kernel detaches a mount whose mount
// point is removed in another namespace) and the name would be the
// command's to create. Commands of other processes on the same workspace
// are not counted.
var placeholders = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// heldPlaceholders returns the paths under ws that placeholders holds.
func heldPlaceholders(ws string) map[string]bool {
	placeholders.Lock()
	defer placeholders.Unlock()
	held := map[string]bool{}
	for p := range placeholders.n {
		if within(ws, p) {
			held[p] = true
		}
	}
	return held
}

// hold counts l's missing names as held until cleanup; it is called
// before bubblewrap starts.
func (l layout) hold() {
	placeholders.Lock()
	defer placeholders.Unlock()
	for _, p := range slices.Concat(l.absentDirs, l.absentFiles) {
		placeholders.n[p]++
	}
}

// cleanup ends hold, and removes the mount points bubblewrap created on
// the host for protected names that were missing once no other command
// holds them: an empty directory or an empty file, left only if something
// else put content there meanwhile.
func (l layout) cleanup() {
	placeholders.Lock()
	defer placeholders.Unlock()
	last := func(p string) bool {
		if placeholders.n[p] > 1 {
			placeholders.n[p]--
			return false
		}
		delete(placeholders.n, p)
		return true
	}
	for _, p := range l.absentDirs {
		if last(p) {
			_ = syscall.Rmdir(p)
		}
	}
	for _, p := range l.absentFiles {
		if !last(p) {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			_ = os.Remove(p)
		}
	}
}

// scanWorkspace returns every path in workspace ws (resolved) whose name is
// one of ProtectedNames, and the git directories that .git files among them
// name inside ws. It does not follow symbolic links. It refuses (ErrRefused)
// a workspace with more than maxScanEntries entries, a protected name that
// is a symbolic link (the link itself could be replaced), and a regular
// file inside a protected directory that has other hard links (writing the
// other name would write the protected file), git's object store excepted.
func scanWorkspace(ws string) ([]string, error) {
	refuse := func(format string, a ...any) ([]string, error) {
		return nil, fmt.Errorf("%w: workspace %s: %s: run it in read_only or full_access", ErrRefused, ws, fmt.Sprintf(format, a...))
	}
	names := ProtectedNames()
	var found []string
	entries := 0
	stack := []string{ws}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		des, err := os.ReadDir(d)
		if err != nil {
			continue // unreadable by the worker, so by the command too
		}
		entries += len(des)
		if entries > maxScanEntries {
			return refuse("more than %d entries to search for protected paths", maxScanEntries)
		}
		for _, de := range des {
			p := filepath.Join(d, de.Name())
			if slices.Contains(names, de.Name()) {
				if de.Type()&fs.ModeSymlink != 0 {
					return refuse("%s is a symbolic link", p)
				}
				found = append(found, p)
				if de.Name() == ".git" && de.Type().IsRegular() {
					if gd, ok := gitFileTarget(p); ok {
						if real, err := filepath.EvalSymlinks(gd); err == nil && within(ws, real) {
							found = append(found, real)
						}
					}
				}
				if de.IsDir() {
					n, err := checkLinks(p, maxScanEntries-entries)
					if err != nil {
						return refuse("%v", err)
					}
					entries += n
				}
				continue
			}
			if de.IsDir() {
				stack = append(stack, p)
			}
		}
	}
	return found, nil
}

// checkLinks returns the number of entries under dir and an error if a
// regular file there, outside directories named objects or lfs (git's
// content-addressed stores, which git itself hard-links), has more than one
// link, or if there are more than budget entries.
func checkLinks(dir string, budget int) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n++
		if n > budget {
			return fmt.Errorf("more than %d entries to search for protected paths", maxScanEntries)
		}
		if de.IsDir() && p != dir && (de.Name() == "objects" || de.Name() == "lfs") {
			return filepath.SkipDir
		}
		if !de.Type().IsRegular() {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return fmt.Errorf("protected file %s has %d hard links: another name could write it", p, st.Nlink)
		}
		return nil
	})
	return n, err
}

// CredentialPaths returns the well-known places below home where tools
// keep credentials (SSH keys, cloud and registry tokens, git and package
// manager credentials, agents' logins), for Spec.Hidden. The caller owns
// the returned slice; paths that do not exist are skipped by Start.
func CredentialPaths(home string) []string {
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	rel := []string{
		".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
		".config/gcloud", ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".cargo/credentials.toml",
		".cargo/credentials", ".gem/credentials", ".claude/.credentials.json", ".codex/auth.json",
		".config/logbook", ".local/share/logbook",
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(home, r)
	}
	return out
}
