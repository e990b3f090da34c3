package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// RequestID returns the id of a command requested for session: id as
// given; else, with key, the id derived from session and key (KeyID);
// else a new ULID. id and key together, an id that is not valid
// (events.ValidID), or one given that begins with '-' (which every
// command naming it, `logbook command output ID` first, would read as a
// flag), is an error saying which flag (--id, --key) is wrong.
func RequestID(session, id, key string) (string, error) {
	switch {
	case key != "" && id != "":
		return "", errors.New("--id and --key exclude each other")
	case strings.HasPrefix(id, "-"):
		return "", fmt.Errorf("--id %q: an id begins with a letter, digit or '_', not '-', which `logbook command output ID` would read as a flag", id)
	case key != "":
		id = KeyID(session, key)
	case id == "":
		id = ulid.Make().String()
	}
	if err := events.ValidID(id); err != nil {
		return "", fmt.Errorf("--id: %w", err)
	}
	return id, nil
}

// CheckElevation refuses an elevation asked for without a justification
// (blank), or with a mode other than events.ModeFullAccess, and a
// justification given without elevation; mode "" is the session's.
func CheckElevation(elevate bool, justification, mode string) error {
	if elevate && (strings.TrimSpace(justification) == "" || mode != "" && mode != events.ModeFullAccess) {
		return errors.New("--elevate needs --justification (not blank) and no --mode but full_access")
	}
	if !elevate && justification != "" {
		return errors.New("--justification is for --elevate: why the command needs full_access")
	}
	return nil
}

// CheckMode refuses a mode a command cannot run in: one of
// events.ModeReadOnly, ModeWorkspaceWrite and ModeFullAccess, or ""
// (the session's), is taken.
func CheckMode(mode string) error {
	switch mode {
	case "", events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess:
		return nil
	}
	return fmt.Errorf("unknown mode %q: want %s, %s or %s", mode, events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess)
}

// CheckWorkspace reports, before a request is appended for good, a
// workspace ws (absolute) that does not exist or, symlinks resolved, is
// not a directory: the sandbox would refuse it. Its errors begin
// "workspace <ws>".
func CheckWorkspace(ws string) error {
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("workspace %s does not exist", ws)
		}
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace %s is not a directory", ws)
	}
	return nil
}

// CheckCwd reports why cwd cannot be the working directory of a
// command in workspace ws (absolute), in the words `logbook exec` and the
// workers both refuse it with: it names, or leads through a symbolic link
// into, /proc or /dev/fd (CheckMagicLinks); it lies outside ws, symbolic
// links followed where they resolve; or, with exists, it does not exist
// or is not a directory. cwd "" is ws itself: nil. A relative cwd is
// taken from ws, and every error names the directory as "cwd <ws/cwd>"
// (an absolute cwd as given).
// A requester whose workspace is not made yet (one still initializing)
// checks without exists, leaving that to the worker.
func CheckCwd(ws, cwd string, exists bool) error {
	if cwd == "" {
		return nil
	}
	if !filepath.IsAbs(ws) {
		return fmt.Errorf("workspace %q is not an absolute path", ws)
	}
	dir := cwd // an absolute one as given: the name a person wrote
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	if err := CheckMagicLinks(dir); err != nil {
		return fmt.Errorf("cwd %w", err)
	}
	if err := checkCwd(ws, dir, true); err != nil {
		return err
	}
	if !exists {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cwd %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("cwd %s: %w", dir, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Errorf("cwd %s is not a directory", dir)
	}
	return nil
}

// CwdWithin returns cwd as a request for a command in workspace ws
// (absolute) names it: as given when it lies in ws by name (cleaned, a
// relative cwd taken from ws), else, when it reaches a directory in ws
// through symbolic links (its own or ws's), that directory relative to
// ws ("." for ws itself), so that the request passes CheckRequest, which
// compares names only (a requester may be on another host than the
// directories), and records where the command runs rather than a link
// that may point elsewhere later. A cwd that reaches no directory in ws,
// or that does not resolve, is returned as given, for CheckCwd to refuse.
func CwdWithin(ws, cwd string) string {
	if cwd == "" || checkCwd(ws, cwd, false) == nil {
		return cwd
	}
	dir := cwd
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	rws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return cwd
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return cwd
	}
	rel, err := filepath.Rel(rws, rdir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return cwd
	}
	return rel
}

