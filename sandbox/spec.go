package sandbox

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/sandbox/reporter"
)

// Errors reported by Start, Available and the Process methods. Each is
// wrapped with the operation and the command it concerns; test with errors.Is.
var (
	// ErrInvalidSpec means the Spec itself is wrong (empty argv, unknown mode,
	// relative workspace, working directory outside the workspace, …).
	// Nothing was started.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrNotFound means argv[0] names no executable file, looked up the way
	// the command's own exec would do it. Nothing was started.
	ErrNotFound = errors.New("sandbox: command not found")
	// ErrRefused means a restricted command did not run because bubblewrap
	// is missing or could not build the boundary (from Start, which then
	// started nothing), or, rarely, because bubblewrap started but failed
	// before it executed the command (from Wait, with bubblewrap's own
	// message in the output). Nothing ever runs unconfined.
	ErrRefused = errors.New("sandbox: refused")
	// ErrExited means the process has already exited.
	ErrExited = errors.New("sandbox: process has exited")
)

// Mode is how far a command is confined. The values are the words the
// session aggregate stores, so they are frozen. The zero Mode is invalid.
type Mode string

// Modes, from most to least confined. See the package documentation for
// what each one contains.
const (
	// ReadOnly: the file system, the workspace included, is read-only,
	// /tmp and /run are private and writable, there is no network.
	ReadOnly Mode = "read_only"
	// WorkspaceWrite: as ReadOnly, but the workspace is writable except for
	// protected paths.
	WorkspaceWrite Mode = "workspace_write"
	// FullAccess: no boundary at all; the command runs directly.
	FullAccess Mode = "full_access"
)

// ParseMode returns the Mode spelled s ("read_only", "workspace_write" or
// "full_access"), or an error wrapping ErrInvalidSpec.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ReadOnly, WorkspaceWrite, FullAccess:
		return m, nil
	}
	return "", fmt.Errorf("parse mode %q: %w: want read_only, workspace_write or full_access", s, ErrInvalidSpec)
}

// restricted reports whether m runs inside bubblewrap.
func (m Mode) restricted() bool { return m == ReadOnly || m == WorkspaceWrite }

// Terminal size and defaults.
const (
	// TermCols and TermRows are the size of the pseudo-terminal a TTY
	// command runs on.
	TermCols = 80
	TermRows = 24
	// DefaultGrace is the time between SIGTERM and SIGKILL when Spec.Grace
	// is 0.
	DefaultGrace = 2 * time.Second
	// DefaultPath is the search path for argv[0] when Spec.Env sets no
	// PATH. It is what execvp uses; the command's environment still has no
	// PATH.
	DefaultPath = "/bin:/usr/bin"
)

