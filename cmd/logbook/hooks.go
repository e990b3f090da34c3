package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/term"
)

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
` + strings.Join(settings.Events(), ", ") + `.
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
				return usageErrorf("--budget %v: want from 1ms to %v: the hook's timeout in settings.json is written from it, so it cannot be left to the server's --review-budget as hook claude --gate --budget 0 leaves it (leave --budget out for %v)", f.budget, maxGateBudget, gate.DefaultBudget)
			}
			if err := hooksEdit(g, f, true); err != nil {
				return err
			}
			if f.gate && f.budget > gate.DefaultBudget {
				// The server's own budget bounds every review: say so
				// rather than let a longer one be cut unseen.
				b := settings.BudgetFlag(f.budget)
				if f.budget > gate.MaxWait {
					fmt.Fprintf(g.stderr, "note: a review waits at most %s, the API's limit on one request, whatever the hook's --budget: start serve with --review-budget %s for reviews to wait that long\n", gate.MaxWait, settings.BudgetFlag(gate.MaxWait))
				} else {
					fmt.Fprintf(g.stderr, "note: a review waits at most serve's --review-budget (default %s), whatever the hook's --budget: start serve with --review-budget %s for reviews to wait %s\n", settings.BudgetFlag(gate.DefaultBudget), b, b)
				}
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
	return settings.UserSettings()
}

// installWires returns the hook commands `hooks install` writes for f:
// with --socket for the system socket logbook was given (--socket or
// $LOGBOOK_SOCKET, as socketPath picks it), else with --data for the data
// dir given to logbook, by --data or else by $LOGBOOK_DATA (as
// resolveDataDir picks it).
func installWires(g *globals, f hooksFlags) settings.Wires {
	return settings.InstallWires(cmp.Or(g.data, os.Getenv("LOGBOOK_DATA")), g.socketPath(), f.gate, f.budget)
}

// hooksEdit installs (install true) or removes Logbook's hooks in the
// settings file f names (settings.Apply), printing the diff; nothing is
// written when nothing changes or with --dry-run.
func hooksEdit(g *globals, f hooksFlags, install bool) error {
	path, err := f.settingsPath()
	if err != nil {
		return err
	}
	var wires settings.Wires
	if install {
		wires = installWires(g, f)
	}
	c, err := settings.Plan(path, wires, settings.Self())
	if err != nil {
		return err
	}
	return settings.Apply(g.stdout, c, wires, f.dryRun)
}

// hooksStatus prints, for each hook event Logbook reads, the Logbook
// commands wired to it in the user's and the project's settings.
func hooksStatus(g *globals, f hooksFlags) error {
	r, err := settings.StatusOf(f.project, settings.Self())
	if err != nil {
		return err
	}
	if g.json {
		return writeJSON(g.stdout, r)
	}
	return term.HookStatus(g.stdout, r)
}
