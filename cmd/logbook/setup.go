package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/doctor"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/setup"
	"github.com/logbook-dev/logbook/adapters/term"
)

// setupFlags are the flags of `logbook setup`.
type setupFlags struct {
	yes       bool
	undo      bool
	gate      bool
	budget    time.Duration
	noService bool
}

// setupBlocking are the doctor checks whose failure makes the rest of
// setup useless: no data dir to record in or serve from, a hook journal
// serve will not start on. (A user's settings.json that cannot be edited
// stops the hooks step itself, naming the line and column; the hooks
// check reads the current project's settings too, which setup leaves
// alone.)
var setupBlocking = []string{"data dir", "hook journal"}

func setupCmd(g *globals) *cobra.Command {
	var f setupFlags
	cmd := &cobra.Command{
		Use:   "setup [--yes] [--gate [--budget D]] [--no-service] | setup --undo",
		Short: "Check the machine, wire the hooks, run serve as a user service and show the board's URL; --undo takes out what it added",
		Long: `setup does in one step what a newcomer otherwise reads five sections for:
it runs doctor's checks (and stops when the data dir or the hook journal
fails one, or when the settings file cannot be edited), wires Logbook's hooks into the user's
~/.claude/settings.json as hooks install does (--gate as hooks install
--gate), and, where a systemd user manager answers (systemctl --user
show-environment), writes ~/.config/systemd/user/logbook.service
($XDG_CONFIG_HOME respected) running this binary's serve with the board on
` + setup.BoardAddr + ` and --watch on Claude Code's and Codex's transcript
folders, then daemon-reload and enable --now; without one it prints the
command that starts serve. Last it prints the board's URL.

Every change is shown first (the settings diff, the unit) and asked about
("write? [y/N]") on a terminal; --yes answers yes, and without a terminal
and without --yes setup refuses and writes nothing. What it added is
recorded in setup.json in the data dir; a second run changes nothing and
says so. --undo takes out exactly that: the unit (disabled, and removed
when it is still what setup wrote), the settings file put back byte for
byte when it is still what setup wrote, else only setup's hook entries
that are still as it wrote them (the user's are left, and named).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.undo {
				for _, name := range []string{"gate", "budget", "no-service"} {
					if cmd.Flags().Changed(name) {
						return usageErrorf("--undo --%s: --undo takes out what setup recorded, and takes no other flag but --yes", name)
					}
				}
				return setupUndo(cmd, g)
			}
			if cmd.Flags().Changed("budget") && !f.gate {
				return usageErrorf("--budget is for --gate: the gated hook's budget")
			}
			if f.budget < time.Millisecond || f.budget > maxGateBudget {
				return usageErrorf("--budget %v: want from 1ms to %v: the hook's timeout in settings.json is written from it, so it cannot be left to the server's --review-budget as hook claude --gate --budget 0 leaves it (leave --budget out for %v)", f.budget, maxGateBudget, gate.DefaultBudget)
			}
			return runSetup(cmd, g, f)
		},
	}
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "write without asking (for scripts)")
	cmd.Flags().BoolVar(&f.undo, "undo", false, "take out what setup added, as recorded in setup.json in the data dir")
	cmd.Flags().BoolVar(&f.gate, "gate", false, "wire PreToolUse and PermissionRequest to the gate, as hooks install --gate does")
	cmd.Flags().DurationVar(&f.budget, "budget", gate.DefaultBudget, "with --gate: the most the gated hook waits for a verdict")
	cmd.Flags().BoolVar(&f.noService, "no-service", false, "write no user service; print how to start serve")
	return cmd
}

// runSetup runs the steps of `logbook setup`, printing each.
func runSetup(cmd *cobra.Command, g *globals, f setupFlags) error {
	// Setup changes the user's files and records what it changed for
	// --undo: output cut short (`setup | head`) must not kill it between
	// the two, as a write to a closed pipe otherwise does (SIGPIPE). Its
	// writes then fail, unseen, and it goes on.
	signal.Ignore(syscall.SIGPIPE)
	ctx, w := cmd.Context(), g.stdout
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "== doctor")
	checks := doctor.Run(ctx, doctorEnv(g, ""))
	printChecks(w, checks)
	for _, c := range checks {
		if c.Status == doctor.Fail && slices.Contains(setupBlocking, c.Name) {
			return fmt.Errorf("setup stopped: the %s check failed (%s); fix that, then run logbook setup again", c.Name, c.Detail)
		}
	}
	var notNeeded []string
	for _, c := range checks {
		// A settings.json the hooks check failed on stops the hooks
		// step below, naming its line and column.
		if c.Status == doctor.Fail && c.Name != "hooks" {
			notNeeded = append(notNeeded, c.Name)
		}
	}
	if len(notNeeded) > 0 {
		fmt.Fprintf(w, "(setup does not need what the %s check%s found; going on)\n", strings.Join(notNeeded, ", "), map[bool]string{true: "s", false: ""}[len(notNeeded) > 1])
	}
	path, err := settings.UserSettings()
	if err != nil {
		return err
	}
	opts := setup.Options{
		DataDir:  dd.dir(),
		Settings: path,
		Self:     settings.Self(),
		Wires:    installWires(g, hooksFlags{gate: f.gate, budget: f.budget}),
	}
	if !f.noService {
		if opts.Serve, opts.ServeEnv, err = serveArgv(dd); err != nil {
			return err
		}
		if opts.UnitPath, err = setup.UnitPath(); err != nil {
			return err
		}
		opts.Manager, opts.ManagerWhy = setup.UserManager(ctx)
	}
	p, err := setup.NewPlan(opts)
	if err != nil {
		return fmt.Errorf("setup stopped, nothing written: %w", err)
	}
	p.Show(w)
	if p.Empty() {
		fmt.Fprintln(w, "nothing to change: Logbook is set up as setup would set it up")
	} else {
		if !f.yes {
			if in, ok := g.stdin.(*os.File); !ok || !term.IsTerminal(in) {
				return errors.New("setup: nothing written: standard input is not a terminal to ask on; run logbook setup --yes to write the changes above")
			}
			fmt.Fprint(w, "write? [y/N] ")
			answer, _ := bufio.NewReader(g.stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
				return errors.New("setup: nothing written (the answer was not yes)")
			}
		}
		if err := p.Apply(ctx, w); err != nil {
			return err
		}
	}
	if f.gate && f.budget > gate.DefaultBudget {
		// As hooks install --gate says it: serve's own budget bounds
		// every review.
		b := settings.BudgetFlag(f.budget)
		if f.budget > gate.MaxWait {
			fmt.Fprintf(g.stderr, "note: a review waits at most %s, the API's limit on one request, whatever the hook's --budget: start serve with --review-budget %s for reviews to wait that long\n", gate.MaxWait, settings.BudgetFlag(gate.MaxWait))
		} else {
			fmt.Fprintf(g.stderr, "note: a review waits at most serve's --review-budget (default %s), whatever the hook's --budget: start serve with --review-budget %s for reviews to wait %s\n", settings.BudgetFlag(gate.DefaultBudget), b, b)
		}
	}
	if f.noService {
		argv, env, err := serveArgv(dd)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "== service")
		fmt.Fprintln(w, "none written (--no-service); start serve yourself, and again after each login:")
		fmt.Fprintf(w, "  %s\n", setup.CommandLine(argv, env))
	}
	fmt.Fprintln(w, "== board")
	switch si, ok := dd.dir().ReadServeInfo(); {
	case ok && si.Board != "" && doctor.ProcessAlive(si.PID):
		fmt.Fprintf(w, "%s (served by the logbook serve running now, pid %d)\n", si.Board, si.PID)
	case ok && doctor.ProcessAlive(si.PID):
		fmt.Fprintf(w, "the logbook serve running now (pid %d) serves no board (--http off); setup's service serves it on %s\n", si.PID, setup.BoardURL(setup.BoardAddr))
	default:
		fmt.Fprintf(w, "%s once serve runs (logbook serve --http %s)\n", setup.BoardURL(setup.BoardAddr), setup.BoardAddr)
		if c, err := net.DialTimeout("tcp", setup.BoardAddr, time.Second); err == nil {
			c.Close()
			fmt.Fprintf(w, "note: %s answers already, and no serve of %s runs: another program (another data dir's logbook serve?) holds that port, so this data dir's serve will refuse to start there; stop it, or give serve --http another address\n", setup.BoardAddr, dd)
		}
	}
	return nil
}

// serveArgv returns the service's command line: this binary's absolute
// path, serve on data dir dd with the board on setup.BoardAddr. Serve
// follows the agents' transcript folders by default, so the board shows
// the sessions already on the machine and those of an agent installed
// later; env holds the agents' folder variables (CLAUDE_CONFIG_DIR,
// CODEX_HOME) set where setup runs, as "NAME=VALUE", for the service to
// see them too.
func serveArgv(dd dataDir) (argv, env []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("the running binary's path: %w", err)
	}
	for _, a := range agents() {
		if v := os.Getenv(a.DirEnv); a.DirEnv != "" && v != "" {
			env = append(env, a.DirEnv+"="+v)
		}
	}
	return []string{self, "serve", "--data", string(dd), "--http", setup.BoardAddr}, env, nil
}

// setupUndo runs `logbook setup --undo`.
func setupUndo(cmd *cobra.Command, g *globals) error {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	manager, _ := setup.UserManager(cmd.Context())
	return setup.Undo(cmd.Context(), dd.dir(), manager, g.stdout)
}
