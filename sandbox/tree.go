package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/<pid>/stat says of a process that the tree
// functions need.
type procStat struct {
	pid, ppid, pgrp, sid int
	start                uint64 // clock ticks after boot
	dead                 bool   // a zombie: nothing left to signal
}

// readStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session
// … starttime(22) …"; comm may hold spaces and parentheses.
//
// The file is read with plain system calls (open, read, close) into a
// buffer on the stack, not through an os.File, which would register it
// with the runtime's poller and stat it first: a tree scan reads every
// process's, so this is most of what a command's exit costs.
func readStat(pid int) (procStat, error) {
	var buf [statBuf]byte
	b, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	const startField = 22 - 3 // fields after the name start at field 3
	if len(f) <= startField {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	st := procStat{pid: pid, dead: string(f[0]) == "Z" || string(f[0]) == "X"}
	var errs [4]error
	st.ppid, errs[0] = strconv.Atoi(string(f[1]))
	st.pgrp, errs[1] = strconv.Atoi(string(f[2]))
	st.sid, errs[2] = strconv.Atoi(string(f[3]))
	st.start, errs[3] = strconv.ParseUint(string(f[startField]), 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// statBuf is room for a whole /proc/<pid>/stat: 52 numeric fields of
// at most 20 digits each, and a command name of at most 64 bytes.
const statBuf = 1280

// readProcFile reads the file at path, a /proc file that fits in buf, into
// buf and returns what it read (readProcPrefix to its end). Errors: open's
// and read's, as *os.PathError; a file that fills buf (it may go on past
// it).
func readProcFile(path string, buf []byte) ([]byte, error) {
	b, err := readProcPrefix(path, buf, -1)
	if err == nil && len(b) == len(buf) {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, len(buf))
	}
	return b, err
}

// ProcStart returns the start time of process pid in clock ticks after
// boot (field 22 of /proc/<pid>/stat). With the boot id (BootID) it tells
// a process from a later one that got the same pid. It fails if there is
// no such process.
func ProcStart(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

// BootID returns this host's boot id (/proc/sys/kernel/random/boot_id),
// "" when unknown.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procScans counts the listings of /proc that lonelyLeader and allProcs
// made, in this process.
var procScans atomic.Uint64

// allProcs returns the stat of every process in /proc that could be read.
func allProcs() ([]procStat, error) {
	procScans.Add(1)
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	out := make([]procStat, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// lonelyLeader reports whether no process of /proc but pid itself has
// pid as its session or process group id, asking each with getsid and
// getpgid: two system calls a process where a tree scan (allProcs)
// opens, reads and parses its stat. Once pid has exited (a zombie, its
// children re-parented), treeOf finds nothing unless some process is
// such a member, so a true answer spares the exit its scan. It answers
// false when /proc cannot be listed.
func lonelyLeader(pid int) bool {
	procScans.Add(1)
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return false
	}
	for _, name := range names {
		other, err := strconv.Atoi(name)
		if err != nil || other == pid {
			continue
		}
		if sid, err := unix.Getsid(other); err == nil && sid == pid {
			return false
		}
		if pg, err := unix.Getpgid(other); err == nil && pg == pid {
			return false
		}
	}
	return true
}

// treeOf returns the processes of the tree led by pid that procs shows:
// every descendant of pid by parent links, and every member of the
// session or process group pid leads (which may have been re-parented),
// each started no earlier than start. pid itself is not included.
func treeOf(procs []procStat, pid int, start uint64) []procStat {
	children := map[int][]procStat{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	seen := map[int]bool{pid: true}
	var out []procStat
	var add func(p procStat)
	add = func(p procStat) {
		if seen[p.pid] || p.start < start || p.dead {
			return
		}
		seen[p.pid] = true
		out = append(out, p)
		for _, c := range children[p.pid] {
			add(c)
		}
	}
	for _, c := range children[pid] {
		add(c)
	}
	for _, p := range procs {
		if p.sid == pid || p.pgrp == pid {
			add(p)
		}
	}
	return out
}

// member is a process of a command's tree held by a pidfd, so a signal
// never reaches a later process that got the same pid. fd is -1 on a
// kernel without pidfds (< 5.3), where the pid is signalled directly.
type member struct {
	pid int
	fd  int
}

// holdTree opens a pidfd for each process of the tree led by pid (see
// treeOf) whose stat still matches after the pidfd is open. The caller
// signals them with signalTree and closes them with releaseTree.
func holdTree(pid int, start uint64) []member {
	procs, err := allProcs()
	if err != nil {
		return nil
	}
	var out []member
	for _, p := range treeOf(procs, pid, start) {
		fd, err := unix.PidfdOpen(p.pid, 0)
		if errors.Is(err, unix.ENOSYS) {
			out = append(out, member{pid: p.pid, fd: -1})
			continue
		}
		if err != nil {
			continue // gone already
		}
		if now, err := readStat(p.pid); err != nil || now.start != p.start {
			unix.Close(fd)
			continue
		}
		out = append(out, member{pid: p.pid, fd: fd})
	}
	return out
}

// signalTree sends sig to each member still alive.
func signalTree(ms []member, sig unix.Signal) {
	for _, m := range ms {
		if m.fd < 0 {
			_ = unix.Kill(m.pid, sig)
			continue
		}
		_ = unix.PidfdSendSignal(m.fd, sig, nil, 0)
	}
}

// releaseTree closes the members' pidfds.
func releaseTree(ms []member) {
	for _, m := range ms {
		if m.fd >= 0 {
			unix.Close(m.fd)
		}
	}
}

// KillTree kills, with SIGKILL, what is left on this host of the tree of
// a command whose leader was process pid, started at start (clock ticks
// after boot, as ProcStart returns) during boot boot (as BootID returns):
// the leader if it still is that process, its descendants, and the
// members of its session and process group started no earlier than it,
// re-parented or not. It is how a worker kills the command of a worker
// that died on this host. It kills nothing when boot is not this host's
// boot or when pid now names a later process: the pid was recycled. It
// returns how many processes it signalled, and an error only if /proc
// cannot be read. Each process is signalled through a pidfd taken while
// its start time still matched. It repeats until a pass finds nothing,
// so a member that forks while it is being killed is found on the next
// pass; a process that left the session, the group and the leader's
// descendants before the leader died is out of reach (a cgroup, when the
// command has one, is the handle for those: see KillCgroup).
func KillTree(pid int, start uint64, boot string) (int, error) {
	if pid <= 0 || boot == "" || boot != BootID() {
		return 0, nil
	}
	if st, err := readStat(pid); err == nil && st.start != start {
		return 0, nil // recycled: not the command's leader
	}
	killed := 0
	for pass := 0; pass < 10; pass++ {
		if _, err := os.Stat("/proc"); err != nil {
			return killed, fmt.Errorf("kill tree %d: %w", pid, err)
		}
		var ms []member
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			if st, err := readStat(pid); err == nil && st.start == start && !st.dead {
				ms = append(ms, member{pid: pid, fd: fd})
			} else {
				unix.Close(fd)
			}
		}
		ms = append(ms, holdTree(pid, start)...)
		if len(ms) == 0 {
			return killed, nil
		}
		signalTree(ms, unix.SIGKILL)
		releaseTree(ms)
		killed += len(ms)
	}
	return killed, nil
}

// KillCgroup kills every process of the cgroup v2 directory dir (an
// absolute path under the cgroup2 mount): with cgroup.kill (Linux 5.14)
// when there is one, else by SIGKILL to each pid in cgroup.procs, until it
// is empty, and then removes dir. It returns how many processes the cgroup
// held, and an error if dir is not a cgroup or cannot be read.
func KillCgroup(dir string) (int, error) {
	procs := func() ([]int, error) {
		b, err := os.ReadFile(dir + "/cgroup.procs")
		if err != nil {
			return nil, err
		}
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return pids, nil
	}
	pids, err := procs()
	if err != nil {
		return 0, fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	n := len(pids)
	defer func() {
		// Empty now, or soon: a dead worker's cgroup is removed by whoever
		// killed what was in it.
		for range cgRetries {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return // gone, or never to be ours to remove
			}
			time.Sleep(cgRound)
		}
	}()
	if n == 0 {
		return 0, nil
	}
	if err := os.WriteFile(dir+"/cgroup.kill", []byte("1"), 0); err == nil {
		return n, nil
	}
	for pass := 0; pass < 10 && len(pids) > 0; pass++ {
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL) // a member of the cgroup now: not recycled
		}
		if pids, err = procs(); err != nil {
			return n, fmt.Errorf("kill cgroup %s: %w", dir, err)
		}
	}
	return n, nil
}

// newCgroup2Handle makes an empty cgroup v2 directory name under parent
// with no controller and no limit: only a handle on the command's whole
// tree, which every process the command starts stays in (setsid or not),
// so the tree can be listed and killed as one, by this worker at the exit
// or by another after this worker died (KillCgroup on Process.Cgroup).
// It needs write access to parent, which root has on a cgroup2 mount.
func newCgroup2Handle(parent, name string) (*cgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	cg := &cgroup{v2: true, dirs: []string{dir}, fd: -1}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		cg.remove()
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	cg.fd = fd
	return cg, nil
}

// Cgroup returns the directory of the cgroup that holds the command's
// whole tree from its first instruction (a cgroup v2, entered by clone3),
// or "" when it has none. Another worker on this host kills what is left
// of the tree with KillCgroup(dir) if this one dies.
func (p *Process) Cgroup() string {
	if p.cg == nil || !p.cg.v2 {
		return ""
	}
	return p.cg.dirs[0]
}
