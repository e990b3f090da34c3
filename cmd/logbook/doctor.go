package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/journal"

	"github.com/logbook-dev/logbook/sandbox"
)

// A doctorCheck is one line of `logbook doctor`: what was checked, how it
// stands (ok, warn, fail), what was found, and the fix when not ok.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok", "warn" or "fail"
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Check statuses: fail means a part of Logbook cannot work; warn, that
// one may not.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

func doctorCmd(g *globals) *cobra.Command {
	var bwrap string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what Logbook needs on this machine, each line ok, warn or fail with the fix",
		Long: `doctor checks bubblewrap (present, and able to build the sandbox for this
user), the logbook binaries on PATH, the data dir's permissions, the running
server, the hooks in Claude Code's settings, Claude Code's and Codex's data
dirs, and cgroup v2. Each line is ok, warn or fail, with the fix. It exits 1
when a check fails, 0 otherwise. It changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := runDoctor(cmd.Context(), g, bwrap)
			failed := 0
			for _, c := range checks {
				if c.Status == checkFail {
					failed++
				}
			}
			if g.json {
				if err := writeJSON(g.stdout, checks); err != nil {
					return err
				}
			} else {
				for _, c := range checks {
					fmt.Fprintf(g.stdout, "%-4s  %-12s %s\n", c.Status, c.Name, c.Detail)
					if c.Fix != "" {
						fmt.Fprintf(g.stdout, "      %-12s fix: %s\n", "", c.Fix)
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("%s failed", plural(failed, "check"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&bwrap, "bwrap", "", "bubblewrap executable to check (default: bwrap in PATH)")
	return cmd
}

// runDoctor runs every check, in the order printed.
func runDoctor(ctx context.Context, g *globals, bwrap string) []doctorCheck {
	var out []doctorCheck
	add := func(c doctorCheck) { out = append(out, c) }

	// Bubblewrap, for the sandboxed modes of commands.
	{
		c := doctorCheck{Name: "bubblewrap"}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := sandbox.Available(pctx, bwrap)
		cancel()
		if err == nil {
			path := bwrap
			if path == "" {
				path, _ = exec.LookPath("bwrap")
			}
			c.Status, c.Detail = checkOK, "works for this user ("+path+")"
		} else {
			c.Status, c.Detail = checkFail, userMessage(err)
			if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "no such file") {
				c.Fix = "install it: sudo apt-get install bubblewrap (Debian, Ubuntu) or sudo dnf install bubblewrap; commands in restricted modes need it"
			} else {
				c.Fix = "let it create user namespaces: sudo sysctl -w kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0; or run commands with mode full_access"
			}
		}
		add(c)
	}

	// The binaries on PATH, for the hooks and for people.
	for _, name := range []string{"logbook", "logbook-hook"} {
		c := doctorCheck{Name: name}
		if p, err := exec.LookPath(name); err == nil {
			c.Status, c.Detail = checkOK, "on PATH: "+p
		} else {
			c.Status, c.Detail = checkWarn, "not on PATH"
			c.Fix = `after go install, add Go's bin directory to PATH: export PATH="$PATH:$(go env GOPATH)/bin" (in ~/.profile or your shell's rc file)`
			if name == "logbook-hook" {
				c.Detail += " (hooks then run `logbook hook claude`, slower to start)"
				c.Fix = "go install ./cmd/logbook-hook from the clone, with Go's bin directory on PATH"
			}
		}
		add(c)
	}

	// The data dir.
	dd, err := resolveDataDir(g.data)
	if err != nil {
		add(doctorCheck{Name: "data dir", Status: checkFail, Detail: err.Error(), Fix: "set --data or $LOGBOOK_DATA"})
		return out
	}
	add(checkDataDir(dd))
	add(checkServer(ctx, g, dd))
	add(checkSandboxView(dd))
	if c, ok := checkJournal(dd); ok {
		add(c)
	}
	if c, ok := checkWitness(dd); ok {
		add(c)
	}
	add(checkHooks())

	// Agents' data.
	home, _ := os.UserHomeDir()
	for _, a := range []struct{ name, dir, fix string }{
		{"claude code", filepath.Join(home, ".claude", "projects"), "none needed unless you use Claude Code: it writes its transcripts here once it has run"},
		{"codex", filepath.Join(home, ".codex", "sessions"), "none needed unless you use Codex: it writes its sessions here once it has run"},
	} {
		c := doctorCheck{Name: a.name}
		if st, err := os.Stat(a.dir); err == nil && st.IsDir() {
			c.Status, c.Detail = checkOK, "transcripts in "+a.dir
		} else {
			c.Status, c.Detail, c.Fix = checkWarn, "no "+a.dir, a.fix
		}
		add(c)
	}

	// cgroup v2, for a command's resource limits and its process tree.
	{
		c := doctorCheck{Name: "cgroup v2"}
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			c.Status, c.Detail = checkOK, "mounted at /sys/fs/cgroup"
		} else {
			c.Status, c.Detail = checkWarn, "not mounted at /sys/fs/cgroup (a v1 or hybrid hierarchy, or none)"
			c.Fix = "boot with systemd.unified_cgroup_hierarchy=1 (the default on current distributions)"
		}
		add(c)
	}
	return out
}

// checkDataDir checks that the data dir is the user's own, closed to
// others (0700) and writable (not on a read-only mount), or that it does
// not exist yet.
func checkDataDir(dd dataDir) doctorCheck {
	c := doctorCheck{Name: "data dir"}
	st, err := os.Stat(string(dd))
	switch {
	case os.IsNotExist(err):
		c.Status, c.Detail = checkWarn, fmt.Sprintf("%s does not exist yet", dd)
		c.Fix = "`logbook serve` or `logbook import claude` creates it; if you meant another, set --data or $LOGBOOK_DATA"
		return c
	case err != nil:
		c.Status, c.Detail = checkFail, err.Error()
		return c
	case !st.IsDir():
		c.Status, c.Detail, c.Fix = checkFail, fmt.Sprintf("%s is not a directory", dd), "move it aside, or set --data to a directory"
		return c
	}
	if dd.ownerError(st) != nil {
		sys := st.Sys().(*syscall.Stat_t)
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s belongs to uid %d, not you (uid %d)", dd, sys.Uid, os.Geteuid())
		c.Fix = ownerFix
		return c
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		c.Status, c.Detail = checkWarn, fmt.Sprintf("%s has mode %o: others may read it", dd, perm)
		c.Fix = fmt.Sprintf("chmod 700 %s (the next logbook command that opens it does this too)", dd)
		return c
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(string(dd), &fs); err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s is on a read-only file system: no command can run on it, not even a read", dd)
		c.Fix = fmt.Sprintf("remount it read-write, or copy it (cp -a %s DIR) and give DIR to --data", dd)
		return c
	}
	if !hasLogbookData(dd) {
		c.Status, c.Detail = checkWarn, fmt.Sprintf("%s holds no Logbook data yet", dd)
		c.Fix = "`logbook serve` or `logbook import claude` creates it"
		return c
	}
	c.Status, c.Detail = checkOK, fmt.Sprintf("%s, mode 700", dd)
	return c
}

// checkJournal reports the hooks serve took on its socket and has not
// appended (hooks.journal), read without writing: a warning when they
// wait for a serve that is not running, a failure when the file is
// damaged (serve will not start on it). ok is false when there is no
// journal.
func checkJournal(dd dataDir) (doctorCheck, bool) {
	c := doctorCheck{Name: "hook journal"}
	path := dd.path(intakeJournal)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return c, false
	}
	n, err := journal.Inspect(path, journal.Options{MaxSize: api.IntakeMaxBytes})
	si, ok := dd.readServeInfo()
	running := ok && processAlive(si.PID)
	switch {
	case err != nil:
		c.Status, c.Detail = checkFail, err.Error()
		c.Fix = fmt.Sprintf("move it aside (mv %s %s.damaged) so that serve starts; the hooks it holds are then not appended", path, path)
	case n > 0 && !running:
		c.Status, c.Detail = checkWarn, fmt.Sprintf("%s taken by a serve that stopped wait in %s", plural(n, "hook payload"), path)
		c.Fix = "start logbook serve: it appends them first"
	case n > 0:
		c.Status, c.Detail = checkOK, fmt.Sprintf("%s, %s being appended", path, plural(n, "hook payload"))
	default:
		c.Status, c.Detail = checkOK, path+", every hook in the log"
	}
	return c, true
}

// checkSandboxView says what restricted commands see besides their
// workspace: the system directories and the allowlist, the running
// serve's (serve.json) when it runs workers, else the default one. A
// writable entry is a warning: every workspace_write command can change
// what is there for the host.
func checkSandboxView(dd dataDir) doctorCheck {
	c := doctorCheck{Name: "sandbox view", Status: checkOK}
	from := "by default (serve and worker --sandbox-allow change it)"
	allow, err := sandboxAllow(nil)
	if err != nil {
		return doctorCheck{Name: c.Name, Status: checkWarn, Detail: err.Error()}
	}
	list := allowStrings(allow)
	if si, ok := dd.readServeInfo(); ok && si.Workers > 0 {
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
		c.Status = checkWarn
		c.Fix = "every workspace_write command can change " + strings.Join(rw, ", ") + " for the host (a build cache there can be poisoned); drop :rw unless you trust every command with it"
	}
	return c
}

// checkServer checks that the server serve.json names answers. A
// serve.json whose process is gone (a serve killed, or the machine
// restarted) is a warning, as no server running is: commands open the
// data dir themselves. A server that runs and does not answer fails.
func checkServer(ctx context.Context, g *globals, dd dataDir) doctorCheck {
	c := doctorCheck{Name: "server"}
	si, ok := dd.readServeInfo()
	if !ok && g.natsURL == "" {
		c.Status, c.Detail = checkWarn, "no server running for "+string(dd)
		c.Fix = "start one: logbook serve (hooks wait in the spool meanwhile; commands open the data dir themselves)"
		return c
	}
	if ok && g.natsURL == "" && !processAlive(si.PID) {
		c.Status = checkWarn
		c.Detail = fmt.Sprintf("no server running for %s: %s is stale, left by a serve (pid %d) that did not stop cleanly", dd, dd.path("serve.json"), si.PID)
		c.Fix = "start one: logbook serve (it replaces the stale file); or remove " + dd.path("serve.json")
		return c
	}
	if ok {
		// A serve whose cluster lost its quorum answers from its
		// projection; opening the log would only wait for a leader.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := serveStatus(sctx, g, dd)
		cancel()
		if err == nil && st.LogUnavailableSince != nil {
			c.Status = checkWarn
			c.Detail = fmt.Sprintf("answers at %s (pid %d) from its projection at seq %d; %s", si.URL, si.PID, st.Checkpoint, unavailableText(*st.LogUnavailableSince, st.LogError))
			c.Fix = "hooks wait in serve's journal and go into the log, in order, once the stream has a leader again: bring the cluster's nodes back"
			return c
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	gg := *g
	gg.cmdName = "doctor"
	b, err := openBackend(cctx, &gg)
	if err != nil || !b.remote {
		if b != nil {
			b.Close()
		}
		c.Status, c.Detail = checkFail, fmt.Sprintf("serve.json names %s (pid %d), which does not answer", si.URL, si.PID)
		c.Fix = "restart it: logbook serve"
		return c
	}
	defer b.Close()
	// A full disk pauses appends without stopping serve; it answers
	// this at once, while what waits on appends would time out (an older
	// serve answers no disk verb: nothing to say then).
	if paused := b.diskPaused(ctx); paused != "" {
		c.Status, c.Detail = checkWarn, fmt.Sprintf("answers at %s (pid %d); %s", si.URL, si.PID, paused)
		c.Fix = "free space on that file system (or remount it read-write): serve probes it and appends what waits, in order, once it takes writes"
		return c
	}
	last, err := b.log.LastSeq(cctx)
	if err != nil {
		c.Status, c.Detail, c.Fix = checkFail, "server answers, its log does not: "+err.Error(), "look at serve's log"
		return c
	}
	c.Status, c.Detail = checkOK, fmt.Sprintf("answers at %s (pid %d), %s in the log", si.URL, si.PID, plural(int(last), "message"))
	if ok && g.natsURL == "" {
		// logbook-hook's way in (serve's own data dir: a writer's).
		sock := dd.path(hooksock.Name)
		if st, err := os.Lstat(sock); err == nil && st.Mode().Type() == os.ModeSocket {
			c.Detail += "; logbook-hook delivers on " + sock
		} else {
			c.Status = checkWarn
			c.Detail += "; no " + sock + ": logbook-hook hands each payload to logbook, which is slower (a reader's serve, or an older one, listens on none)"
			c.Fix = "restart it with this logbook: logbook serve"
		}
	}
	return c
}

// processAlive reports whether process pid exists (it may be another
// user's); false for a pid of 0 or less.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkHooks checks that every hook event Logbook reads is wired, in the
// user's settings or the current directory's project's.
func checkHooks() doctorCheck {
	c := doctorCheck{Name: "hooks"}
	user, err := userSettingsPath()
	if err != nil {
		c.Status, c.Detail = checkWarn, err.Error()
		return c
	}
	wd, _ := os.Getwd()
	wired := map[string]bool{}
	for _, p := range append([]string{user}, settings.ProjectPaths(wd)...) {
		m, err := settings.HooksIn(p, selfPath())
		if err != nil {
			c.Status, c.Detail, c.Fix = checkFail, err.Error(), "fix the JSON, then run logbook hooks install"
			return c
		}
		for ev := range m {
			wired[ev] = true
		}
	}
	var missing []string
	for _, ev := range claudeHookEvents {
		if !wired[ev] {
			missing = append(missing, ev)
		}
	}
	switch {
	case len(missing) == 0:
		c.Status, c.Detail = checkOK, fmt.Sprintf("all %d events wired", len(claudeHookEvents))
	case len(missing) == len(claudeHookEvents):
		c.Status, c.Detail = checkWarn, "no hook wired to Logbook (sessions are then seen only through transcripts: serve --watch or import)"
		c.Fix = "logbook hooks install (or --project DIR)"
	default:
		c.Status, c.Detail = checkWarn, fmt.Sprintf("%s not wired: %s", plural(len(missing), "event"), strings.Join(missing, ", "))
		c.Fix = "logbook hooks install (it replaces Logbook's entries, keeping everything else)"
	}
	return c
}
