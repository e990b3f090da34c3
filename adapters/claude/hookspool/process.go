package hookspool

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/events"
)

// Process detection follows Linux procfs: /proc/<pid>/stat (proc(5):
// field 2 comm in parentheses, field 4 ppid, field 22 starttime in clock
// ticks after boot), /proc/sys/kernel/random/boot_id, and for the PID
// namespace /proc/self/ns/pid and the NSpid line of /proc/self/status
// (pid_namespaces(7)).

// passThrough reports whether comm names a program that stands between
// an agent and the hook it runs without being the agent: a shell (Claude
// Code runs a hook's command through one), a wrapper people put in front
// of a command, or logbook's own hook programs. A switch, not a map: no package init builds it in
// every hook process.
func passThrough(comm string) bool {
	switch comm {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "tcsh", "csh", "busybox",
		"timeout", "env", "nice", "nohup", "stdbuf", "setsid", "ionice", "taskset", "chrt", "flock", "time",
		"sudo", "doas", "su", "runuser",
		// logbook-hook hands what it does not handle to logbook, whose
		// parent it then is: neither is ever the agent.
		"logbook-hook", "logbook":
		return true
	}
	return false
}

// procStat is what AgentProcess reads of one process.
type procStat struct {
	comm  string
	state string // field 3: R, S, D, Z (exited, not yet reaped), …
	ppid  int
	start uint64
}

// maxProcFile is the most readProc reads of a /proc file: a stat line
// (52 numbers and a name of at most 64 bytes) and a boot id are far
// shorter.
const maxProcFile = 4 << 10

// readProc returns the contents of the /proc file at path, at most
// maxProcFile bytes. It calls the system directly, as ReadRegular does:
// no network poller for a process that reads /proc and exits. Errors are
// *fs.PathError naming path.
func readProc(path string) ([]byte, error) {
	fd, err := openFile(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readFD(fd, path, 512, maxProcFile)
}

// readStat reads /proc/<pid>/stat. It fails if there is no such process.
func readStat(pid int) (procStat, error) {
	return readStatAt("/proc/" + strconv.Itoa(pid) + "/stat")
}

// readStatAt reads the stat file at path, /proc/<pid>/stat or
// /proc/self/stat. Errors name path.
func readStatAt(path string) (procStat, error) {
	b, err := readProc(path)
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may itself hold spaces and
	// parentheses: it ends at the last ')'.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return procStat{}, fmt.Errorf("%s: no command name", path)
	}
	f := strings.Fields(string(b[j+1:]))
	const ppidAt, startAt = 4 - 3, 22 - 3 // fields after the name start at field 3
	if len(f) <= startAt {
		return procStat{}, fmt.Errorf("%s: %d fields", path, len(f)+2)
	}
	ppid, err := strconv.Atoi(f[ppidAt])
	if err != nil {
		return procStat{}, fmt.Errorf("%s: ppid: %w", path, err)
	}
	start, err := strconv.ParseUint(f[startAt], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%s: starttime: %w", path, err)
	}
	return procStat{comm: string(b[i+1 : j]), state: f[0], ppid: ppid, start: start}, nil
}

// maxStatus is the most PidNS reads of /proc/self/status: its Groups
// line, before NSpid, may be long.
const maxStatus = 64 << 10

// PidNS returns the PID namespace whose pids this process's /proc
// shows, as `readlink /proc/self/ns/pid` names it, e.g.
// "pid:[4026531836]": the namespace that the pids AgentProcess and
// CheckProcess read from /proc are of. It is "" when it cannot say:
// when /proc is another namespace's (one above this process's, where
// the NSpid line of /proc/self/status lists more than its own pid, or
// one it is not in, where there is no /proc/self), or cannot be read.
// A user namespace changes nothing: a namespace's name is the same
// seen from any.
func PidNS() string {
	const path = "/proc/self/status"
	fd, err := openFile(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return ""
	}
	b, err := readFD(fd, path, 2<<10, maxStatus)
	unix.Close(fd)
	if err != nil || !ownNSpid(b, unix.Getpid()) {
		return ""
	}
	var buf [64]byte
	n, err := unix.Readlink("/proc/self/ns/pid", buf[:])
	if err != nil || n == len(buf) || !bytes.HasPrefix(buf[:n], []byte("pid:[")) {
		return ""
	}
	return string(buf[:n])
}

// ownNSpid reports whether status, the contents of /proc/self/status,
// shows the process whose own pid is pid by that pid alone: its NSpid
// line lists its pid in each PID namespace from the one /proc belongs
// to down to its own, so a single entry equal to pid means /proc is its
// own namespace's. false without an NSpid line (Linux before 4.1).
func ownNSpid(status []byte, pid int) bool {
	for line := range bytes.SplitSeq(status, []byte{'\n'}) {
		if f, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			pids := strings.Fields(string(f))
			return len(pids) == 1 && pids[0] == strconv.Itoa(pid)
		}
	}
	return false
}

