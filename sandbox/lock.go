package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Locks. bubblewrap mounts by path, and resolves each path at mount time,
// after the worker has looked at it. A command that can write a directory
// on the path from / to a mount's source or destination could, between the
// two, swap it for a symbolic link or another directory: a read-only bind
// of a protected path would then show a host file (a credentials file, the
// data dir) or land beside the path it was meant to cover. Only a
// WorkspaceWrite command writes the host's file system (its workspace; the
// host's own processes are not the adversary here), so a restricted start
// locks, with flock(2), in one order for every worker process on the host:
//   - exclusively, a WorkspaceWrite command's workspace, from before it is
//     searched until the command's boundary is gone: no other restricted
//     command sets up or runs there meanwhile;
//   - shared, every directory strictly above a path it mounts by name (the
//     workspace, the allowlist entries, the hidden paths): no
//     WorkspaceWrite command runs in one of them while the mounts are made.
//
// The locks are the worker's descriptors, so they go when the worker
// dies. A worker killed (SIGKILL) while bubblewrap still builds the
// boundary leaves a sandbox that lives on: bubblewrap's setup process
// takes its parent-death signal only once its mounts are made, and makes
// missing mount points on the host through the workspace's bind. It is
// killed by the next sweep (SweepBoundaries, which SweepPlaceholders
// runs); until then the workspace is not locked against it. The lock is
// not handed to bubblewrap to close that gap: a descriptor the sandbox's
// pid 1 holds, the command can open through /proc/1/fd (bubblewrap
// 0.8.0).
//
// A ReadOnly command in a workspace where a WorkspaceWrite command runs
// does not wait: it mounts the workspace itself, not paths in it, unless a
// hidden path lies in it. Two WorkspaceWrite commands in one workspace, or
// one in a workspace below another's, run one after the other.

// lockPoll is how often a start that waits for a lock tries again.
const lockPoll = 20 * time.Millisecond

// releaseGoneWait bounds how long Busy waits for the locks of this
// process's ended commands to go (see pendingRelease).
const releaseGoneWait = 2 * time.Second

// lockReq is a directory a start locks, and how.
type lockReq struct {
	path string
	excl bool
}

// locks returns what a start of layout l locks, in the order taken: by
// path, so that two starts never wait on each other in a cycle. A
// directory wanted both ways is locked exclusively.
func (l *layout) locks() []lockReq {
	want := map[string]bool{} // path → exclusive
	above := func(p string) {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if _, ok := want[d]; !ok {
				want[d] = false
			}
			if d == "/" {
				return
			}
		}
	}
	for _, v := range l.views {
		if v.kind != viewEmpty { // the home's tmpfs: a swap there only hides more
			above(v.path)
		}
	}
	for _, p := range l.hideDirs {
		above(p)
	}
	for _, p := range l.hideFiles {
		above(p)
	}
	if l.mode == WorkspaceWrite {
		want[l.ws] = true
	}
	out := make([]lockReq, 0, len(want))
	for p, excl := range want {
		out = append(out, lockReq{p, excl})
	}
	slices.SortFunc(out, func(a, b lockReq) int { return cmp.Compare(a.path, b.path) })
	return out
}

// lock takes l's locks (see locks), waiting for other commands' as long as
// ctx lets it. A directory the worker cannot open (read) refuses the
// start: it cannot be locked, so a command there could go unseen. On success l.held
// owns the descriptors (unlock lets them go); on failure nothing is held.
// Its errors wrap ErrRefused, and ctx's error when it is done.
func (l *layout) lock(ctx context.Context) error { return l.lockAll(ctx, l.locks()) }

