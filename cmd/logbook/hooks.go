package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/gate"
)

// claudeHookEvents are the hook events `hooks install` wires: every one
// the Claude Code adapter understands.
var claudeHookEvents = claude.HookEvents()

// hooksFlags are the flags of `logbook hooks`.
type hooksFlags struct {
	user    bool
	project string
	gate    bool
	budget  time.Duration // --budget: the gated hook's budget
	dryRun  bool
}

func hooksCmd(g *globals) *cobra.Command {
	var f hooksFlags
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Wire Logbook into Claude Code's settings.json, unwire it, or show where it is wired",
		Long: `hooks manages Logbook's entries in Claude Code's settings.json: the user's
(~/.claude/settings.json, the default, or --user) or a project's
(--project DIR: DIR/.claude/settings.json). Every other key of the file, and
every hook that is not Logbook's, is kept as it is.`,
	}
	install := &cobra.Command{
		Use:   "install [--user | --project DIR] [--gate [--budget D]] [--dry-run]",
		Short: "Add Logbook's hook to every event Logbook reads (idempotent; backs up the old file; shows the diff)",
		Long: `install wires ` + "`logbook-hook claude`" + ` (or ` + "`logbook hook claude`" + ` when the small
binary is not found) to every Claude Code hook event Logbook reads:
` + strings.Join(claudeHookEvents, ", ") + `.
Tool events match every tool ("*"). Logbook's earlier entries are replaced,
so running it again changes nothing. The old file is kept beside the new
one as settings.json.<time>.bak, and the change is printed as a diff;
--dry-run prints the diff and writes nothing. --gate wires PreToolUse and
PermissionRequest to ` + "`logbook hook claude --gate --budget D`" + ` instead, so the
hook answers them with the gate's decision, with a "timeout" of D plus
` + fmt.Sprint(int(settings.GateTimeoutMargin.Seconds())) + ` seconds: Claude Code must never kill a hook that waits for a
verdict (a hook it kills lets the tool run). The other events keep the
recorder. The data dir given to logbook, by --data or $LOGBOOK_DATA, is
passed on to the hook as --data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("budget") && !f.gate {
				return usageErrorf("--budget is for --gate: the gated hook's budget")
			}
			// What hook claude --gate takes, but 0: the server's
			// --review-budget is not known here, so no timeout longer
			// than it could be written.
			if f.budget < time.Millisecond || f.budget > maxGateBudget {
				return usageErrorf("--budget %v: want from 1ms to %v, as hook claude --gate takes", f.budget, maxGateBudget)
			}
			if err := hooksEdit(g, f, true); err != nil {
				return err
			}
			if f.gate && f.budget > gate.DefaultBudget {
				// The server's own budget bounds every review: say so
				// rather than let a longer one be cut unseen.
				b := budgetFlag(f.budget)
				fmt.Fprintf(g.stderr, "note: a review waits at most serve's --review-budget (default %s), whatever the hook's --budget: start serve with --review-budget %s for reviews to wait %s\n", budgetFlag(gate.DefaultBudget), b, b)
			}
			return nil
		},
	}
	uninstall := &cobra.Command{
		Use:   "uninstall [--user | --project DIR] [--dry-run]",
		Short: "Remove Logbook's hooks from settings.json, keeping everything else",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hooksEdit(g, f, false)
		},
	}
	status := &cobra.Command{
		Use:   "status [--project DIR]",
		Short: "Show which hook events are wired to Logbook, in the user's and the project's settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hooksStatus(g, f)
		},
	}
	for _, c := range []*cobra.Command{install, uninstall, status} {
		c.Flags().StringVar(&f.project, "project", "", "the project in DIR: DIR/.claude/settings.json (status: default the current directory)")
		if c != status {
			c.Flags().BoolVar(&f.user, "user", false, "the user's ~/.claude/settings.json (the default)")
			c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the change, write nothing")
			c.MarkFlagsMutuallyExclusive("user", "project")
		}
	}
	install.Flags().BoolVar(&f.gate, "gate", false, "wire PreToolUse and PermissionRequest to the gate (hook claude --gate), with a timeout longer than its budget")
	install.Flags().DurationVar(&f.budget, "budget", gate.DefaultBudget, "with --gate: the most the gated hook waits for a verdict; its timeout in settings.json is this plus "+fmt.Sprint(int(settings.GateTimeoutMargin.Seconds()))+"s")
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// userSettingsPath returns ~/.claude/settings.json.
func userSettingsPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w (use --project DIR)", err)
	}
	return settings.UserPath(home), nil
}

// settingsPath returns the settings.json f names.
func (f hooksFlags) settingsPath() (string, error) {
	if f.project != "" {
		abs, err := filepath.Abs(f.project)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", usageErrorf("--project %s: not a directory", f.project)
		}
		return settings.ProjectPath(abs), nil
	}
	return userSettingsPath()
}

// installWires returns the hook commands `hooks install` writes for f.
func installWires(g *globals, f hooksFlags) settings.Wires {
	w := settings.Wires{Recorder: hookCommand(g)}
	if f.gate {
		w.Gate = gateHookCommand(g, f.budget)
		w.Timeout = settings.GateTimeout(f.budget)
	}
	return w
}

// gateHookCommand returns the command line of the gated hook: this
// binary's `hook claude --gate --budget B`, by name when PATH finds
// logbook, else by its absolute path. It is logbook itself, not
// logbook-hook, which would only hand the call over to it.
func gateHookCommand(g *globals, budget time.Duration) string {
	cmd := "logbook"
	if self, _ := os.Executable(); !lookPathIs("logbook") && self != "" {
		cmd = shellQuote(self)
	}
	cmd += " hook" + dataArg(g) + " claude --gate --budget " + budgetFlag(budget)
	return cmd
}

// budgetFlag returns budget as a --budget value: whole seconds as "90s"
// (not 1m30s), anything finer as time.Duration prints it (1.5s, 250ms).
func budgetFlag(budget time.Duration) string {
	if budget%time.Second == 0 {
		return fmt.Sprintf("%ds", int(budget.Seconds()))
	}
	return budget.String()
}

// dataArg returns " --data DIR" for the data dir given to logbook, by
// --data or else by $LOGBOOK_DATA (as resolveDataDir picks it), as an
// absolute path, or "" when neither names one: the hook then finds the
// default data dir as logbook does.
func dataArg(g *globals) string {
	if d := cmp.Or(g.data, os.Getenv("LOGBOOK_DATA")); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return " --data " + shellQuote(abs)
		}
	}
	return ""
}

// hookCommand returns the command line the recording hooks run:
// logbook-hook when it is on PATH or beside this binary, else this
// binary's `hook claude`, by name when PATH finds it, else by its
// absolute path.
func hookCommand(g *globals) string {
	var cmd string
	self, _ := os.Executable()
	switch {
	case lookPathIs("logbook-hook"):
		cmd = "logbook-hook claude"
	case self != "" && isExecutable(filepath.Join(filepath.Dir(self), "logbook-hook")):
		cmd = shellQuote(filepath.Join(filepath.Dir(self), "logbook-hook")) + " claude"
	case lookPathIs("logbook"):
		cmd = "logbook hook claude"
	case self != "":
		cmd = shellQuote(self) + " hook claude"
	default:
		cmd = "logbook hook claude"
	}
	if d := dataArg(g); d != "" {
		cmd = strings.Replace(cmd, " claude", d+" claude", 1)
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

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hooksEdit installs (install true) or removes Logbook's hooks in the
// settings file f names, printing the diff; nothing is written when
// nothing changes or with --dry-run.
func hooksEdit(g *globals, f hooksFlags, install bool) error {
	path, err := f.settingsPath()
	if err != nil {
		return err
	}
	target, err := settings.Target(path)
	if err != nil {
		return err
	}
	old, err := settings.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	existed := err == nil
	var wires settings.Wires
	if install {
		wires = installWires(g, f)
	}
	updated, err := settings.Edit(old, wires, selfPath())
	if err != nil {
		return fmt.Errorf("%s: %w; fix it or move it aside, then run this again", path, err)
	}
	if bytes.Equal(old, updated) || (!existed && !install) {
		fmt.Fprintf(g.stdout, "%s: unchanged\n", path)
		return nil
	}
	fmt.Fprintf(g.stdout, "--- %s\n+++ %s\n", path, path)
	writeLineDiff(g.stdout, string(old), string(updated))
	if f.dryRun {
		fmt.Fprintln(g.stdout, "(dry run: nothing written)")
		return nil
	}
	mode := fs.FileMode(0o644)
	if existed {
		st, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = st.Mode().Perm()
		backup, err := settings.WriteBackup(path, old, mode)
		if err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
		fmt.Fprintf(g.stdout, "backed up the old file to %s\n", backup)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// Through a symlink the target is rewritten in its own directory,
	// so the link (into a dotfiles repository, say) stays a link.
	if err := writeFileAtomic(target, updated, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if target != path {
		fmt.Fprintf(g.stdout, "wrote %s (%s links to it)\n", target, path)
	}
	if install {
		if wires.Gate == "" {
			fmt.Fprintf(g.stdout, "wired %s to %s\n", plural(len(claudeHookEvents), "hook event"), wires.Recorder)
		} else {
			fmt.Fprintf(g.stdout, "wired %s to %s, and %s and %s to %s with a timeout of %d s\n",
				plural(len(claudeHookEvents)-2, "hook event"), wires.Recorder, gate.EventPreToolUse, gate.EventPermissionRequest, wires.Gate, wires.Timeout)
		}
	} else {
		fmt.Fprintln(g.stdout, "removed Logbook's hooks")
	}
	return nil
}

// writeLineDiff prints the lines of a and b that differ, as a unified
// diff without hunk headers: " " kept, "-" removed, "+" added, with at
// most two kept lines around each change.
func writeLineDiff(w io.Writer, a, b string) {
	x, y := splitLines(a), splitLines(b)
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
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
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

// hooksStatus prints, for each hook event Logbook reads, the Logbook
// commands wired to it in the user's and the project's settings.
func hooksStatus(g *globals, f hooksFlags) error {
	user, err := userSettingsPath()
	if err != nil {
		return err
	}
	dir := f.project
	if dir == "" {
		dir = "."
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return err
	}
	projectFiles := settings.ProjectPaths(dir)
	rows, missing, err := settings.Status(user, projectFiles, selfPath())
	if err != nil {
		return err
	}
	if g.json {
		return writeJSON(g.stdout, struct {
			UserSettings     string            `json:"user_settings"`
			ProjectSettings  []string          `json:"project_settings"`
			Events           []settings.Wiring `json:"events"`
			EventsNotWired   int               `json:"events_not_wired"`
			EventsUnderstood int               `json:"events_understood"`
		}{user, projectFiles, rows, missing, len(claudeHookEvents)})
	}
	fmt.Fprintf(g.stdout, "user:    %s\nproject: %s\n\n", user, strings.Join(projectFiles, ", "))
	tw := newTable(g.stdout)
	fmt.Fprintln(tw, "EVENT\tUSER\tPROJECT")
	show := func(cmds []string) string {
		if len(cmds) == 0 {
			return "-"
		}
		return strings.Join(cmds, "; ")
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(r.Event), cell(show(r.User)), cell(show(r.Project)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if missing > 0 {
		fmt.Fprintf(g.stdout, "\n%s of %d not wired: run `logbook hooks install`\n", plural(missing, "event"), len(claudeHookEvents))
	}
	return nil
}

// selfPath returns the running binary's path, "" when it is not known:
// what settings.IsLogbookHook knows this build's own hook entries by.
func selfPath() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
}
