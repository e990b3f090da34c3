// Package procstat reads the name, state and flags of a process from Linux's
// /proc/<pid>/stat (proc(5), Linux 6.x): "pid (comm) state ppid …",
// where comm, the executable's name cut to 15 bytes, may itself hold
// spaces and parentheses and so ends at the line's last ')'. It imports
// the standard library only, for the small binaries (logbook-exec) that
// link it.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is what Read takes of /proc/<pid>/stat.
type Stat struct {
	Comm  string // the executable's name, at most 15 bytes
	State byte   // 'R', 'S', 'D', 'T' (stopped), 't' (traced), 'Z', 'X', …
	Flags uint64 // the kernel's PF_* flags of the process (field 9)
}

// PFExiting is the flag of Stat.Flags the kernel sets on a process that
// is exiting (PF_EXITING, include/linux/sched.h).
const PFExiting = 0x4

// Ending reports whether the process is on its way out: a zombie, dead
// (being reaped), or exiting.
func (s Stat) Ending() bool { return s.State == 'Z' || s.State == 'X' || s.Flags&PFExiting != 0 }

// Stopped reports whether the process is stopped by a signal (SIGSTOP,
// SIGTSTP) or by a debugger: it runs nothing until continued.
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// Read returns process pid's Stat. Errors: os.ReadFile's (fs.ErrNotExist
// when no such process is visible), or one naming the file when its
// text is not a stat line.
func Read(pid int) (Stat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return Stat{}, fmt.Errorf("%s: not a stat line", path)
	}
	// Fields 3 on (state ppid pgrp session tty_nr tpgid flags …) follow
	// the name.
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 7 {
		return Stat{}, fmt.Errorf("%s: %d fields", path, len(f)+2)
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: flags: %w", path, err)
	}
	return Stat{Comm: string(b[open+1 : end]), State: b[end+2], Flags: flags}, nil
}
