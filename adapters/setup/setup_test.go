package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

func TestUnitText(t *testing.T) {
	got := string(UnitText([]string{"/opt/log book/logbook", "serve", "--data", "/home/u/100%/data", "--http", BoardAddr}, []string{"CLAUDE_CONFIG_DIR=/home/u/my claude"}))
	want := `# Written by logbook setup; logbook setup --undo disables and removes it.
[Unit]
Description=Logbook: the log, projections, hooks and board of coding-agent sessions

[Service]
Environment="CLAUDE_CONFIG_DIR=/home/u/my claude"
ExecStart="/opt/log book/logbook" serve --data /home/u/100%%/data --http 127.0.0.1:7070
Restart=on-failure
RestartSec=2s

[Install]
WantedBy=default.target
`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("UnitText (-want +got):\n%s", d)
	}
	if got, want := ShellLine([]string{"/opt/log book/logbook", "serve", "--watch", "/home/u/it's"}), `'/opt/log book/logbook' serve --watch '/home/u/it'\''s'`; got != want {
		t.Errorf("ShellLine = %s, want %s", got, want)
	}
}

// TestUserManager_None: with no systemctl to run, no user manager
// answers, and the reason says so.
func TestUserManager_None(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ok, why := UserManager(t.Context())
	if ok || !strings.Contains(why, "systemctl") {
		t.Errorf("UserManager with no systemctl = %v, %q; want false, naming systemctl", ok, why)
	}
}

