package hookspool

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/events"
)

// Process detection follows Linux procfs: /proc/<pid>/stat (proc(5):
// field 2 comm in parentheses, field 4 ppid, field 22 starttime in clock
// ticks after boot) and /proc/sys/kernel/random/boot_id.

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
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may itself hold spaces and
	// parentheses: it ends at the last ')'.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[j+1:]))
	const ppidAt, startAt = 4 - 3, 22 - 3 // fields after the name start at field 3
	if len(f) <= startAt {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err := strconv.Atoi(f[ppidAt])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: ppid: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[startAt], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return procStat{comm: string(b[i+1 : j]), state: f[0], ppid: ppid, start: start}, nil
}

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
// are stamped on the result.
func AgentProcess(pid int, host, boot string) (*events.Process, error) {
	var st procStat
	if pid == unix.Getpid() {
		st.ppid = unix.Getppid() // what its stat would say, without reading it
	} else {
		var err error
		if st, err = readStat(pid); err != nil {
			return nil, fmt.Errorf("find agent process: %w", err)
		}
	}
	var agent *events.Process
	for range 64 {
		if st.ppid <= 1 {
			break
		}
		cur := st.ppid
		var err error
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
			agent = &events.Process{PID: cur, Start: st.start, Host: host, Boot: boot, Comm: st.comm}
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
// another host or its boot cannot be compared; alive otherwise.
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