// ExitStatus maps an ended command to the exit status of the process
// that waited for it, and the error that says why when it is not 0: its
// own exit status (128 + the signal number when a signal killed it), 127
// for a command not found, 126 for another refusal or for a command
// that never ran (command.State.NotRun), 1 for an abandoned or evicted
// one. A command not ended is code 0 with an error naming its status.
func ExitStatus(st command.State) (code int, err error) {
	switch st.Status {
	case command.StatusExited:
		if st.NotRun != "" {
			return 126, fmt.Errorf("command %s did not run: %s", st.ID, st.NotRun)
		}
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		if st.Signal != "" {
			code = 128 + int(unix.SignalNum(st.Signal))
		}
		if code == 0 {
			return 0, nil
		}
		what := fmt.Sprintf("exit status %d", code)
		if st.Signal != "" {
			what = "killed by " + st.Signal
		}
		return code, fmt.Errorf("command %s: %s", st.ID, what)
	case command.StatusRefused:
		code = 126
		if strings.HasPrefix(st.EndReason, "not found") {
			code = 127
		}
		return code, fmt.Errorf("command %s refused: %s", st.ID, strings.TrimPrefix(st.EndReason, "refused: "))
	case command.StatusAbandoned:
		return 1, fmt.Errorf("command %s abandoned: %s (worker %s)", st.ID, st.EndReason, st.Worker)
	case command.StatusEvicted:
		return 1, fmt.Errorf("command %s was evicted by %s before it started", st.ID, st.EvictedBy)
	}
	return 0, fmt.Errorf("command %s: status %s", st.ID, st.Status)
}

// magicRoots are the trees whose symbolic links name the process that
// resolves them (/proc/self/cwd, /proc/<pid>/root, /dev/fd/N, which is
// /proc/self/fd/N): a path through one means one directory to the
// client that checks it and another to the worker that runs in it.
var magicRoots = []string{"/proc", "/dev/fd"}

// CheckMagicLinks returns an error when path p (absolute) is, or reaches
// through a symbolic link, a path in /proc or /dev/fd (/proc/self/cwd,
// /proc/<pid>/root/…, /dev/fd/N, /dev/stdin): those name whatever the
// resolving process has there, so the directory `logbook exec` checked
// and the one a worker would run in differ. Its errors name p and the
// link that leads there; nil for a path that does not exist (that is
// CheckWorkspace's to report).
func CheckMagicLinks(p string) error {
	if !filepath.IsAbs(p) {
		return nil
	}
	magic := func(q string) bool {
		for _, r := range magicRoots {
			if q == r || strings.HasPrefix(q, r+"/") {
				return true
			}
		}
		return false
	}
	refuse := func(via string) error {
		if via == "" {
			return fmt.Errorf("%s lies in /proc or /dev/fd, whose paths name the process that resolves them, not one directory: give the directory's own path", p)
		}
		return fmt.Errorf("%s leads through %s into /proc or /dev/fd, whose paths name the process that resolves them, not one directory: give the directory's own path", p, via)
	}
	if magic(filepath.Clean(p)) {
		return refuse("")
	}
	// Resolve p one part at a time, as the kernel would, looking at
	// where each symbolic link leads.
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur, via := "/", ""
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		if magic(next) {
			return refuse(via)
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return nil // ELOOP: resolving it fails anyway
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil
		}
		via = next
		if filepath.IsAbs(target) {
			cur = "/"
		}
		t := filepath.Clean(filepath.Join(cur, target))
		if magic(t) {
			return refuse(next)
		}
		rest = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), rest...)
	}
	return nil
}
