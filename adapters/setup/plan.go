package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/doctor"
)

// Options are what a setup run wires, as the binary works them out.
type Options struct {
	// DataDir is the data dir: the manifest goes there.
	DataDir datadir.Dir
	// Settings is the settings.json to wire (settings.UserSettings).
	Settings string
	// Self is the running binary's path (settings.Self): Logbook's hooks
	// are known by it.
	Self string
	// Wires are the hook commands to write (settings.InstallWires).
	Wires settings.Wires
	// Serve is the service's command line, an absolute program path and
	// its arguments; nil: no service (--no-service).
	Serve []string
	// ServeEnv holds the service's environment variables beyond the
	// user manager's, each "NAME=VALUE".
	ServeEnv []string
	// UnitPath is where the unit file goes (UnitPath).
	UnitPath string
	// Manager reports whether a systemd user manager answers
	// (UserManager); without one no unit is written, and ManagerWhy says
	// why there is none.
	Manager    bool
	ManagerWhy string
}

// unitStep is what a run does about the unit file.
type unitStep int

const (
	unitNone      unitStep = iota // no service asked for
	unitNoManager                 // no systemd user manager: say how to start serve
	unitSame                      // the unit setup wrote is there and enabled
	unitEnable                    // the unit setup wrote is there, not enabled yet
	unitNew                       // write a new unit, enable and start it
	unitUpdate                    // rewrite setup's unit, enable and restart it
	unitForeign                   // a unit setup did not write, or one edited since: left
)

// Plan is what a setup run would change, computed by NewPlan without
// writing anything; Apply makes it. A Plan is for one Apply.
type Plan struct {
	opts     Options
	manifest Manifest
	hooks    *settings.Change // nil: the settings are wired already
	unit     unitStep
	unitText []byte
	// running is the pid of a serve that already runs on the data dir
	// while the unit is to be started: its serve would find the data dir
	// locked. 0 for none.
	running int
}

// NewPlan reads the manifest, the settings file and the unit file and
// returns what a run with opts would change. Errors: a manifest that is
// not one (ReadManifest), a settings file that is not Claude Code's
// settings (settings.Plan: it names the file, line and column), a
// manifest that records another settings file, or a unit file that
// cannot be read.
func NewPlan(opts Options) (*Plan, error) {
	m, _, err := ReadManifest(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if m.Settings != nil && m.Settings.Path != opts.Settings {
		return nil, fmt.Errorf("%s records a setup of %s, not %s: run logbook setup --undo first", opts.DataDir.Path(ManifestName), m.Settings.Path, opts.Settings)
	}
	p := &Plan{opts: opts, manifest: m}
	c, err := settings.Plan(opts.Settings, opts.Wires, opts.Self)
	if err != nil {
		return nil, err
	}
	if !c.Unchanged() {
		p.hooks = c
	}
	if opts.Serve == nil {
		return p, nil
	}
	if !opts.Manager {
		p.unit = unitNoManager
		return p, nil
	}
	p.unitText = UnitText(opts.Serve, opts.ServeEnv)
	cur, err := os.ReadFile(opts.UnitPath)
	rec := m.Unit
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.unit = unitNew
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", opts.UnitPath, err)
	case rec == nil || rec.Path != opts.UnitPath || digest(cur) != rec.SHA256:
		p.unit = unitForeign
	case bytes.Equal(cur, p.unitText) && rec.Enabled:
		p.unit = unitSame
	case bytes.Equal(cur, p.unitText):
		p.unit = unitEnable
	default:
		p.unit = unitUpdate
	}
	if p.unit == unitNew || p.unit == unitEnable {
		if si, ok := opts.DataDir.ReadServeInfo(); ok && doctor.ProcessAlive(si.PID) {
			p.running = si.PID
		}
	}
	return p, nil
}

// Empty reports whether the run changes nothing.
func (p *Plan) Empty() bool {
	return p.hooks == nil && (p.unit == unitNone || p.unit == unitNoManager || p.unit == unitSame || p.unit == unitForeign)
}

// Show writes to w what Apply will do, step by step: the settings file's
// diff (or that it is wired already) and the unit to write (or why there
// is none, with the command line that starts serve by hand).
func (p *Plan) Show(w io.Writer) {
	say(w, "== hooks")
	if p.hooks == nil {
		say(w, "%s: Logbook's hooks are wired already; unchanged", p.opts.Settings)
	} else {
		p.hooks.WriteDiff(w)
	}
	if p.unit == unitNone {
		return
	}
	say(w, "== service")
	switch p.unit {
	case unitNoManager:
		say(w, "no systemd user manager answers (%s), so no unit is written; start serve yourself, and again after each login:", p.opts.ManagerWhy)
		say(w, "  %s", CommandLine(p.opts.Serve, p.opts.ServeEnv))
	case unitSame:
		say(w, "%s: written by setup and enabled; unchanged", p.opts.UnitPath)
	case unitForeign:
		say(w, "%s: there already, and not as setup wrote it: left as it is (move it aside and run setup again for setup's)", p.opts.UnitPath)
	case unitEnable:
		say(w, "%s: written by setup; will run systemctl --user daemon-reload, then enable --now %s", p.opts.UnitPath, UnitName)
	case unitNew, unitUpdate:
		verb := "will write"
		if p.unit == unitUpdate {
			verb = "will rewrite"
		}
		say(w, "%s %s:", verb, p.opts.UnitPath)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(string(p.unitText), "\n"), "\n") {
			fmt.Fprintf(w, "  %s", l)
		}
		fmt.Fprintln(w)
		then := "enable --now " + UnitName
		if p.unit == unitUpdate {
			then += ", restart " + UnitName
		}
		say(w, "then run systemctl --user daemon-reload, %s", then)
	}
	if p.running != 0 {
		say(w, "note: a serve (pid %d) already runs on %s: the service's serve cannot start beside it; stop that one (kill %d), then systemctl --user restart %s", p.running, p.opts.DataDir, p.running, UnitName)
	}
}

