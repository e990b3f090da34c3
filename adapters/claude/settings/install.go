package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// UserSettings returns the user's settings file, ~/.claude/settings.json
// (UserPath); its error, when the home directory is not known, says to
// name a project instead.
func UserSettings() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w (use --project DIR)", err)
	}
	return UserPath(home), nil
}

// InstallWires returns the hook commands `hooks install` writes: the
// recorder (RecorderCommand) and, when gated, the gated hook with budget
// (GateCommand) and its timeout (GateTimeout). data is the data dir
// given to logbook ("" for none); socket, when not "", is the system
// socket of a serve in system mode logbook was told to use (--socket or
// $LOGBOOK_SOCKET), which both commands then name with --socket instead
// of any data dir, so a Claude Code started without $LOGBOOK_SOCKET still
// reaches that serve.
func InstallWires(data, socket string, gated bool, budget time.Duration) Wires {
	arg := dataArg(data)
	if socket != "" {
		arg = socketArg(socket)
	}
	w := Wires{Recorder: recorderCommand(arg)}
	if gated {
		w.Gate = gateCommand(arg, budget)
		w.Timeout = GateTimeout(budget)
	}
	return w
}

// socketArg returns " --socket PATH" for the system socket at socket, as
// an absolute path.
func socketArg(socket string) string {
	if abs, err := filepath.Abs(socket); err == nil {
		socket = abs
	}
	return " --socket " + quoteWord(socket)
}

// GateCommand returns the command line of the gated hook: this binary's
// `hook claude --gate --budget B`, by name when PATH finds logbook, else
// by its absolute path, with --data data when data is not "". It is
// logbook itself, not logbook-hook, which would only hand the call over
// to it.
func GateCommand(data string, budget time.Duration) string {
	return gateCommand(dataArg(data), budget)
}

// gateCommand is GateCommand with arg (" --data DIR", " --socket PATH"
// or "") after "hook".
func gateCommand(arg string, budget time.Duration) string {
	cmd := "logbook"
	if self, _ := os.Executable(); !lookPathIs("logbook") && self != "" {
		cmd = quoteWord(self)
	}
	return cmd + " hook" + arg + " claude --gate --budget " + BudgetFlag(budget)
}

// BudgetFlag returns budget as a --budget value: whole seconds as "90s"
// (not 1m30s), anything finer as time.Duration prints it (1.5s, 250ms).
func BudgetFlag(budget time.Duration) string {
	if budget%time.Second == 0 {
		return fmt.Sprintf("%ds", int(budget.Seconds()))
	}
	return budget.String()
}

// dataArg returns " --data DIR" for data dir data as an absolute path,
// or "" when data is "": the hook then finds the default data dir as
// logbook does.
func dataArg(data string) string {
	if data != "" {
		if abs, err := filepath.Abs(data); err == nil {
			return " --data " + quoteWord(abs)
		}
	}
	return ""
}

// RecorderCommand returns the command line the recording hooks run:
// logbook-hook when it is on PATH or beside this binary, else this
// binary's `hook claude`, by name when PATH finds it, else by its
// absolute path; with --data data when data is not "".
func RecorderCommand(data string) string {
	return recorderCommand(dataArg(data))
}

// recorderCommand is RecorderCommand with arg (" --data DIR", " --socket
// PATH" or "") before "claude".
func recorderCommand(arg string) string {
	var cmd string
	self, _ := os.Executable()
	switch {
	case lookPathIs("logbook-hook"):
		cmd = "logbook-hook claude"
	case self != "" && isExecutable(filepath.Join(filepath.Dir(self), "logbook-hook")):
		cmd = quoteWord(filepath.Join(filepath.Dir(self), "logbook-hook")) + " claude"
	case lookPathIs("logbook"):
		cmd = "logbook hook claude"
	case self != "":
		cmd = quoteWord(self) + " hook claude"
	default:
		cmd = "logbook hook claude"
	}
	if arg != "" {
		cmd = strings.Replace(cmd, " claude", arg+" claude", 1)
	}
	return cmd
}

func lookPathIs(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// quoteWord quotes s for sh when it holds anything but safe characters.
func quoteWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Change is one edit of a settings file, planned by Plan and made by
// Write.
type Change struct {
	Path    string // the settings file named
	Target  string // the file written: Path, or where its symlinks lead
	Old     []byte // what the file holds; nil when it does not exist
	New     []byte // what the edit makes of it
	Existed bool   // whether the file exists
	install bool
}

// Plan reads the settings file path (through its symlinks, Target) and
// returns the edit that wires it to wires (Edit, with self); the zero
// Wires takes Logbook's hooks out. It writes nothing. Errors name path:
// a file that cannot be read, or is not Claude Code's settings.
func Plan(path string, wires Wires, self string) (*Change, error) {
	target, err := Target(path)
	if err != nil {
		return nil, err
	}
	old, err := ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	c := &Change{Path: path, Target: target, Old: old, Existed: err == nil, install: wires.Recorder != ""}
	if c.New, err = Edit(old, wires, self); err != nil {
		return nil, fmt.Errorf("%s: %w; fix it or move it aside, then run this again", path, err)
	}
	return c, nil
}

// Unchanged reports whether the edit changes nothing: the same bytes,
// or hooks taken out of a file that does not exist.
func (c *Change) Unchanged() bool {
	return bytes.Equal(c.Old, c.New) || (!c.Existed && !c.install)
}

// Write backs the old file up beside it (WriteBackup), when it exists,
// and writes the new one whole over Target with the old one's mode
// (0644 for a new file), so a symlink to it stays a link. backup is the
// backup's path, "" for none; it is set even when the write then fails.
func (c *Change) Write() (backup string, err error) {
	mode := fs.FileMode(0o644)
	if c.Existed {
		st, err := os.Stat(c.Target)
		if err != nil {
			return "", err
		}
		mode = st.Mode().Perm()
		if backup, err = WriteBackup(c.Path, c.Old, mode); err != nil {
			return "", fmt.Errorf("back up %s: %w", c.Path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.Target), 0o755); err != nil {
		return backup, err
	}
	if err := datadir.WriteFileAtomic(c.Target, c.New, mode); err != nil {
		return backup, fmt.Errorf("write %s: %w", c.Path, err)
	}
	return backup, nil
}

// WriteDiff prints the change as a unified diff without hunk headers:
// "--- path" and "+++ path", then " " kept, "-" removed, "+" added lines,
// with at most two kept lines around each change and "@@" for those left
// out.
func (c *Change) WriteDiff(w io.Writer) {
	fmt.Fprintf(w, "--- %s\n+++ %s\n", c.Path, c.Path)
	x, y := splitLines(string(c.Old)), splitLines(string(c.New))
	// The longest common subsequence, by dynamic programming: settings
	// files are small.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			// A removed line before the added ones, as diff(1) prints
			// a change.
			ops = append(ops, line{'-', x[i]})
			i++
		default:
			ops = append(ops, line{'+', y[j]})
			j++
		}
	}
	const ctx = 2
	near := func(k int) bool {
		for d := max(0, k-ctx); d <= min(len(ops)-1, k+ctx); d++ {
			if ops[d].op != ' ' {
				return true
			}
		}
		return false
	}
	skipped := false
	for k, l := range ops {
		if l.op == ' ' && !near(k) {
			if !skipped {
				fmt.Fprintln(w, "@@")
			}
			skipped = true
			continue
		}
		skipped = false
		fmt.Fprintf(w, "%c%s\n", l.op, l.text)
	}
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
