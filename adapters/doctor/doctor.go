// Package doctor checks what Logbook needs on this machine: bubblewrap,
// the binaries on PATH (logbook, logbook-hook, logbook-exec), the reporter beside logbook, the data dir, the
// running server, the sandbox's view, the hook journal, the hooks in
// Claude Code's settings, the agents' data dirs and cgroup v2. Each check returns a Check, ok, warn
// or fail, with what was found and the fix; nothing is changed. The
// binary prints them (`logbook doctor`).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/internal/words"
	"github.com/logbook-dev/logbook/adapters/journal"
	"github.com/logbook-dev/logbook/sandbox"
)

// A Check is one line of `logbook doctor`: what was checked, how it
// stands (OK, Warn, Fail), what was found, and the fix when not ok.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok", "warn" or "fail"
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Check statuses: Fail means a part of Logbook cannot work; Warn, that
// one may not.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Env is what the checks look at beyond the machine itself: the flags
// and the command line's ways to the server.
type Env struct {
	// Bwrap is the bubblewrap executable to check; "" means bwrap in PATH.
	Bwrap string
	// Socket, if not "", is the system socket the command line names
	// (--socket, $LOGBOOK_SOCKET): the server is checked through it, and
	// the caller's own data dir is not (system mode keeps none of the
	// user's). SocketStatus asks the serve behind it for its status.
	Socket       string
	SocketStatus func(ctx context.Context) (api.StatusReply, error)
	// DataDir is the data dir, DataDirErr why it could not be resolved
	// (then no check of it runs).
	DataDir    datadir.Dir
	DataDirErr error
	// NATSURL is --nats-url: a server of one's own, not the data dir's.
	NATSURL string
	// Journal is the path of serve's hook journal in the data dir.
	Journal string
	// SandboxAllow is the default allowlist of restricted commands, as
	// sandbox.Allow prints each; SandboxAllowErr why it is not known.
	SandboxAllow    []string
	SandboxAllowErr error
	// Server is the way to the running server.
	Server Server
	// Witness, if set, is the witness's check; false: none to show.
	Witness func() (Check, bool)
	// Policy, if set, is the check of the data dir's policy.toml (the
	// gate's rules); false: none to show (no such file).
	Policy func() (Check, bool)
	// Configs, if set, are the checks of the data dir's other files a
	// person writes (redact.txt, notify.toml): one each that exists.
	Configs func() []Check
	// Message returns an error's message as a person reads it; nil:
	// err.Error().
	Message func(error) string
}

// Server is how the server check reaches the server serve.json names.
type Server struct {
	// Status asks the running serve for its status.
	Status func(ctx context.Context) (api.StatusReply, error)
	// Unavailable says since when and why a serve's log does not answer.
	Unavailable func(since time.Time, why string) string
	// Open connects to the log; an error, or a Conn that is not remote
	// (the data dir was opened directly), means no server answers. The
	// caller of Open closes the Conn.
	Open func(ctx context.Context) (Conn, error)
}

// Conn is the log as the server check reads it.
type Conn interface {
	// Remote reports whether the log is reached through a server.
	Remote() bool
	// DiskPaused says why serve's appends wait for disk space, "" when
	// they do not.
	DiskPaused(ctx context.Context) string
	// LastSeq returns the log's last sequence.
	LastSeq(ctx context.Context) (uint64, error)
	Close() error
}

