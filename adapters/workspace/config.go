package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/logbook-dev/logbook/events"
)

// ConfigFile is where a project keeps its workspace configuration,
// relative to the project's top level.
const ConfigFile = ".logbook/workspace.toml"

// ProjectConfig is a project's workspace configuration, TOML v1.0 in
// ConfigFile:
//
//	sync = [".env"]                    # copied into each new workspace
//	protected_sync = ["secrets.json"] # copied, then read-only to sandboxed commands
//	setup_commands = ["make deps"]    # run with sh -c, in order, as sandboxed commands
//	check = "make check"              # the pre-push check: sh -c, sandboxed (see Manager.Check)
//	check_timeout = "10m"             # Go duration, > 0 and ≤ 24h; default 10m
//	check_mode = "workspace_write"    # or "read_only"; default workspace_write
//
// Paths are relative to the project's top level and may not leave it.
// A project without the file has the zero ProjectConfig: no check.
type ProjectConfig struct {
	Sync          []string `toml:"sync"`
	ProtectedSync []string `toml:"protected_sync"`
	SetupCommands []string `toml:"setup_commands"`
	Check         string   `toml:"check"`
	CheckTimeout  string   `toml:"check_timeout"`
	CheckMode     string   `toml:"check_mode"`

	timeout time.Duration // CheckTimeout parsed
}

// DefaultCheckTimeout is a check's timeout when check_timeout is not set.
const DefaultCheckTimeout = 10 * time.Minute

// MaxCheckTimeout is the longest check_timeout taken.
const MaxCheckTimeout = 24 * time.Hour

// CheckLimit returns the check's timeout: check_timeout, else
// DefaultCheckTimeout.
func (c ProjectConfig) CheckLimit() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return DefaultCheckTimeout
}

// CheckSandbox returns the mode the check runs in: check_mode, else
// events.ModeWorkspaceWrite.
func (c ProjectConfig) CheckSandbox() string {
	if c.CheckMode != "" {
		return c.CheckMode
	}
	return events.ModeWorkspaceWrite
}

// LoadConfig reads dir's ConfigFile (readConfigFile: no symbolic link, no
// FIFO or device, at most MaxConfigFile bytes). A missing file is the zero
// ProjectConfig; unknown keys, a malformed file or a path leaving dir are
// errors naming the file.
func LoadConfig(dir string) (ProjectConfig, error) {
	name := filepath.Join(dir, ConfigFile)
	b, err := readConfigFile(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ProjectConfig{}, nil
	}
	if err != nil {
		return ProjectConfig{}, err
	}
	return ParseConfig(name, b)
}

// ParseConfig parses b, the contents of file name (used in errors).
func ParseConfig(name string, b []byte) (ProjectConfig, error) {
	var c ProjectConfig
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return ProjectConfig{}, fmt.Errorf("workspace config %s:%d:%d: %s", name, row, col, de.Error())
		}
		var se *toml.StrictMissingError
		if errors.As(err, &se) {
			return ProjectConfig{}, fmt.Errorf("workspace config %s: %s", name, strings.TrimSpace(se.String()))
		}
		return ProjectConfig{}, fmt.Errorf("workspace config %s: %w", name, err)
	}
	for _, list := range [][]string{c.Sync, c.ProtectedSync} {
		for _, p := range list {
			if err := relPath(p); err != nil {
				return ProjectConfig{}, fmt.Errorf("workspace config %s: %w", name, err)
			}
		}
	}
	for i, s := range c.SetupCommands {
		if strings.TrimSpace(s) == "" {
			return ProjectConfig{}, fmt.Errorf("workspace config %s: setup_commands[%d] is empty", name, i)
		}
	}
	if err := c.checkCheck(name); err != nil {
		return ProjectConfig{}, err
	}
	return c, nil
}

// checkCheck validates the check keys of c and parses its timeout.
func (c *ProjectConfig) checkCheck(name string) error {
	if strings.ContainsRune(c.Check, 0) {
		return fmt.Errorf("workspace config %s: check holds a NUL byte", name)
	}
	if c.Check == "" && (c.CheckTimeout != "" || c.CheckMode != "") {
		return fmt.Errorf("workspace config %s: check_timeout or check_mode without a check: name the check's command (check = \"...\")", name)
	}
	if c.Check != "" && strings.TrimSpace(c.Check) == "" {
		return fmt.Errorf("workspace config %s: check is blank: name the check's command, or remove the key for no check", name)
	}
	if c.CheckTimeout != "" {
		d, err := time.ParseDuration(c.CheckTimeout)
		if err != nil || d <= 0 || d > MaxCheckTimeout {
			return fmt.Errorf("workspace config %s: check_timeout %q: want a duration such as \"90s\" or \"10m\", more than 0 and at most %s", name, c.CheckTimeout, MaxCheckTimeout)
		}
		c.timeout = d
	}
	switch c.CheckMode {
	case "", events.ModeReadOnly, events.ModeWorkspaceWrite:
	default:
		return fmt.Errorf("workspace config %s: check_mode %q: want %s or %s (a check never runs unconfined)", name, c.CheckMode, events.ModeWorkspaceWrite, events.ModeReadOnly)
	}
	return nil
}

// relPath reports a path that is empty, absolute, or leaves its root.
func relPath(p string) error {
	c := filepath.Clean(p)
	if p == "" || filepath.IsAbs(p) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
		return fmt.Errorf("sync path %q: want a path inside the project", p)
	}
	return nil
}