// lockAll is lock of the directories reqs (in locks' order) rather than
// l's own.
func (l *layout) lockAll(ctx context.Context, reqs []lockReq) error {
	for _, r := range reqs {
		f, err := openDir(r.path)
		if errors.Is(err, unix.ELOOP) {
			l.unlock()
			return fmt.Errorf("%w: %s has become a symbolic link since the command was planned", ErrRefused, r.path)
		}
		if err != nil {
			// Not skipped: a command that can write there could have
			// made it unreadable (chmod 0300) to pass the lock by.
			l.unlock()
			what := "directory"
			if r.excl {
				what = "workspace"
			}
			return fmt.Errorf("%w: lock %s %s: %v", ErrRefused, what, r.path, err)
		}
		how := unix.LOCK_SH
		if r.excl {
			how = unix.LOCK_EX
		}
		for {
			released := releaseSignal() // taken before the try: no release is missed
			err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
			if err == nil || !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
				break
			}
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(lockPoll):
				continue
			case <-released:
				continue // a command of this process let its locks go
			}
			break
		}
		if err != nil {
			f.Close()
			l.unlock()
			what := "directory above it"
			if r.excl {
				what = "workspace"
			}
			return fmt.Errorf("%w: wait for another command's %s %s: %w", ErrRefused, what, r.path, err)
		}
		l.held = append(l.held, f)
	}
	return nil
}