// TestUnitPath follows $XDG_CONFIG_HOME when it is absolute, else the
// home directory's .config.
func TestUnitPath(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if p, err := UnitPath(); err != nil || p != "/cfg/systemd/user/logbook.service" {
		t.Errorf("UnitPath = %s, %v", p, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative")
	if p, err := UnitPath(); err != nil || p != "/home/u/.config/systemd/user/logbook.service" {
		t.Errorf("UnitPath with a relative XDG_CONFIG_HOME = %s, %v", p, err)
	}
}

// newOpts returns options that wire no hooks into a settings file that
// does not exist (nothing to change there) and a unit under a temporary
// config dir, with a user manager said to answer: NewPlan only reads.
func newOpts(t *testing.T) Options {
	dir := t.TempDir()
	return Options{
		DataDir:  datadir.Dir(filepath.Join(dir, "data")),
		Settings: filepath.Join(dir, "home", ".claude", "settings.json"),
		Serve:    []string{"/usr/local/bin/logbook", "serve", "--http", BoardAddr},
		UnitPath: filepath.Join(dir, "config", "systemd", "user", UnitName),
		Manager:  true,
	}
}

// TestNewPlan_Unit: a unit is to be written when there is none; setup's
// own, enabled, is left unchanged; one setup did not write, or one edited
// since, is left as it is; setup's older one is rewritten.
func TestNewPlan_Unit(t *testing.T) {
	opts := newOpts(t)
	text := UnitText(opts.Serve, opts.ServeEnv)
	plan := func() *Plan {
		t.Helper()
		p, err := NewPlan(opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	shown := func(p *Plan) string {
		var b bytes.Buffer
		p.Show(&b)
		return b.String()
	}
	if p := plan(); p.unit != unitNew || p.Empty() || !strings.Contains(shown(p), "will write "+opts.UnitPath+":\n  # Written by logbook setup") {
		t.Errorf("no unit: step %d, Empty %v, shown:\n%s", p.unit, p.Empty(), shown(p))
	}
	write := func(b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(opts.UnitPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(opts.UnitPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(text)
	if p := plan(); p.unit != unitForeign || !p.Empty() || !strings.Contains(shown(p), "not as setup wrote it: left as it is") {
		t.Errorf("a unit setup did not record: step %d, Empty %v, shown:\n%s", p.unit, p.Empty(), shown(p))
	}
	m := Manifest{Unit: &UnitRecord{Path: opts.UnitPath, SHA256: digest(text), Enabled: true}}
	if err := writeManifest(opts.DataDir, &m); err != nil {
		t.Fatal(err)
	}
	if p := plan(); p.unit != unitSame || !p.Empty() || !strings.Contains(shown(p), "written by setup and enabled; unchanged") {
		t.Errorf("setup's unit: step %d, Empty %v, shown:\n%s", p.unit, p.Empty(), shown(p))
	}
	write(append(text, "# mine\n"...))
	if p := plan(); p.unit != unitForeign {
		t.Errorf("setup's unit, edited: step %d, want left as it is", p.unit)
	}
	write(text)
	opts.Serve = append(opts.Serve, "--watch", "/home/u/.claude/projects")
	if p := plan(); p.unit != unitUpdate || p.Empty() || !strings.Contains(shown(p), "will rewrite") {
		t.Errorf("setup's unit for another command line: step %d, Empty %v, shown:\n%s", p.unit, p.Empty(), shown(p))
	}
	opts.Manager, opts.ManagerWhy = false, "no bus"
	opts.ServeEnv = []string{"CODEX_HOME=/home/u/it's"}
	if p := plan(); p.unit != unitNoManager || !p.Empty() || !strings.Contains(shown(p), "no systemd user manager answers (no bus), so no unit is written; start serve yourself, and again after each login:\n  CODEX_HOME='/home/u/it'\\''s' /usr/local/bin/logbook serve --http 127.0.0.1:7070 --watch /home/u/.claude/projects\n") {
		t.Errorf("no user manager: step %d, Empty %v, shown:\n%s", p.unit, p.Empty(), shown(p))
	}
}

// TestUndo_UnitWithoutManager: with no user manager to ask, undo removes
// the link that enabled setup's unit and the unit itself, then the
// manifest and the data dir setup created; a unit edited since is left.
func TestUndo_UnitWithoutManager(t *testing.T) {
	for _, edited := range []bool{false, true} {
		opts := newOpts(t)
		text := UnitText(opts.Serve, opts.ServeEnv)
		wants := filepath.Join(filepath.Dir(opts.UnitPath), "default.target.wants")
		if err := os.MkdirAll(wants, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(wants, UnitName)
		if err := os.Symlink(opts.UnitPath, link); err != nil {
			t.Fatal(err)
		}
		m := Manifest{Unit: &UnitRecord{Path: opts.UnitPath, SHA256: digest(text), Enabled: true}}
		if err := writeManifest(opts.DataDir, &m); err != nil {
			t.Fatal(err)
		}
		if edited {
			text = append(text, "Environment=A=1\n"...)
		}
		if err := os.WriteFile(opts.UnitPath, text, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Undo(t.Context(), opts.DataDir, false, &out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(link); !os.IsNotExist(err) {
			t.Errorf("edited %v: the link that enables the unit is left: %v", edited, err)
		}
		_, err := os.Stat(opts.UnitPath)
		if edited != (err == nil) {
			t.Errorf("edited %v: unit file: %v\n%s", edited, err, out.String())
		}
		if edited && !strings.Contains(out.String(), "edited since setup wrote it: left as it is") {
			t.Errorf("an edited unit left without a word:\n%s", out.String())
		}
		if _, err := os.Stat(string(opts.DataDir)); !os.IsNotExist(err) {
			t.Errorf("edited %v: the data dir setup created is left: %v", edited, err)
		}
	}
}

// TestReadManifest_NotOne names the manifest, the line and the column.
func TestReadManifest_NotOne(t *testing.T) {
	dd := datadir.Dir(t.TempDir())
	if err := os.WriteFile(dd.Path(ManifestName), []byte("{\n  \"unit\": 3\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := ReadManifest(dd)
	if err == nil || !strings.Contains(err.Error(), dd.Path(ManifestName)+": line 2, column 11") {
		t.Errorf("ReadManifest of a bad one: %v", err)
	}
	var out bytes.Buffer
	if err := Undo(t.Context(), dd, false, &out); err == nil {
		t.Errorf("Undo on a bad manifest: no error; said:\n%s", out.String())
	}
	if _, err := os.Stat(dd.Path(ManifestName)); err != nil {
		t.Errorf("a bad manifest was not left as it is: %v", err)
	}
}
