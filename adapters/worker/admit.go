package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// systemDirs are directories a restricted or unrestricted command must not
// take as its workspace, nor anything inside the first group.
var (
	systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr"}
	systemDirs  = []string{"/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp", "/var", "/var/tmp", "/var/lib"}
)

// CheckSystem returns an error naming ws (clean, absolute, symbolic
// links resolved) when it is a system directory no command may take as
// its workspace, in any mode: `/`, one of systemDirs, or inside one of
// systemTrees; nil otherwise. `logbook exec` asks it before anything is
// on the log, as the workers do at admission.
func CheckSystem(ws string) error {
	for _, d := range systemTrees {
		if ws == d || strings.HasPrefix(ws, d+"/") {
			return fmt.Errorf("workspace %s is a system directory", ws)
		}
	}
	for _, d := range systemDirs {
		if ws == d {
			return fmt.Errorf("workspace %s is a system directory", ws)
		}
	}
	return nil
}

// admission returns why a command asking for mode in workspace ws (clean,
// absolute, symbolic links resolved) must not run for session sess, or ""
// if it may. by is the requester (events.CommandRequested.RequestedBy): a
// person's own request ("person:<user>@<host>", what `logbook exec` sends)
// is that person's authorization and may ask for more than the session's
// permission mode, as a person approving a permission prompt may; any other
// requester (an agent, a harness) is held to the mode. The workspace checks
// hold for everyone. home is the worker's home directory ("" if unknown);
// cwdHere reports whether the session's working directory exists on this
// host (a session of another host is not held to it). It decides from
// state alone.
func admission(sess session.State, by, mode, elevation, ws, home string, cwdHere bool) string {
	if sess.Ver == 0 {
		return fmt.Sprintf("refused: session %s does not exist, so its permission mode is unknown", sess.ID)
	}
	if elevation != "" {
		// One command elevated by the gate: its verdict must allow
		// full_access at the session's mode revision of now.
		r, ok := sess.DecidedReview(elevation)
		switch {
		case !ok:
			return fmt.Sprintf("refused: elevation review %s is not among session %s's verdicts", elevation, sess.ID)
		case r.Verdict != events.VerdictAllow || r.Grant != mode:
			return fmt.Sprintf("refused: elevation review %s decided %s (grant %q), not an allow of %s", elevation, r.Verdict, r.Grant, mode)
		case sess.Mode != events.ModeAuto:
			return fmt.Sprintf("refused: elevation needs session %s in auto mode; it is in %s now", sess.ID, sess.Mode)
		case r.Revision != sess.ModeRevision:
			return fmt.Sprintf("refused: elevation review %s was granted at mode revision %d; session %s is at revision %d now", elevation, r.Revision, sess.ID, sess.ModeRevision)
		}
	} else if events.ModeRank(mode) > events.ModeRank(sess.Mode) && !IsPerson(by) {
		have := sess.Mode
		if have == "" {
			have = "unknown (workspace_write at most)"
		}
		return fmt.Sprintf("refused: mode %s is wider than session %s's permission mode %s (revision %d)", mode, sess.ID, have, sess.ModeRevision)
	}
	if err := CheckSystem(ws); err != nil {
		return "refused: " + err.Error()
	}
	if home != "" && (ws == home || strings.HasPrefix(home, ws+"/")) {
		return fmt.Sprintf("refused: workspace %s is the home directory %s or holds it", ws, home)
	}
	if cwd := filepath.Clean(sess.Cwd); sess.Cwd != "" && cwdHere && !within(ws, cwd) {
		return fmt.Sprintf("refused: workspace %s is outside session %s's directory %s", ws, sess.ID, cwd)
	}
	return ""
}

// sessionRead is a session's state as read for admission.
type sessionRead struct {
	id  string
	st  session.State
	err error
}

// admit returns why st must not run (a reason for command.refused), or
// "", judged on pre when it is st's session as read while the command
// was claimed, else on the session loaded now, and on hidden when it is
// the check of st's workspace as resolved now (made while the command
// was claimed), else on a check made now. An error means the session
// could not be read.
func (w *Worker) admit(ctx context.Context, st command.State, pre *sessionRead, hidden *hiddenCheck) (string, error) {
	var sess session.State
	if pre != nil && pre.id == st.Session {
		sess = pre.st
	} else {
		var err error
		if sess, err = w.sessions.State(ctx, events.Aggregate{Kind: events.KindSession, ID: st.Session}); err != nil {
			return "", fmt.Errorf("admit %s: load session %s: %w", st.ID, st.Session, err)
		}
	}
	ws := filepath.Clean(st.Workspace) // resolved by take, once for admission and the sandbox
	home, _ := os.UserHomeDir()
	if home != "" {
		if r, err := filepath.EvalSymlinks(home); err == nil {
			home = r
		}
	}
	cwdHere := false
	if sess.Cwd != "" && filepath.IsAbs(sess.Cwd) {
		// The session's directory as the first worker of this host
		// found it bounds every later command: one that has since
		// gone, or resolves elsewhere (another command moved it, or
		// swapped it for a link), does not widen the bound, whichever
		// worker judges it (cwdPin).
		// The pin is the directory's resolved path and its device and
		// inode: a directory moved away and another made at its path is
		// not the one first found either.
		r, err := filepath.EvalSymlinks(sess.Cwd)
		here := ""
		if err != nil {
			r = ""
		} else if id, serr := dirIdentity(r); serr == nil {
			here = r + pinSep + id
		} else {
			r, err = "", serr
		}
		pin, pinned := w.cwdPin(sess.ID, here)
		pinPath, pinID, _ := strings.Cut(pin, pinSep)
		hereID := strings.TrimPrefix(here, r+pinSep)
		switch {
		case pinned && r != pinPath:
			now := "it resolves to " + r
			if r == "" {
				now = fmt.Sprintf("it does not resolve: %v", err)
			}
			return fmt.Sprintf("refused: session %s's directory %s no longer resolves to %s, as when a worker of this host first ran a command of it (now %s)", sess.ID, sess.Cwd, pinPath, now), nil
		case pinned && pinID != "" && hereID != pinID:
			return fmt.Sprintf("refused: session %s's directory %s is no longer the directory a worker of this host first ran a command of it in: it was moved or replaced (device and inode now %s, then %s)", sess.ID, pinPath, hereID, pinID), nil
		case pinned:
			sess.Cwd, cwdHere = r, true
		}
	}
	if why := admission(sess, st.RequestedBy, st.Mode, st.Elevation, ws, home, cwdHere); why != "" {
		return why, nil
	}
	if hidden == nil || hidden.ws != ws {
		hide, keep := w.hidden()
		hidden = &hiddenCheck{ws: ws, err: CheckHidden(ws, hide, keep)}
	}
	if hidden.err != nil {
		return "refused: " + hidden.err.Error(), nil
	}
	return "", nil
}

// IsPerson reports whether actor names a person ("person:<user>@<host>")
// rather than an agent, a harness or a Logbook process.
func IsPerson(actor string) bool { return strings.HasPrefix(actor, "person:") }