// Run runs every check, in the order `logbook doctor` prints them, and
// returns them.
func Run(ctx context.Context, env Env) []Check {
	msg := env.Message
	if msg == nil {
		msg = func(err error) string { return err.Error() }
	}
	out := []Check{Bubblewrap(ctx, env.Bwrap, msg)}
	for _, name := range []string{"logbook", "logbook-hook", "logbook-exec"} {
		out = append(out, OnPath(name))
	}
	self, err := os.Executable()
	if err != nil {
		self = ""
	}
	out = append(out, Reporter(self))
	if env.Socket != "" {
		out = append(out, SocketCheck(ctx, env.Socket, env.SocketStatus, msg), Hooks())
		return append(out, agentDirs()...)
	}
	if env.DataDirErr != nil {
		return append(out, Check{Name: "data dir", Status: Fail, Detail: env.DataDirErr.Error(), Fix: "set --data or $LOGBOOK_DATA"})
	}
	out = append(out, DataDir(env.DataDir, env.DataDir.HasData()), ServerCheck(ctx, env), SandboxView(env))
	if c, ok := Journal(env.DataDir, env.Journal); ok {
		out = append(out, c)
	}
	if env.Witness != nil {
		if c, ok := env.Witness(); ok {
			out = append(out, c)
		}
	}
	if env.Policy != nil {
		if c, ok := env.Policy(); ok {
			out = append(out, c)
		}
	}
	if env.Configs != nil {
		out = append(out, env.Configs()...)
	}
	out = append(out, Hooks())
	out = append(out, agentDirs()...)
	return append(out, Cgroup())
}

// agentDirs returns the checks of Claude Code's and Codex's own folders:
// warn where one is absent (that agent has not run as this user).
func agentDirs() []Check {
	var out []Check
	home, _ := os.UserHomeDir()
	for _, a := range []struct{ name, dir, fix string }{
		{"claude code", filepath.Join(home, ".claude", "projects"), "none needed unless you use Claude Code: it writes its transcripts here once it has run"},
		{"codex", filepath.Join(home, ".codex", "sessions"), "none needed unless you use Codex: it writes its sessions here once it has run"},
	} {
		c := Check{Name: a.name}
		if st, err := os.Stat(a.dir); err == nil && st.IsDir() {
			c.Status, c.Detail = OK, "transcripts in "+a.dir
		} else {
			c.Status, c.Detail, c.Fix = Warn, "no "+a.dir, a.fix
		}
		out = append(out, c)
	}
	return out
}

// SocketCheck checks a serve in system mode through its socket at path:
// that path is a socket, this user is let in, and the serve answers its
// status (within 3 s). Fail, with the fix, otherwise. status asks the
// serve; msg words its errors.
func SocketCheck(ctx context.Context, path string, status func(context.Context) (api.StatusReply, error), msg func(error) string) Check {
	c := Check{Name: "socket"}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = Fail, "no "+path+": no serve in system mode listens there"
		c.Fix = "check --socket and $LOGBOOK_SOCKET against serve's --socket-dir, and that serve runs (systemctl status logbook)"
		return c
	case err != nil:
		c.Status, c.Detail = Fail, msg(err)
		c.Fix = "serve's --socket-dir must be reachable by every user it lets in (serve makes it 0755)"
		return c
	case st.Mode().Type() != os.ModeSocket:
		c.Status, c.Detail = Fail, path+" is not a socket ("+st.Mode().Type().String()+")"
		c.Fix = "name serve's --socket-dir, or the logbook.sock in it"
		return c
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	reply, err := status(sctx)
	switch {
	case errors.Is(err, api.ErrPeerRefused):
		c.Status, c.Detail = Fail, msg(err)
		c.Fix = "ask whoever runs serve to add your user (or a group of yours) to --socket-allow"
	case err != nil:
		c.Status, c.Detail = Fail, "serve does not answer on "+path+": "+msg(err)
		c.Fix = "look at serve's log (journalctl -u logbook)"
	case reply.LogUnavailableSince != nil:
		c.Status = Warn
		c.Detail = fmt.Sprintf("serve answers on %s from its projection at seq %d; its log does not: %s", path, reply.Checkpoint, reply.LogError)
		c.Fix = "hooks wait in serve's journal until its log answers again: look at serve's log"
	default:
		c.Status = OK
		c.Detail = fmt.Sprintf("serve answers on %s and lets this user in, %s in the log (since %s, %s)", path, words.Plural(int(reply.LastSeq), "message"), reply.Started.UTC().Format(time.RFC3339), reply.Durability)
	}
	return c
}

