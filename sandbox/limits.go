package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Limits.
const (
	// DefaultProcs bounds the tasks (processes and threads) of one command.
	DefaultProcs = 1024
	// DefaultMemoryBytes bounds the memory of one command where a memory
	// cgroup is available, page cache and its tmpfs files included.
	DefaultMemoryBytes = 4 << 30
)

// How a limit is enforced, in Applied.
const (
	ByCgroup2 = "cgroup2"      // a cgroup v2 of the command's own
	ByCgroup1 = "cgroup1"      // cgroup v1 hierarchies (pids, memory)
	ByRlimit  = "rlimit_nproc" // RLIMIT_NPROC, counted in the command's own user namespace
	ByNone    = ""             // not enforced; Applied.Note says why
	cgPrefix  = "logbook-cmd-" // name of the cgroups made for commands
	cgRetries = 100            // kill rounds before a cgroup is given up
	cgRound   = 10 * time.Millisecond
	cgFirst   = 100 * time.Microsecond // the first kill round's pause; see cgPause
)

// cgPause returns how long kill round i (from 0) waits for the kernel to
// empty the cgroup before it looks again: cgFirst, doubled each round up
// to cgRound. A sandbox's processes are gone well under a millisecond
// after bubblewrap in most cases, so the first looks come soon, while
// cgRetries rounds still wait about a second in all.
func cgPause(i int) time.Duration {
	return min(cgFirst<<min(i, 10), cgRound)
}