// openDir opens directory p for a lock without following a symbolic
// link anywhere along it (openat2 RESOLVE_NO_SYMLINKS, Linux 5.6; before
// that, O_NOFOLLOW on the last component only): ELOOP when one is there.
// The paths locked are resolved ones, so a link means one was swapped in.
func openDir(p string) (*os.File, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// unaliased returns ps without l's aliases (a new slice when it has
// any).
func (l *layout) unaliased(ps []string) []string {
	if len(l.aliases) == 0 {
		return ps
	}
	return slices.DeleteFunc(slices.Clone(ps), func(p string) bool { return l.aliases[p] })
}

// differs reports what differs between layout l, planned before its locks
// were taken, and fresh, planned again under them ("" if nothing): the
// paths a command mounts must be those it was planned and admitted with.
func (l *layout) differs(fresh layout) string {
	switch {
	case l.ws != fresh.ws:
		return fmt.Sprintf("the workspace resolved to %s, now to %s", l.ws, fresh.ws)
	case l.dir != fresh.dir:
		return fmt.Sprintf("the working directory resolved to %s, now to %s", l.dir, fresh.dir)
	case !slices.Equal(l.views, fresh.views):
		return "the allowlist or the home resolves elsewhere"
	case !slices.Equal(l.unaliased(l.hideDirs), fresh.unaliased(fresh.hideDirs)) || !slices.Equal(l.unaliased(l.hideFiles), fresh.unaliased(fresh.hideFiles)):
		return "a hidden path resolves elsewhere"
	case !slices.Equal(l.system, fresh.system):
		return "the system directories changed"
	}
	return ""
}

// pendingRelease is a command's release (see layout.release) under way
// in this process after its exit: the directories its locks hold, and a
// channel closed once they are let go. A start of this process that
// finds a directory locked tries again as soon as such a release is
// done rather than at its next poll (lockPoll), and Busy waits for the
// ones that hold its directories rather than answering busy: their
// commands are over, and their locks go within milliseconds.
type pendingRelease struct {
	paths []string
	gone  chan struct{}
}

// releases holds the pendingRelease of this process's commands, and
// signal, closed (and replaced) whenever one of them is done.
var releases struct {
	mu     sync.Mutex
	set    map[*pendingRelease]struct{}
	signal chan struct{}
}

// releaseSignal returns a channel closed when the next pending release
// of this process is done.
func releaseSignal() <-chan struct{} {
	releases.mu.Lock()
	defer releases.mu.Unlock()
	if releases.signal == nil {
		releases.signal = make(chan struct{})
	}
	return releases.signal
}

// pendingRelease announces that l's locks are about to be let go (l's
// release, then done); nil if l holds none. A nil *pendingRelease is
// valid: done does nothing.
func (l *layout) pendingRelease() *pendingRelease {
	if len(l.held) == 0 {
		return nil
	}
	r := &pendingRelease{gone: make(chan struct{})}
	for _, f := range l.held {
		r.paths = append(r.paths, f.Name())
	}
	releases.mu.Lock()
	if releases.set == nil {
		releases.set = map[*pendingRelease]struct{}{}
	}
	releases.set[r] = struct{}{}
	releases.mu.Unlock()
	return r
}

// done says r's locks are let go.
func (r *pendingRelease) done() {
	if r == nil {
		return
	}
	releases.mu.Lock()
	delete(releases.set, r)
	if releases.signal != nil {
		close(releases.signal)
		releases.signal = nil
	}
	releases.mu.Unlock()
	close(r.gone)
}

// releasing returns a channel closed once the pending release of this
// process that holds directory p (as locked: resolved) lets it go; nil
// if none holds it.
func releasing(p string) <-chan struct{} {
	releases.mu.Lock()
	defer releases.mu.Unlock()
	for r := range releases.set {
		if slices.Contains(r.paths, p) {
			return r.gone
		}
	}
	return nil
}

// awaitReleases waits, up to d in all, for the pending releases of this
// process that hold any of reqs' directories.
func awaitReleases(reqs []lockReq, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, r := range reqs {
		if ch := releasing(r.path); ch != nil {
			select {
			case <-ch:
			case <-timer.C:
				return
			}
		}
	}
}

// unlock lets l's locks go. Idempotent.
func (l *layout) unlock() {
	for _, f := range l.held {
		f.Close()
	}
	l.held = nil
}

// Busy reports whether a restricted Start of spec would now wait for
// another command's locks (see lock): a worker asks before it takes a
// command, so that one which would wait holds no slot meanwhile. The
// answer may be stale as soon as it is given; Start waits in that case.
// FullAccess is never busy, and neither is a spec Start would refuse
// (Start says why).
func Busy(spec Spec) bool {
	return spec.Busy()
}

// Busy is the package's Busy of s that also keeps, in s, the plan it
// made when the answer is false: the next Start of s (or of a copy of
// it made after this call) takes that plan rather than planning again.
// It is planned outside the locks, as Start's own first plan is, and
// Start plans once more under them and refuses a start whose paths
// moved meanwhile, as always. One Start takes the plan; any other plans
// afresh. s must not be changed between the two calls but for Trace,
// Hold and Probed.
//
// Where a start of a spec like s (see lockKey) has locked before, Busy
// tries the directories that start locked and plans nothing: the next
// Start takes those locks first and plans once, under them (see
// lockHints); should one of them be gone or have become a symbolic
// link by then, that Start is refused, as one on Busy's plan would be.
// A hint whose directories cannot all be locked as they are now is
// dropped, and Busy plans. While another command holds a hinted lock
// the spec is busy, even one Start would refuse once it is free.
func (s *Spec) Busy() bool {
	s.planned = nil
	if s.Mode == FullAccess {
		return false
	}
	key := s.lockKey()
	if reqs := lockHints.get(key); reqs != nil {
		switch err := tryLocks(reqs); {
		case errors.Is(err, context.Canceled):
			return true
		case err == nil:
			s.planned = &planOnce{hint: reqs}
			return false
		}
		lockHints.drop(key)
	}
	pl, err := validate(*s)
	if err != nil || !pl.restricted {
		return false
	}
	if errors.Is(tryLocks(pl.layout.locks()), context.Canceled) {
		return true
	}
	s.planned = &planOnce{pl: pl}
	return false
}

// tryLocks tries to take the locks reqs without waiting and lets go of
// what it took at once: an error wrapping context.Canceled means one is
// held by another command (busy), another error that one cannot be
// taken at all (see lock).
func tryLocks(reqs []lockReq) error {
	// A command of this process that has ended lets its locks go in a
	// moment: not busy.
	awaitReleases(reqs, releaseGoneWait)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one try each, no wait
	var l layout
	err := l.lockAll(ctx, reqs)
	l.unlock()
	return err
}

// lockHints remembers, for this process, the directories the last
// restricted start of each spec (by lockKey) locked, as locks returned
// them for its plan made under those locks. A start of a like spec
// takes them before it plans (lockFirst): if the plan it then makes,
// under them, locks the very same directories, that plan is as fresh
// as the second plan a start makes under its locks otherwise, and
// stands alone; if not, the start lets them go and plans as without a
// hint. A hint never decides what is mounted or protected, only which
// locks come first: a stale one costs a plan, never a guarantee. It
// holds at most maxLockHints specs.
var lockHints lockHintSet

// maxLockHints bounds lockHints; past it, it starts afresh.
const maxLockHints = 256

// lockHintSet is the type of lockHints. Safe for concurrent use.
type lockHintSet struct {
	mu   sync.Mutex
	m    map[string][]lockReq
	hits atomic.Int64 // starts planned once under hinted locks, for tests
}

// get returns the hint for key, nil if none; the caller must not
// change it.
func (h *lockHintSet) get(key string) []lockReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key]
}