// Failed returns how many of checks failed.
func Failed(checks []Check) int {
	n := 0
	for _, c := range checks {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

// Bubblewrap checks that bwrap ("" for bwrap in PATH) can build the
// sandbox for this user, for the sandboxed modes of commands; it waits
// at most 10 s. msg words the error.
func Bubblewrap(ctx context.Context, bwrap string, msg func(error) string) Check {
	c := Check{Name: "bubblewrap"}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := sandbox.Available(pctx, bwrap)
	cancel()
	if err == nil {
		path := bwrap
		if path == "" {
			path, _ = exec.LookPath("bwrap")
		}
		c.Status, c.Detail = OK, "works for this user ("+path+")"
		return c
	}
	c.Status, c.Detail = Fail, msg(err)
	if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "no such file") {
		c.Fix = "install it: sudo apt-get install bubblewrap (Debian, Ubuntu) or sudo dnf install bubblewrap; commands in restricted modes need it"
	} else {
		c.Fix = "let it create user namespaces: sudo sysctl -w kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0; or run commands with mode full_access"
	}
	return c
}

// OnPath checks that the binary name (logbook, logbook-hook,
// logbook-exec) is on PATH, for the hooks, the agents and people.
func OnPath(name string) Check {
	c := Check{Name: name}
	if p, err := exec.LookPath(name); err == nil {
		c.Status, c.Detail = OK, "on PATH: "+p
		return c
	}
	c.Status, c.Detail = Warn, "not on PATH"
	c.Fix = `after go install, add Go's bin directory to PATH: export PATH="$PATH:$(go env GOPATH)/bin" (in ~/.profile or your shell's rc file)`
	if name == "logbook-hook" {
		c.Detail += " (hooks then run `logbook hook claude`, slower to start)"
		c.Fix = "go install ./cmd/logbook-hook from the clone, with Go's bin directory on PATH"
	}
	if name == "logbook-exec" {
		c.Detail += " (agents then run commands with `logbook exec`, tens of ms slower to start each)"
		c.Fix = "go install ./cmd/logbook-exec from the clone, with Go's bin directory on PATH"
	}
	return c
}

// Reporter checks that logbook-reporter is beside exe, the running
// logbook ("" when it is not known): a worker of that logbook runs
// restricted commands under it, and without it under logbook itself,
// whose start adds tens of ms to each command (warn).
func Reporter(exe string) Check {
	c := Check{Name: sandbox.ReporterName}
	if exe == "" {
		c.Status, c.Detail = Warn, "the running logbook's path is not known: a serve of it may not find the reporter beside it"
		c.Fix = "go install ./cmd/logbook ./cmd/" + sandbox.ReporterName + " from the clone, into one directory"
		return c
	}
	if p, err := sandbox.ReporterBeside(exe); err == nil {
		c.Status, c.Detail = OK, "beside "+filepath.Base(exe)+": "+p
		return c
	}
	c.Status = Warn
	c.Detail = "not beside " + exe + ": restricted commands run under " + filepath.Base(exe) +
		" itself as their reporter, whose start adds tens of ms to each"
	c.Fix = "go install ./cmd/" + sandbox.ReporterName + " from the clone (it goes beside logbook, in Go's bin directory)"
	return c
}

// DataDir checks that the data dir dd is the user's own, closed to
// others (0700) and writable (not on a read-only mount), or that it does
// not exist yet; hasData says whether it holds Logbook data.
func DataDir(dd datadir.Dir, hasData bool) Check {
	c := Check{Name: "data dir"}
	st, err := os.Stat(string(dd))
	switch {
	case os.IsNotExist(err):
		c.Status, c.Detail = Warn, fmt.Sprintf("%s does not exist yet", dd)
		c.Fix = "`logbook serve` or `logbook import claude` creates it; if you meant another, set --data or $LOGBOOK_DATA"
		return c
	case err != nil:
		c.Status, c.Detail = Fail, err.Error()
		return c
	case !st.IsDir():
		c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("%s is not a directory", dd), "move it aside, or set --data to a directory"
		return c
	}
	if dd.OwnerError(st) != nil {
		sys := st.Sys().(*syscall.Stat_t)
		c.Status, c.Detail = Fail, fmt.Sprintf("%s belongs to uid %d, not you (uid %d)", dd, sys.Uid, os.Geteuid())
		c.Fix = hookspool.OwnerFix
		return c
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		c.Status, c.Detail = Warn, fmt.Sprintf("%s has mode %o: others may read it", dd, perm)
		c.Fix = fmt.Sprintf("chmod 700 %s (the next logbook command that opens it does this too)", dd)
		return c
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(string(dd), &fs); err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s is on a read-only file system: no command can run on it, not even a read", dd)
		c.Fix = fmt.Sprintf("remount it read-write, or copy it (cp -a %s DIR) and give DIR to --data", dd)
		return c
	}
	// A full part stops every append, with or without a serve running
	// (a running serve also says so in the server check).
	for _, part := range []string{string(dd), dd.Path("jetstream"), dd.Path("views"), dd.Path("spool")} {
		if why := diskfull.Probe(part, false); why != "" {
			c.Status, c.Detail = Fail, fmt.Sprintf("%s takes no writes (%s): nothing can be appended", part, why)
			c.Fix = "free space on its file system; a running serve goes on by itself"
			return c
		}
	}
	// Under the log's reserve of free space serve holds every append
	// (diskfull.Room), though each part still takes a write.
	if detail, fix := underReserve(dd); detail != "" {
		c.Status, c.Detail, c.Fix = Fail, detail, fix
		return c
	}
	if err := dd.LogGone(); err != nil {
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "restore jetstream/ from a copy, or `logbook serve --accept-stream-loss`"
		return c
	}
	if !hasData {
		c.Status, c.Detail = Warn, fmt.Sprintf("%s holds no Logbook data yet", dd)
		c.Fix = "`logbook serve` or `logbook import claude` creates it"
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("%s, mode 700", dd)
	return c
}

// Journal reports the hooks serve took on its socket and has not
// appended (the journal at path), read without writing: a warning when
// they wait for a serve that is not running, a failure when the file is
// damaged (serve will not start on it). ok is false when there is no
// journal.
func Journal(dd datadir.Dir, path string) (Check, bool) {
	c := Check{Name: "hook journal"}
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return c, false
	}
	n, err := journal.Inspect(path, journal.Options{MaxSize: api.IntakeMaxBytes})
	si, ok := dd.ReadServeInfo()
	running := ok && ProcessAlive(si.PID)
	switch {
	case err != nil:
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = fmt.Sprintf("move it aside (mv %s %s.damaged) so that serve starts; the hooks it holds are then not appended", path, path)
	case n > 0 && !running:
		c.Status, c.Detail = Warn, fmt.Sprintf("%s taken by a serve that stopped wait in %s", words.Plural(n, "hook payload"), path)
		c.Fix = "start logbook serve: it appends them first"
	case n > 0:
		c.Status, c.Detail = OK, fmt.Sprintf("%s, %s being appended", path, words.Plural(n, "hook payload"))
	default:
		c.Status, c.Detail = OK, path+", every hook in the log"
	}
	return c, true
}

// SandboxView says what restricted commands see besides their
// workspace: the system directories and the allowlist, the running
// serve's (serve.json, when its process lives) when it runs workers, else
// env.SandboxAllow. A
// writable entry is a warning: every workspace_write command can change
// what is there for the host.
func SandboxView(env Env) Check {
	c := Check{Name: "sandbox view", Status: OK}
	from := "by default (serve and worker --sandbox-allow change it)"
	if env.SandboxAllowErr != nil {
		return Check{Name: c.Name, Status: Warn, Detail: env.SandboxAllowErr.Error()}
	}
	list := env.SandboxAllow
	if si, ok := env.DataDir.ReadServeInfo(); ok && si.Workers > 0 && ProcessAlive(si.PID) {
		// A serve.json left by a serve that is gone describes no
		// workers: the default (or env's) is what the next one runs.
		list, from = si.SandboxAllow, fmt.Sprintf("as serve (pid %d) runs them", si.PID)
	}
	var sys, entries, rw []string
	for _, d := range sandbox.SystemDirs() {
		if _, err := os.Lstat(d); err == nil {
			sys = append(sys, d)
		}
	}
	for _, e := range list {
		p, w := strings.CutSuffix(e, ":rw")
		note := "ro"
		if w {
			note = "rw"
			rw = append(rw, p)
		}
		if _, err := os.Stat(p); err != nil {
			note += ", absent"
		}
		entries = append(entries, fmt.Sprintf("%s (%s)", p, note))
	}
	if len(entries) == 0 {
		entries = []string{"nothing"}
	}
	c.Detail = fmt.Sprintf("restricted commands see their workspace, %s read-only (/etc without what other users cannot read), private /tmp, /run and an empty home; and, %s: %s",
		strings.Join(sys, " "), from, strings.Join(entries, ", "))
	if len(rw) > 0 {
		c.Status = Warn
		c.Fix = "every workspace_write command can change " + strings.Join(rw, ", ") + " for the host (a build cache there can be poisoned); drop :rw unless you trust every command with it"
	}
	return c
}

// ServerCheck checks that the server serve.json names (or env.NATSURL)
// answers. A serve.json whose process is gone (a serve killed, or the
// machine restarted) is a warning, as no server running is: commands
// open the data dir themselves. A server that runs and does not answer
// fails, as does one whose walk of its log found messages its stream
// lost (api.StatusReply.LogMissing). It waits at most 2 s for the status
// and 3 s for the log.
func ServerCheck(ctx context.Context, env Env) Check {
	c := Check{Name: "server"}
	dd := env.DataDir
	si, ok := dd.ReadServeInfo()
	if !ok && env.NATSURL == "" {
		c.Status, c.Detail = Warn, "no server running for "+string(dd)
		c.Fix = "start one: logbook serve (hooks wait in the spool meanwhile; commands open the data dir themselves)"
		return c
	}
	if ok && env.NATSURL == "" && !ProcessAlive(si.PID) {
		c.Status = Warn
		c.Detail = fmt.Sprintf("no server running for %s: %s is stale, left by a serve (pid %d) that did not stop cleanly", dd, dd.Path("serve.json"), si.PID)
		c.Fix = "start one: logbook serve (it replaces the stale file); or remove " + dd.Path("serve.json")
		return c
	}
	var st api.StatusReply
	if ok {
		// A serve whose cluster lost its quorum answers from its
		// projection; opening the log would only wait for a leader.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var err error
		st, err = env.Server.Status(sctx)
		cancel()
		if err == nil && st.LogUnavailableSince != nil {
			c.Status = Warn
			c.Detail = fmt.Sprintf("answers at %s (pid %d) from its projection at seq %d; %s", si.URL, si.PID, st.Checkpoint, env.Server.Unavailable(*st.LogUnavailableSince, st.LogError))
			c.Fix = "hooks wait in serve's journal and go into the log, in order, once the stream has a leader again: bring the cluster's nodes back"
			return c
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	b, err := env.Server.Open(cctx)
	if err != nil || !b.Remote() {
		if err == nil {
			b.Close()
		}
		c.Status, c.Detail = Fail, fmt.Sprintf("serve.json names %s (pid %d), which does not answer", si.URL, si.PID)
		c.Fix = "restart it: logbook serve"
		return c
	}
	defer b.Close()
	// A full disk pauses appends without stopping serve; it answers
	// this at once, while what waits on appends would time out (an older
	// serve answers no disk verb: nothing to say then).
	if paused := b.DiskPaused(ctx); paused != "" {
		c.Status, c.Detail = Warn, fmt.Sprintf("answers at %s (pid %d); %s", si.URL, si.PID, paused)
		c.Fix = "free space on that file system (or remount it read-write): serve probes it and appends what waits, in order, once it takes writes"
		return c
	}
	last, err := b.LastSeq(cctx)
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, "server answers, its log does not: "+err.Error(), "look at serve's log"
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("answers at %s (pid %d), %s in the log", si.URL, si.PID, words.Plural(int(last), "message"))
	if ok && env.NATSURL == "" {
		// logbook-hook's way in (serve's own data dir: a writer's).
		sock := dd.Path(hooksock.Name)
		if st, err := os.Lstat(sock); err == nil && st.Mode().Type() == os.ModeSocket {
			c.Detail += "; logbook-hook delivers on " + sock
		} else {
			c.Status = Warn
			c.Detail += "; no " + sock + ": logbook-hook hands each payload to logbook, which is slower (a reader's serve, or an older one, listens on none)"
			c.Fix = "restart it with this logbook: logbook serve"
		}
	}
	if st.LogMissing != "" {
		// serve's walk of its log at start found messages gone.
		c.Status = Fail
		c.Detail += "; its log is not whole: " + st.LogMissing
		c.Fix = "run `logbook verify`, which names every lost sequence; restore the data dir's jetstream/ from a copy (with serve stopped) to have them back"
	}
	return c
}

// ProcessAlive reports whether process pid exists (it may be another
// user's); false for a pid of 0 or less.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Hooks checks that every hook event Logbook reads is wired, in the
// user's settings or the current directory's project's.
func Hooks() Check {
	c := Check{Name: "hooks"}
	user, err := settings.UserSettings()
	if err != nil {
		c.Status, c.Detail = Warn, err.Error()
		return c
	}
	events := settings.Events()
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	wired := map[string]bool{}
	for _, p := range append([]string{user}, settings.ProjectPaths(wd)...) {
		m, err := settings.HooksIn(p, self)
		if err != nil {
			c.Status, c.Detail, c.Fix = Fail, err.Error(), "fix the JSON, then run logbook hooks install"
			return c
		}
		for ev := range m {
			wired[ev] = true
		}
	}
	var missing []string
	for _, ev := range events {
		if !wired[ev] {
			missing = append(missing, ev)
		}
	}
	switch {
	case len(missing) == 0:
		c.Status, c.Detail = OK, fmt.Sprintf("all %d events wired", len(events))
	case len(missing) == len(events):
		c.Status, c.Detail = Warn, "no hook wired to Logbook (sessions are then seen only through transcripts: serve --watch or import)"
		c.Fix = "logbook hooks install (or --project DIR)"
	default:
		c.Status, c.Detail = Warn, fmt.Sprintf("%s not wired: %s", words.Plural(len(missing), "event"), strings.Join(missing, ", "))
		c.Fix = "logbook hooks install (it replaces Logbook's entries, keeping everything else)"
	}
	return c
}

// Cgroup checks that cgroup v2 is mounted, for a command's resource
// limits and its process tree.
func Cgroup() Check {
	c := Check{Name: "cgroup v2"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		c.Status, c.Detail = OK, "mounted at /sys/fs/cgroup"
	} else {
		c.Status, c.Detail = Warn, "not mounted at /sys/fs/cgroup (a v1 or hybrid hierarchy, or none)"
		c.Fix = "boot with systemd.unified_cgroup_hierarchy=1 (the default on current distributions)"
	}
	return c
}

// underReserve returns what the data dir check says when the file system
// under dd's log store (jetstream/, or dd before it exists) has less free
// space than the log's reserve (diskfull.Reserve), under which serve
// holds every append: a detail and a fix, or "" for both when it has the
// room or statfs(2) fails (the probes above say a failing statfs).
func underReserve(dd datadir.Dir) (detail, fix string) {
	at := dd.Path("jetstream")
	if _, err := os.Stat(at); err != nil {
		at = string(dd)
	}
	s, short := diskfull.ShortOf(at)
	if !short {
		return "", ""
	}
	return fmt.Sprintf("%s has %d bytes free, under the log's reserve of %d MiB: serve holds every append until a quarter more than the reserve is free", at, s.Free, s.Reserve>>20),
		fmt.Sprintf("free space on its file system (%d MiB in all; the reserve is a sixteenth of it, at least %d MiB, at most %d MiB); a running serve goes on by itself", s.Size>>20, diskfull.MinReserve>>20, diskfull.MaxReserve>>20)
}