// Applied reports which limits bound a command, and by what. A zero
// count means "no limit".
type Applied struct {
	Procs       int    `json:"procs,omitempty"`
	ProcsBy     string `json:"procs_by,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	MemoryBy    string `json:"memory_by,omitempty"`
	TmpBytes    int64  `json:"tmp_bytes,omitempty"` // the private /tmp (restricted modes)
	// Killable is true when every process of the command, including ones
	// that left its process group, is in a cgroup killed at its exit.
	Killable bool   `json:"killable,omitempty"`
	Note     string `json:"note,omitempty"` // why a limit is missing
	// LinkedReadOnly counts the workspace's files that a WorkspaceWrite
	// command saw read-only because they have hard links outside the
	// workspace or into protected paths; LinkedWith the other files made
	// read-only with them, in directories bound read-only as a whole.
	LinkedReadOnly int `json:"linked_read_only,omitempty"`
	LinkedWith     int `json:"linked_with,omitempty"`
}

// String returns a one-line summary such as
// "procs 1024 (cgroup1), memory 4294967296 B (cgroup1), /tmp 1073741824 B".
func (a Applied) String() string {
	var parts []string
	if a.Procs > 0 {
		parts = append(parts, fmt.Sprintf("procs %d (%s)", a.Procs, a.ProcsBy))
	}
	if a.MemoryBytes > 0 {
		parts = append(parts, fmt.Sprintf("memory %d B (%s)", a.MemoryBytes, a.MemoryBy))
	}
	if a.TmpBytes > 0 {
		parts = append(parts, fmt.Sprintf("/tmp %d B", a.TmpBytes))
	}
	if a.Note != "" {
		parts = append(parts, a.Note)
	}
	if a.LinkedReadOnly > 0 {
		parts = append(parts, fmt.Sprintf("%d files read-only for hard links outside the workspace (%d more with them)", a.LinkedReadOnly, a.LinkedWith))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

var cgSeq atomic.Int64

// cgroup is the cgroup (v2) or the cgroups (v1: one per hierarchy) of one
// command.
type cgroup struct {
	v2     bool
	dirs   []string      // dirs[0] lists the processes
	fd     int           // v2: the directory, open for clone3's CLONE_INTO_CGROUP; -1 otherwise
	warmed chan struct{} // v1: closed once warmMoves is done; nil in v2
}

// selfCgroups returns this process's cgroup paths from /proc/self/cgroup:
// "" for the v2 hierarchy, the controller name for v1 ones.
func selfCgroups() map[string]string {
	return cgroupsIn("/proc/self/cgroup")
}

// cgroupsIn returns the cgroup paths of a /proc cgroup file (proc(5)):
// "" for the v2 hierarchy, the controller name for v1 ones; nil if it
// cannot be read.
func cgroupsIn(file string) map[string]string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			m[c] = f[2]
		}
	}
	return m
}

// newCgroup makes a cgroup for one command with the given limits (0: no
// memory limit), v2 where its pids controller can be used, else (only
// with v1ok) the v1 pids and memory hierarchies. It reports what it could
// apply; a nil cgroup with the note says why none could be made.
func newCgroup(procs int, mem int64, v1ok bool) (*cgroup, Applied, string) {
	self := selfCgroups()
	name := fmt.Sprintf("%s%d-%d", cgPrefix, os.Getpid(), cgSeq.Add(1))
	var notes []string
	if p, ok := self[""]; ok {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
				continue
			}
			cg, a, err := newCgroup2(filepath.Join(root, p), name, procs, mem)
			if err == nil {
				return cg, a, ""
			}
			notes = append(notes, err.Error())
			if !v1ok {
				// No limits, but still the handle on the whole tree.
				if cg, err := newCgroup2Handle(filepath.Join(root, p), name); err == nil {
					return cg, Applied{Killable: true, Note: "no limits (" + strings.Join(notes, "; ") + ")"}, ""
				}
			}
			break
		}
	}
	if !v1ok {
		notes = append(notes, "cgroup v1 cannot hold a process from its first instruction")
		return nil, Applied{}, strings.Join(notes, "; ")
	}
	cg, a, err := newCgroup1(self, name, procs, mem)
	if err == nil {
		return cg, a, ""
	}
	notes = append(notes, err.Error())
	return nil, Applied{}, strings.Join(notes, "; ")
}

func newCgroup2(parent, name string, procs int, mem int64) (*cgroup, Applied, error) {
	ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, Applied{}, fmt.Errorf("cgroup v2: %w", err)
	}
	has := func(c string) bool { return slices.Contains(strings.Fields(string(ctl)), c) }
	for _, c := range []string{"pids", "memory"} {
		if !has(c) {
			// Fails (EBUSY) when this process sits in parent itself: the
			// controllers must then be delegated by whoever started it.
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
	}
	ctl, _ = os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if !has("pids") {
		return nil, Applied{}, fmt.Errorf("cgroup v2: the pids controller is not delegated to %s", parent)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, Applied{}, fmt.Errorf("cgroup v2: %w", err)
	}
	cg := &cgroup{v2: true, dirs: []string{dir}, fd: -1}
	a := Applied{Procs: procs, ProcsBy: ByCgroup2, Killable: true}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(procs)), 0); err != nil {
		cg.remove()
		return nil, Applied{}, fmt.Errorf("cgroup v2: %w", err)
	}
	if mem > 0 && has("memory") {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(mem, 10)), 0); err == nil {
			a.MemoryBytes, a.MemoryBy = mem, ByCgroup2
			_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
		}
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		cg.remove()
		return nil, Applied{}, fmt.Errorf("cgroup v2: %w", err)
	}
	cg.fd = fd
	return cg, a, nil
}

func newCgroup1(self map[string]string, name string, procs int, mem int64) (*cgroup, Applied, error) {
	p, ok := self["pids"]
	if !ok {
		return nil, Applied{}, errors.New("cgroup v1: no pids hierarchy")
	}
	dir := filepath.Join("/sys/fs/cgroup/pids", p, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, Applied{}, fmt.Errorf("cgroup v1: %w", err)
	}
	cg := &cgroup{dirs: []string{dir}, fd: -1}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(procs)), 0); err != nil {
		cg.remove()
		return nil, Applied{}, fmt.Errorf("cgroup v1: %w", err)
	}
	a := Applied{Procs: procs, ProcsBy: ByCgroup1, Killable: true}
	if mp, ok := self["memory"]; ok && mem > 0 {
		md := filepath.Join("/sys/fs/cgroup/memory", mp, name)
		if err := os.Mkdir(md, 0o755); err == nil {
			if err := os.WriteFile(filepath.Join(md, "memory.limit_in_bytes"), []byte(strconv.FormatInt(mem, 10)), 0); err == nil {
				cg.dirs = append(cg.dirs, md)
				a.MemoryBytes, a.MemoryBy = mem, ByCgroup1
			} else {
				_ = unix.Rmdir(md)
			}
		}
	}
	// The sandbox's first process is moved in (add) once bubblewrap
	// names it; the kernel's wait for that move starts now, once this
	// cgroup is made: the wait holds the kernel's lock on every cgroup
	// hierarchy, which the writes above take too.
	cg.warmed = make(chan struct{})
	go func() {
		defer close(cg.warmed)
		warmMoves()
	}()
	return cg, a, nil
}

// warmMoves moves the calling thread into the cgroup v1 pids hierarchy's
// cgroup it is in already, which changes nothing but readies the kernel
// for add. Every move into a cgroup v1 (a write to cgroup.procs or
// tasks) takes the kernel's one lock on all thread groups for writing,
// and the first such write after a quiet spell first waits for an RCU
// grace period, 5 to 15 ms on a busy machine, holding the lock of all
// cgroup hierarchies meanwhile (any cgroup made, removed or written to
// waits with it); writes within about a grace period of the last one
// do not wait. A restricted start in cgroup v1 calls it (newCgroup1)
// once it has made and set up the command's cgroups, so that the grace
// period runs while the workspace is claimed and bubblewrap starts
// rather than after bubblewrap has named its first process, whose move
// (add) holds the boundary's release. Errors are ignored: add then
// waits as it would have.
func warmMoves() {
	// The thread's own cgroup, and the thread stays the one named.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, ok := cgroupsIn("/proc/thread-self/cgroup")["pids"]
	if !ok {
		return
	}
	_ = os.WriteFile(filepath.Join("/sys/fs/cgroup/pids", p, "tasks"), []byte(strconv.Itoa(unix.Gettid())), 0)
}

// add moves process pid, and so its future children, into the cgroup.
func (c *cgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// procs returns the processes in the cgroup.
func (c *cgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(c.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill kills every process in the cgroup, those that left the command's
// process group or session included, and waits (briefly) until it is
// empty. It reports whether it is.
func (c *cgroup) kill() bool {
	if c.v2 {
		_ = os.WriteFile(filepath.Join(c.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	for i := range cgRetries {
		pids := c.procs()
		if len(pids) == 0 {
			return true
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			// Only while it is still ours: a pid could have been reused.
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup"); err == nil && bytes.Contains(b, []byte("/"+filepath.Base(c.dirs[0])+"\n")) {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		time.Sleep(cgPause(i))
	}
	return len(c.procs()) == 0
}

// remove kills what is left and removes the cgroup.
func (c *cgroup) remove() {
	if c.warmed != nil {
		<-c.warmed
	}
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	c.kill()
	for _, d := range c.dirs {
		for range cgRetries {
			if err := unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			time.Sleep(cgRound)
		}
	}
}

// setNproc sets RLIMIT_NPROC of process pid to n. Used for an unprivileged
// worker's restricted commands, whose user namespace makes the count their
// own; the kernel never applies it to root.
func setNproc(pid, n int) error {
	lim := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, &lim, nil); err != nil {
		return fmt.Errorf("set RLIMIT_NPROC of %d: %w", pid, err)
	}
	return nil
}

// readChildPid reads bwrap's first JSON status line, {"child-pid": N, …},
// from r and returns N: the host pid of the sandbox's first process, which
// waits on --block-fd before it starts anything.
func readChildPid(r *bufio.Reader) (int, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("read bubblewrap status: %w", err)
	}
	const key = `"child-pid":`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return 0, fmt.Errorf("bubblewrap status %q has no child-pid", line)
	}
	rest := bytes.TrimLeft(line[i+len(key):], " ")
	j := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if j < 0 {
		j = len(rest)
	}
	pid, err := strconv.Atoi(string(rest[:j]))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("bubblewrap status %q: bad child-pid", line)
	}
	return pid, nil
}

// SweptCgroup is one cgroup a sweep removed: its directory, the pid of
// the dead worker process that made it (from its name), and how many
// processes it still held, killed with it.
type SweptCgroup struct {
	Path      string
	Owner     int
	Processes int
}

// sweepMu makes the cgroup sweeps of this process take turns.
var sweepMu sync.Mutex

// SweepCgroups kills and removes the cgroups that worker processes of
// this host made for their commands and left behind when they died: the
// directories named logbook-cmd-<pid>-<n> beside this process's own
// cgroup (v2, and v1 pids and memory) whose <pid> no longer runs. A
// worker killed between a command's start and its record of the cgroup
// (command.running) leaves a tree nobody else can find, and any killed
// worker leaves its empty cgroups; a worker sweeps once when it starts
// and whenever it finds a dead worker. A cgroup whose pid runs again
// (recycled) is left alone. It returns how many cgroups it removed and
// how many processes they still held, and the first error met (the sweep
// goes on past it), and tells each (when not nil) of every cgroup it
// removed, as it goes, so that a worker can name whose tree it killed.
// The sweeps of one process take turns, so that two workers of one
// serve never kill and count the same tree twice.
func SweepCgroups(each func(SweptCgroup)) (removed, killed int, err error) {
	sweepMu.Lock()
	defer sweepMu.Unlock()
	self := selfCgroups()
	var parents []string
	if p, ok := self[""]; ok {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
				parents = append(parents, filepath.Join(root, p))
				break
			}
		}
	}
	for _, c := range []string{"pids", "memory"} {
		if p, ok := self[c]; ok {
			parents = append(parents, filepath.Join("/sys/fs/cgroup", c, p))
		}
	}
	for _, parent := range parents {
		ents, rerr := os.ReadDir(parent)
		if rerr != nil {
			continue // no such hierarchy here
		}
		for _, e := range ents {
			pid, ok := cgroupOwner(e.Name())
			if !ok || !e.IsDir() || pid == os.Getpid() || alive(pid) || !mine(filepath.Join(parent, e.Name())) {
				continue
			}
			n, kerr := KillCgroup(filepath.Join(parent, e.Name()))
			if kerr != nil {
				if err == nil {
					err = kerr
				}
				continue
			}
			removed++
			killed += n
			if each != nil {
				each(SweptCgroup{Path: filepath.Join(parent, e.Name()), Owner: pid, Processes: n})
			}
		}
	}
	return removed, killed, err
}

// mine reports whether this process may take down cgroup directory dir:
// it is root, or dir is its user's. On a host where every user's
// processes share one cgroup (cgroup v1, most often), the dead commands'
// cgroups of a root worker sit beside an unprivileged worker's, which
// can neither kill what they hold nor remove them.
func mine(dir string) bool {
	euid := os.Geteuid()
	if euid == 0 {
		return true
	}
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && int(st.Uid) == euid
}

// cgroupOwner returns the pid in a cgroup name newCgroup made
// (logbook-cmd-<pid>-<n>).
func cgroupOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, cgPrefix)
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if _, nerr := strconv.Atoi(n); err != nil || nerr != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// alive reports whether process pid exists (ours to signal or not).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