// TTYEnv returns the variables a TTY command gets on top of Spec.Env, as
// "KEY=value" strings: a dumb terminal without colours or pagers, so output
// is plain text. The caller owns the returned slice.
func TTYEnv() []string {
	return []string{"TERM=dumb", "NO_COLOR=1", "COLORTERM=", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat"}
}

// Spec describes one command to run. The zero value is not valid: Argv,
// Workspace and Mode are required.
type Spec struct {
	// Argv is the command and its arguments. Argv[0] without a slash is
	// looked up in the PATH of Env (DefaultPath if Env has none); with a
	// slash it is a path, relative ones taken from Dir.
	Argv []string
	// Env is the whole environment of the command, as "KEY=value". The
	// worker's environment is never inherited; nil means empty. For a
	// duplicated key the last one wins. PWD is always set to the working
	// directory, and TTY adds TTYEnv.
	Env []string
	// Workspace is the absolute path of the directory the command works on;
	// it must exist. Symbolic links are resolved, and the boundary uses the
	// resolved path.
	Workspace string
	// Dir is the working directory: "" means Workspace, a relative path is
	// taken from Workspace. In restricted modes it must resolve to a
	// directory inside Workspace.
	Dir string
	// Mode is how far the command is confined.
	Mode Mode
	// TTY runs the command on a pseudo-terminal of TermCols × TermRows
	// instead of pipes, and adds TTYEnv to the environment.
	TTY bool
	// Protected lists paths (absolute, or relative to Workspace) that stay
	// read-only in restricted modes even when the workspace is writable; the
	// workspace's .git is always protected. Paths that do not exist, or that
	// resolve outside the workspace (already read-only or hidden there), are
	// skipped. A symbolic link protects its target. Ignored in FullAccess.
	Protected []string
	// Allow lists the host paths a restricted command sees besides the
	// workspace and SystemDirs (see Allow; DefaultAllow is the worker's
	// default): nothing else of the host is there. Ignored in FullAccess.
	Allow []Allow
	// Hidden lists absolute paths a restricted command must not see, such
	// as the Logbook data dir and credential files, for when they lie in
	// what it sees (the workspace, an Allow entry, SystemDirs): a
	// directory is covered by an empty read-only one, a file by an empty
	// read-only file. Paths that do not exist, or are out of sight
	// anyway, are skipped. Ignored in FullAccess.
	Hidden []string
	// Etc, when not nil, holds what other users may not read in /etc
	// (covered in restricted modes) between starts, for as long as
	// nothing that decides it changed (see EtcWatch); nil searches /etc
	// at every restricted start. Ignored in FullAccess.
	Etc *EtcWatch
	// HiddenWatch, when not nil, holds Hidden and Keep resolved between
	// starts, for as long as nothing that decides their resolution
	// changed (see HiddenWatch); nil resolves them at every restricted
	// start. Ignored in FullAccess.
	HiddenWatch *HiddenWatch
	// Keep lists directories inside Hidden paths where workspaces may lie
	// (Logbook's workspaces root in its data dir). At each start a hidden
	// path that holds one is covered entry by entry, but for the way to
	// the kept directory (HideAround), as it is then: a workspace may lie
	// in a kept directory and see nothing else of the hidden path, an
	// entry made in it after the worker started included. Ignored in
	// FullAccess.
	Keep []string
	// Limits bound what a restricted command may use; the zero value means
	// the defaults. Ignored in FullAccess.
	Limits Limits
	// Grace is how long Stop waits after SIGTERM before SIGKILL; 0 means
	// DefaultGrace. Negative is invalid.
	Grace time.Duration
	// Bwrap is the path of the bubblewrap executable; "" means "bwrap" looked
	// up in the worker's PATH. Unused in FullAccess.
	Bwrap string
	// Reporter is the path of the reporter's executable, which runs a
	// restricted command and reports how it ended (see package
	// reporter); "" means FindReporter's: ReporterName beside the
	// worker's executable, else that executable itself, slower to
	// start. One named here that is not an executable file is an error
	// of Start. Unused in FullAccess.
	Reporter string
	// Probed says the caller has run Available for Bwrap and it passed (a
	// worker does so once, not before every command): a restricted Start
	// then only resolves Bwrap and skips its own probe, one bubblewrap
	// start. Should bubblewrap fail after all, the command's process
	// exits with bubblewrap's message as its output.
	Probed bool
	// Ledger is a directory (the worker's, in its data dir) where a
	// WorkspaceWrite start records each placeholder it makes in the
	// workspace, durably and before making it, and its device and inode
	// once made; and where every restricted start records the bubblewrap
	// process it forked (pid and start time, not durably: it matters
	// until the host boots again). The record is emptied when the
	// command's boundary is gone (its file stays for the process's later
	// starts, and goes with a sweep once the process is gone). A worker
	// that dies leaves the placeholders, and may leave bubblewrap's first
	// child blocked for good (killed before it let that child go on, see
	// SweepPlaceholders); SweepPlaceholders removes the one and kills the
	// other. "" records nothing: what a dead worker left stays until the
	// next WorkspaceWrite command in that workspace ends, but for
	// bubblewrap's processes, which SweepBoundaries finds without a
	// record. Ignored in FullAccess.
	Ledger string
	// Hold starts a restricted command's boundary but not the command:
	// bubblewrap sets its sandbox up and waits until Process.Release, so
	// a caller can finish what must come before the command runs (record
	// it, say) while the boundary is being built, and its limits (the
	// cgroup, RLIMIT_NPROC) put on the sandbox's first process. A held
	// command that is stopped (Stop, or ctx done) before Release never
	// runs. FullAccess
	// has no boundary to set up: Start refuses Hold there
	// (ErrInvalidSpec).
	Hold bool
	// Trace, if not nil, is told of each Step of the command's start and
	// end as it is reached, with the time (the worker's monotonic clock):
	// how a caller breaks a command's time down. It runs on Start's
	// goroutine and on the Process's own, so it must be quick and safe
	// for concurrent use; it must not call the Process's methods.
	Trace func(Step, time.Time)

	// planned is the plan (*Spec).Busy made of this spec, or the
	// locks it found free in its stead (lockHints), which the Start
	// that follows takes in place of planning again; nil: Start plans.
	planned *planOnce
}

// planOnce is a plan made ahead of Start (by (*Spec).Busy), or the
// hinted locks Busy tried in its stead (hint, with no plan), taken by
// one Start only: a copy of the Spec that holds it, started again,
// plans afresh.
type planOnce struct {
	pl    plan
	hint  []lockReq // not nil: no plan, but these locks were free
	taken atomic.Bool
}

// take returns the plan, or the hint, if no Start has taken it yet;
// ok is false if there is neither.
func (o *planOnce) take() (pl plan, hint []lockReq, ok bool) {
	if o == nil || !o.taken.CompareAndSwap(false, true) {
		return plan{}, nil, false
	}
	return o.pl, o.hint, true
}

// Step is a point of a command's start or end that Spec.Trace reports,
// in this order (a start that fails stops where it failed).
type Step uint8

// The steps Spec.Trace reports.
const (
	// StepPrepared: the spec is checked, the pipes or terminal are open,
	// the cgroup is made and, in a restricted mode, the workspace's locks
	// are taken and bubblewrap's arguments built: the fork comes next.
	StepPrepared Step = iota
	// StepForked: the process runs its program (bubblewrap in the
	// restricted modes, which then builds the boundary).
	StepForked
	// StepExitSeen: the leader has exited (not yet reaped).
	StepExitSeen
	// StepReaped: what was left of its tree is killed and gone, the
	// leader is reaped (in a restricted mode, the whole sandbox with
	// it); the rest of its output is read next, while what the command
	// left on the host (placeholders, locks, cgroup) is taken down
	// beside it (see Process.WaitExit).
	StepReaped
)

// trace reports step s to spec's Trace, if any.
func (s *Spec) trace(st Step) {
	if s.Trace != nil {
		s.Trace(st, time.Now())
	}
}

// Limits bound the resources of a restricted command. A zero field means
// its default.
type Limits struct {
	// TmpBytes is the size of the private /tmp, in bytes; 0 means
	// DefaultTmpBytes. /run and /dev/shm have the fixed sizes
	// DefaultRunBytes and DefaultShmBytes.
	TmpBytes int64
	// Procs bounds the tasks (processes and threads) of the command; 0
	// means DefaultProcs. Enforced by a cgroup where one can be made (v2
	// with the pids controller delegated, else v1's pids hierarchy), else,
	// in the restricted modes of an unprivileged worker, by RLIMIT_NPROC.
	// In the restricted modes the boundary's own tasks (bubblewrap's
	// first process, the reporter's threads) are allowed on top, up to 16.
	Procs int
	// MemoryBytes bounds the command's memory where a memory cgroup can be
	// made; 0 means DefaultMemoryBytes.
	MemoryBytes int64
}

// plan is a validated Spec, ready to be started.
type plan struct {
	name       string   // argv[0] as given, for messages
	path       string   // file to execute: the command, or bwrap
	args       []string // its argv
	env        []string
	dir        string // resolved working directory
	grace      time.Duration
	tty        bool
	restricted bool
	layout     layout // restricted modes only
	procs      int    // Limits.Procs or its default
	memory     int64  // Limits.MemoryBytes or its default
}

// validate checks s without starting anything and resolves its paths. Its
// errors wrap ErrInvalidSpec or ErrNotFound.
func validate(s Spec) (plan, error) {
	if len(s.Argv) == 0 {
		return plan{}, fmt.Errorf("start: %w: empty argv", ErrInvalidSpec)
	}
	name := s.Argv[0]
	fail := func(format string, a ...any) (plan, error) {
		return plan{}, fmt.Errorf("start %q: %w: %s", name, ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	if name == "" {
		return fail("empty argv[0]")
	}
	if _, err := ParseMode(string(s.Mode)); err != nil {
		return fail("unknown mode %q: want read_only, workspace_write or full_access", s.Mode)
	}
	if s.Limits.TmpBytes < 0 || s.Limits.Procs < 0 || s.Limits.MemoryBytes < 0 {
		return fail("negative limit in %+v", s.Limits)
	}
	if s.Grace < 0 {
		return fail("negative grace %v", s.Grace)
	}
	if !filepath.IsAbs(s.Workspace) {
		return fail("workspace %q is not an absolute path", s.Workspace)
	}
	ws, err := filepath.EvalSymlinks(filepath.Clean(s.Workspace))
	if err != nil {
		return fail("workspace: %v", err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return fail("workspace %s is not a directory", s.Workspace)
	}
	restricted := s.Mode.restricted()
	if restricted && ws == "/" {
		return fail("workspace is /: a restricted mode needs a narrower workspace")
	}
	dir := s.Dir
	if dir == "" {
		dir = ws
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	dir, err = filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return fail("dir: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fail("dir %s is not a directory", s.Dir)
	}
	if restricted && !within(ws, dir) {
		return fail("dir %s is outside workspace %s", dir, ws)
	}

	env := make([]string, 0, len(s.Env)+8)
	drop := []string{"PWD"}
	if s.TTY {
		for _, kv := range TTYEnv() {
			drop = append(drop, kv[:strings.IndexByte(kv, '=')])
		}
	}
	for _, kv := range s.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	env = append(env, "PWD="+dir)
	if s.TTY {
		env = append(env, TTYEnv()...)
	}

	// Look argv[0] up now, the way execvp will, so that a missing command is
	// an error naming it rather than an exit status 127 (or 1 from bwrap).
	visible := func(string) bool { return true }
	var l layout
	if restricted {
		home, _ := envValue(env, "HOME")
		// One Resolver for the plan: the hidden paths and the
		// allowlist share most of their directories.
		var r Resolver
		hidden, aliases := s.HiddenWatch.plan(s.Hidden, s.Keep, &r)
		l = planLayout(s.Mode, ws, dir, home, s.Allow, hidden, s.Etc, &r)
		for _, a := range aliases {
			if real, err := r.EvalSymlinks(a); err == nil {
				if l.aliases == nil {
					l.aliases = map[string]bool{}
				}
				l.aliases[real] = true
			}
		}
		if l.inHidden != "" {
			return plan{}, fmt.Errorf("start %q in mode %s: %w: workspace %s lies in %s, which restricted commands must not see", name, s.Mode, ErrRefused, ws, l.inHidden)
		}
		visible = func(p string) bool {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			return l.sees(p)
		}
	}
	path, err := lookPath(name, env, dir, visible)
	if err != nil {
		return plan{}, fmt.Errorf("start %q: %w", name, err)
	}

	grace := s.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	p := plan{
		name:       name,
		path:       path,
		args:       slices.Clone(s.Argv),
		env:        env,
		dir:        dir,
		grace:      grace,
		tty:        s.TTY,
		restricted: restricted,
		procs:      cmp.Or(s.Limits.Procs, DefaultProcs),
		memory:     cmp.Or(s.Limits.MemoryBytes, DefaultMemoryBytes),
	}
	if restricted {
		// bwrap is resolved and checked by Start, which also claims the
		// workspace (locks it, searches it, decides its top level) and
		// then makes bwrap's arguments.
		l.extra = s.Protected
		if s.Limits.TmpBytes > 0 {
			l.tmpBytes = s.Limits.TmpBytes
		}
		p.layout = l
	}
	return p, nil
}

// within reports whether path p is root or lies below it. Both are clean.
func within(root, p string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// lookPath returns the absolute path of the executable name, searched the
// way execvp searches: a name with a slash is a path (relative to dir),
// anything else is looked up in the PATH of env, or DefaultPath, where an
// empty entry means dir. Only files for which visible is true count. Errors
// wrap ErrNotFound.
func lookPath(name string, env []string, dir string, visible func(string) bool) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%w: no executable file %q", ErrNotFound, p)
		}
		if !visible(p) {
			return "", fmt.Errorf("%w: no executable file %q inside the boundary, which hides it", ErrNotFound, p)
		}
		return p, nil
	}
	pathList, ok := envValue(env, "PATH")
	if !ok {
		pathList = DefaultPath
	}
	hidden := "" // the first match the boundary hides
	for _, d := range filepath.SplitList(pathList) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			if visible(p) {
				return p, nil
			}
			if hidden == "" {
				hidden = p
			}
		}
	}
	if hidden != "" {
		return "", fmt.Errorf("%w: %q is not in PATH %q inside the boundary: %q is, but the boundary hides it", ErrNotFound, name, pathList, hidden)
	}
	return "", fmt.Errorf("%w: %q is not in PATH %q", ErrNotFound, name, pathList)
}

// executable returns nil if p is a regular file with an execute bit set.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// envValue returns the value of the last key=value pair in env, as exec
// keeps the last one.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// protectedPaths returns the resolved, existing paths inside workspace ws
// that must stay read-only: extra (absolute or relative to ws) and the
// workspace's .git, with the git directory a .git file points to. The result
// is sorted and has no duplicates.
func protectedPaths(ws string, extra []string) []string {
	cand := []string{filepath.Join(ws, ".git")}
	if gitdir, ok := gitFileTarget(filepath.Join(ws, ".git")); ok {
		cand = append(cand, gitdir)
	}
	for _, p := range extra {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		cand = append(cand, filepath.Clean(p))
	}
	var out []string
	for _, p := range cand {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !within(ws, real) {
			continue
		}
		out = append(out, real)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// gitFileTarget returns the directory named by a ".git" file of the form
// "gitdir: <path>" (linked worktrees, submodules), relative paths resolved
// from the file's directory.
func gitFileTarget(gitFile string) (string, bool) {
	fi, err := os.Lstat(gitFile)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	b, err := os.ReadFile(gitFile)
	if err != nil {
		return "", false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	dir, ok := strings.CutPrefix(string(bytes.TrimSpace(line)), "gitdir:")
	if !ok {
		return "", false
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(gitFile), dir)
	}
	return filepath.Clean(dir), true
}

// statusFD is the descriptor bwrap writes its JSON status to:
// ExtraFiles[0]; blockFD the one it waits on: ExtraFiles[1], the read end
// of a pipe; holdFD the same pipe's write end, ExtraFiles[2], which
// bwrap's sandbox keeps open as its --sync-fd (closed in the command
// before its exec, bubblewrap 0.8.0). bwrap goes on at the first byte
// read from blockFD and at end of file alike, and the worker's write end
// closes when the worker dies: without the sandbox's own write end, a
// worker killed while the boundary is held would let the command run,
// with nobody to release it, watch it or record its exit. With it, the
// sandbox waits for good, and the next worker's sweep kills it (see
// SweepPlaceholders). reportFD, ExtraFiles[3], is the write end of the
// pipe the reporter writes the command's wait status to (see
// reporterPath); bwrap passes it on to its first process, the reporter,
// which keeps it from the command.
const (
	statusFD = 3
	blockFD  = 4
	holdFD   = 5
	reportFD = reporter.FD
)

// reporter.ArgvFD, when a command's argv goes on a descriptor, is
// ExtraFiles[4]: the one after reportFD (each constant below is a uint
// only when the two are equal).
const (
	_ uint = reporter.ArgvFD - reportFD - 1
	_ uint = reportFD + 1 - reporter.ArgvFD
)