// drop forgets the hint for key.
func (h *lockHintSet) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// put makes reqs the hint for key; the set keeps reqs.
func (h *lockHintSet) put(key string, reqs []lockReq) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxLockHints {
		h.m = map[string][]lockReq{}
	}
	h.m[key] = reqs
}

// lockKey names what decides the locks of a restricted start of s: its
// mode, workspace, home, allowlist, hidden paths, kept directories and
// /etc watch. Two specs with one key plan the same locks while the file
// system stays as it is.
func (s *Spec) lockKey() string {
	home, _ := envValue(s.Env, "HOME")
	var b strings.Builder
	b.WriteString(string(s.Mode))
	for _, p := range []string{s.Workspace, home, fmt.Sprintf("%p", s.Etc)} {
		b.WriteByte(0)
		b.WriteString(p)
	}
	for _, a := range s.Allow {
		b.WriteString("\x00a")
		b.WriteString(a.String())
	}
	for _, h := range s.Hidden {
		b.WriteString("\x00h")
		b.WriteString(h)
	}
	for _, k := range s.Keep {
		b.WriteString("\x00k")
		b.WriteString(k)
	}
	return b.String()
}

// lockFirst begins a restricted start of spec (lockKey key) with the
// locks reqs, those lockHints holds for it (or Busy found free for
// it, with busy true), and plans under them. locked: they are the very
// locks of the plan pl, which its layout holds (layout.held: claim
// takes no more, nor plans again). planned without locked: pl was made
// under other locks than its own, which are let go: it is a start's
// first plan, made outside its locks, and the caller goes on with it
// as such. Neither: reqs cannot all be had as they would be otherwise
// (a directory gone, or become a symbolic link), the hint is dropped
// and nothing is held; with busy that is an error instead, as for a
// start on Busy's plan. err is validate's, or the lock's (wrapping
// ErrRefused, and ctx's error when ctx ended the wait).
func lockFirst(ctx context.Context, spec Spec, key string, reqs []lockReq, busy bool) (pl plan, planned, locked bool, err error) {
	var held layout
	if err := held.lockAll(ctx, reqs); err != nil {
		if busy || ctx.Err() != nil {
			return plan{}, false, false, fmt.Errorf("start %q in mode %s: %w", argv0(spec.Argv), spec.Mode, err)
		}
		lockHints.drop(key)
		return plan{}, false, false, nil
	}
	pl, err = validate(spec)
	if err != nil {
		held.unlock()
		return plan{}, false, false, err
	}
	if !slices.Equal(pl.layout.locks(), reqs) {
		held.unlock()
		return pl, true, false, nil
	}
	pl.layout.held = held.held
	lockHints.hits.Add(1)
	return pl, true, true, nil
}

// argv0 is argv[0], "" for an empty argv: for messages.
func argv0(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}