// Apply makes the plan, saying each change on w: it writes the settings
// file (backing the old one up beside it) and records it in the manifest,
// then writes the unit file, records it, and runs systemctl --user
// daemon-reload and enable --now (and restart, for a unit it rewrote),
// recording that the unit is enabled. A step that fails ends the run
// with its error; what earlier steps did is recorded, so `setup --undo`
// takes it out.
func (p *Plan) Apply(ctx context.Context, w io.Writer) error {
	if p.hooks != nil {
		if err := p.applyHooks(w); err != nil {
			return err
		}
	}
	switch p.unit {
	case unitNew, unitUpdate:
		if err := os.MkdirAll(filepath.Dir(p.opts.UnitPath), 0o755); err != nil {
			return fmt.Errorf("unit: %w", err)
		}
		if err := datadir.WriteFileAtomic(p.opts.UnitPath, p.unitText, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p.opts.UnitPath, err)
		}
		p.manifest.Unit = &UnitRecord{Path: p.opts.UnitPath, SHA256: digest(p.unitText)}
		if err := writeManifest(p.opts.DataDir, &p.manifest); err != nil {
			return err
		}
		say(w, "wrote %s", p.opts.UnitPath)
		fallthrough
	case unitEnable:
		steps := [][]string{{"daemon-reload"}, {"enable", "--now", UnitName}}
		if p.unit == unitUpdate {
			steps = append(steps, []string{"restart", UnitName})
		}
		for _, s := range steps {
			if _, err := systemctl(ctx, s...); err != nil {
				return err
			}
		}
		p.manifest.Unit.Enabled = true
		if err := writeManifest(p.opts.DataDir, &p.manifest); err != nil {
			return err
		}
		say(w, "enabled and started %s (systemctl --user status %s; journalctl --user -u %s for its log)", UnitName, UnitName, UnitName)
	}
	if !p.Empty() {
		say(w, "recorded in %s: logbook setup --undo takes out what setup added", p.opts.DataDir.Path(ManifestName))
	}
	return nil
}

// applyHooks writes the settings change and records it.
func (p *Plan) applyHooks(w io.Writer) error {
	c := p.hooks
	// The outermost directory of the file's that is not there yet, which
	// the write makes.
	made := ""
	for d := filepath.Dir(c.Target); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			break
		}
		made = d
	}
	backup, err := c.Write()
	if backup != "" {
		say(w, "backed up the old file to %s", backup)
	}
	if err != nil {
		if backup != "" {
			os.Remove(backup) // nothing was changed: no backup to keep
		}
		return err
	}
	rec := p.manifest.Settings
	switch {
	case rec == nil:
		rec = &SettingsRecord{Path: c.Path, Created: !c.Existed, CreatedDir: made, Backup: backup}
		if c.Existed {
			rec.BackupSHA256 = digest(c.Old)
		}
	default:
		if backup != "" {
			rec.Backups = append(rec.Backups, backup)
		}
		if digest(c.Old) != rec.WroteSHA256 {
			// Edited since setup wrote it: the file before setup is no
			// longer the one to go back to.
			rec.Created, rec.BackupSHA256 = false, ""
		}
	}
	rec.WroteSHA256, rec.Hooks = digest(c.New), settings.Added(p.opts.Wires)
	p.manifest.Settings = rec
	if err := writeManifest(p.opts.DataDir, &p.manifest); err != nil {
		return err
	}
	if c.Target != c.Path {
		say(w, "wrote %s (%s links to it)", c.Target, c.Path)
	} else {
		say(w, "wrote %s", c.Path)
	}
	say(w, "wired %d hook events", len(rec.Hooks))
	return nil
}

// CommandLine returns argv as one sh command line to type, after env's
// assignments ("NAME=VALUE" each), every word quoted when it needs to
// be.
func CommandLine(argv, env []string) string { return envLine(env) + ShellLine(argv) }

// envLine returns env ("NAME=VALUE" each) as sh assignments to put before
// a command, each value quoted when it needs to be, ending in a space; ""
// when env is empty.
func envLine(env []string) string {
	var b strings.Builder
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		b.WriteString(name + "=" + ShellLine([]string{value}) + " ")
	}
	return b.String()
}
