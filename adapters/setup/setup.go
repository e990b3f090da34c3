// Package setup wires Logbook into one user's machine in one step, as
// `logbook setup` does, and takes out exactly what that step added
// (`logbook setup --undo`): Logbook's hooks in Claude Code's settings.json
// (package settings makes the edit) and serve as a systemd user service
// (a unit file, enabled and started through `systemctl --user`).
//
// What a run added is recorded in a manifest in the data dir
// (ManifestName): the hook entries with the digests of the settings file
// before and after, its backup, the unit file with its digest, and
// whether the unit was enabled. Undo reads it and takes out only what it
// names, and only what is still as setup left it.
//
// A Plan is computed first and writes nothing, so the caller can show it
// and ask before Apply writes. Functions here run systemctl and touch the
// file system; none is safe to run concurrently with another run on the
// same data dir or home directory.
package setup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
)

// ManifestName is the manifest's file name in the data dir: setup.json,
// mode 0600.
const ManifestName = "setup.json"

// UnitName is the name of the systemd user unit setup writes.
const UnitName = "logbook.service"

// BoardAddr is the loopback host:port the unit's serve serves its HTTP
// API and board on.
const BoardAddr = "127.0.0.1:7070"

// BoardURL returns the board's URL for serve's --http address addr
// (host:port): "http://addr/".
func BoardURL(addr string) string { return "http://" + addr + "/" }

// Manifest is what setup added, as recorded in ManifestName. A nil
// member means setup added nothing of that kind.
type Manifest struct {
	Settings *SettingsRecord `json:"settings,omitempty"`
	Unit     *UnitRecord     `json:"unit,omitempty"`
	// DataDir is set when setup created the data dir (for the
	// manifest): undo removes it when nothing else is in it.
	DataDir bool `json:"created_data_dir,omitempty"`
}

// SettingsRecord is what setup changed in one settings.json.
type SettingsRecord struct {
	// Path is the settings file as named (~/.claude/settings.json); the
	// file written is where its symlinks lead (settings.Target).
	Path string `json:"path"`
	// Created is set when there was no file before setup.
	Created bool `json:"created,omitempty"`
	// CreatedDir is the outermost directory setup made for the file
	// (~/.claude when there was none), "" when its directory was there:
	// undo removes it, and those between it and the file, when nothing
	// else was put in them since.
	CreatedDir string `json:"created_dir,omitempty"`
	// Backup is the copy of the file before setup's first change
	// (settings.WriteBackup), BackupSHA256 its SHA-256 in hex.
	Backup       string `json:"backup,omitempty"`
	BackupSHA256 string `json:"backup_sha256,omitempty"`
	// Backups are the copies later runs made of the file as an earlier
	// run left it; undo removes them with Backup.
	Backups []string `json:"backups,omitempty"`
	// WroteSHA256 is the SHA-256 (hex) of the file as setup last wrote it.
	WroteSHA256 string `json:"wrote_sha256"`
	// Hooks are the entries setup's last write added.
	Hooks []settings.Hook `json:"hooks"`
}

// UnitRecord is the unit file setup wrote.
type UnitRecord struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`  // of the content written, hex
	Enabled bool   `json:"enabled"` // `systemctl --user enable --now` succeeded
}

// ReadManifest returns the manifest in data dir dd; ok is false when
// there is none. A manifest that cannot be read or is not a manifest is
// an error naming its path, line and column.
func ReadManifest(dd datadir.Dir) (m Manifest, ok bool, err error) {
	path := dd.Path(ManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, false, nil
	}
	if err != nil {
		return Manifest{}, false, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return Manifest{}, false, fmt.Errorf("%s: %w; move it aside to start afresh (setup --undo then knows nothing of an earlier setup)", path, jsonfault.Fault(b, err, "the manifest"))
	}
	return m, true, nil
}

// writeManifest writes *m whole as dd's manifest (0600), creating the
// data dir when absent (and marking m so); an m that records neither
// settings nor a unit removes the manifest, and the data dir too when m
// says setup created it and nothing else is in it.
func writeManifest(dd datadir.Dir, m *Manifest) error {
	path := dd.Path(ManifestName)
	if m.Settings == nil && m.Unit == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		if m.DataDir {
			os.Remove(string(dd)) // fails, as it should, when serve has filled it
		}
		return nil
	}
	if _, err := os.Stat(string(dd)); errors.Is(err, fs.ErrNotExist) {
		m.DataDir = true
	}
	if err := dd.Ensure(); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := datadir.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// digest returns the SHA-256 of b in hex.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// UnitPath returns where the user's systemd unit goes:
// $XDG_CONFIG_HOME/systemd/user/logbook.service when $XDG_CONFIG_HOME is
// an absolute path, else ~/.config/systemd/user/logbook.service. The
// error is the home directory's, when it is needed and not known.
func UnitPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "systemd", "user", UnitName), nil
}

// UnitText returns the unit file that runs argv (an absolute program path
// and its arguments) as the user's service, with env ("NAME=VALUE" each)
// added to its environment: restarted 2 s after a failure, started with
// the user's session (default.target). Each word is quoted as systemd
// reads ExecStart and Environment when it needs to be.
func UnitText(argv, env []string) []byte {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = systemdWord(a)
	}
	var envLines string
	for _, e := range env {
		envLines += "Environment=" + systemdWord(e) + "\n"
	}
	return []byte(`# Written by logbook setup; logbook setup --undo disables and removes it.
[Unit]
Description=Logbook: the log, projections, hooks and board of coding-agent sessions

[Service]
` + envLines + `ExecStart=` + strings.Join(words, " ") + `
Restart=on-failure
RestartSec=2s

[Install]
WantedBy=default.target
`)
}

// systemdWord quotes s for an ExecStart line when it holds anything but
// safe characters: in double quotes, with \ and " escaped, and % and $
// doubled (systemd's specifier and variable signs).
func systemdWord(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%$", r))
	}) < 0 {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ShellLine returns argv as one sh command line, each word quoted when it
// needs to be: what to type to run it.
func ShellLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
		}) < 0 {
			words[i] = a
			continue
		}
		words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// UserManager reports whether a systemd user manager answers for this
// user: `systemctl --user show-environment` exits 0. When it does not,
// why says what failed (systemctl not found, or its message).
func UserManager(ctx context.Context) (ok bool, why string) {
	if _, err := systemctl(ctx, "show-environment"); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// systemctl runs `systemctl --user args...` and returns its output; the
// error names the command and holds what it printed.
func systemctl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "systemctl", append([]string{"--user"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return out, fmt.Errorf("systemctl --user %s: %s", strings.Join(args, " "), msg)
	}
	return out, nil
}

// say writes one line of progress to w.
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format+"\n", args...)
}