// ownPidNS is PidNS of this process, read once: a process's PID
// namespace never changes.
var ownPidNS = sync.OnceValue(PidNS)

// BootID returns the host's boot id, "" when unknown.
func BootID() string {
	b, err := readProc("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// AgentProcess returns the agent process that process pid runs under:
// the nearest ancestor of pid (pid itself excluded) that is not a shell
// or a command wrapper such as timeout or env. For a hook, pid is its own
// process id: Claude Code runs the hook's command through a shell, so the
// shell is skipped and Claude Code's own process is found. Its Chain is
// that process and each ancestor above it that is no shell or wrapper
// either, nearest first, up to and excluding pid 1 (at most
// events.MaxChain): when a program between the agent and the hook (a
// dispatcher script that runs the hook and exits) is found first, the
// session takes the agent from the chains its hooks share. A chain is
// cut where an ancestor above the process found cannot be read (it
// exited meanwhile). It returns nil and no error when the walk reaches
// init (pid 1) or the chain of ancestors is longer than 64 processes
// before one is found; an error when /proc cannot be read. host and boot
// are stamped on the result, and the PID namespace its pids are of
// (PidNS), events.PidNSUnknown when /proc is not this process's own
// namespace's: then pid, when it is this process's, is read as
// /proc/self, and the chain is /proc's pids, which no checker looks up.
func AgentProcess(pid int, host, boot string) (*events.Process, error) {
	ns := PidNS()
	var st procStat
	var err error
	switch {
	case pid == unix.Getpid() && ns != "":
		st.ppid = unix.Getppid() // what its stat would say, without reading it
	case pid == unix.Getpid():
		// getppid numbers the parent in this process's namespace, /proc
		// in another: the walk goes by /proc's numbers throughout.
		if st, err = readStatAt("/proc/self/stat"); err != nil {
			return nil, fmt.Errorf("find agent process: %w", err)
		}
	default:
		if st, err = readStat(pid); err != nil {
			return nil, fmt.Errorf("find agent process: %w", err)
		}
	}
	if ns == "" {
		ns = events.PidNSUnknown
	}
	var agent *events.Process
	for range 64 {
		if st.ppid <= 1 {
			break
		}
		cur := st.ppid
		if st, err = readStat(cur); err != nil {
			if agent != nil {
				break // an ancestor gone since: the chain up to it
			}
			return nil, fmt.Errorf("find agent process: %w", err)
		}
		if passThrough(st.comm) {
			continue
		}
		if agent == nil {
			agent = &events.Process{PID: cur, Start: st.start, Host: host, Boot: boot, PidNS: ns, Comm: st.comm}
		}
		agent.Chain = append(agent.Chain, events.ProcessRef{PID: cur, Start: st.start, Comm: st.comm})
		if len(agent.Chain) == events.MaxChain {
			break
		}
	}
	return agent, nil
}

// CheckProcess reports whether process p still runs, checked on this
// host, whose name is host and boot id boot: gone when the host has
// booted since, when no process has p's pid, or when the one that has it
// started at another time (the pid was reused); unknown when p ran on
// another host, its boot cannot be compared, or its pid is of a PID
// namespace other than the one this process's /proc shows (PidNS; a pid
// there names another process here, if any); alive otherwise. A process
// recorded without its namespace (Process.PidNS "") is looked up here.
func CheckProcess(p events.Process, host, boot string) events.ProcessCheck {
	c := events.ProcessCheck{Process: p, Result: events.ProcessUnknown}
	switch {
	case p.Host != host:
		c.Detail = fmt.Sprintf("it ran on host %q, this is %q", p.Host, host)
		return c
	case p.Boot == "" || boot == "":
		c.Detail = "boot id unknown"
		return c
	case p.Boot != boot:
		c.Result, c.Detail = events.ProcessGone, fmt.Sprintf("the host has booted since (boot id %s, was %s)", boot, p.Boot)
		return c
	case p.PidNS != "" && p.PidNS != ownPidNS():
		own := ownPidNS()
		if own == "" {
			own = "unknown"
		}
		c.Detail = fmt.Sprintf("its pid is of PID namespace %s, this /proc's is %s", p.PidNS, own)
		return c
	}
	st, err := readStat(p.PID)
	switch {
	case os.IsNotExist(err):
		c.Result, c.Detail = events.ProcessGone, fmt.Sprintf("no /proc/%d", p.PID)
	case err != nil:
		c.Detail = err.Error()
	case st.start == p.Start && st.state == "Z":
		c.Result, c.Detail = events.ProcessGone, fmt.Sprintf("pid %d has exited (not yet reaped)", p.PID)
	case st.start != p.Start:
		c.Result, c.Detail = events.ProcessGone, fmt.Sprintf("pid %d now belongs to a process started at tick %d, not %d", p.PID, st.start, p.Start)
	default:
		c.Result = events.ProcessAlive
	}
	return c
}
