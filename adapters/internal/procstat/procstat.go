// Package procstat reads the name and state of a process from Linux's
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
)

// Stat is what Read takes of /proc/<pid>/stat.
type Stat struct {
	Comm  string // the executable's name, at most 15 bytes
	State byte   // 'R', 'S', 'D', 'T' (stopped), 't' (traced), 'Z', …
}

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
	return Stat{Comm: string(b[open+1 : end]), State: b[end+2]}, nil
}
