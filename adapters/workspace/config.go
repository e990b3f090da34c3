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

// ParseConfig parses b, the contents of file name (used in errors). A
// fault is an error "workspace config <name>:<line>[:<col>]: <what>" naming
// the line of the offending key (its first line when the key cannot be
// found): TOML syntax, an unknown key, a value of the wrong type, a sync
// path leaving the project, an empty setup command, and check,
// check_timeout and check_mode as checkCheck refuses them. check = "" is
// refused, not read as no check: a project with no check has no check key.
func ParseConfig(name string, b []byte) (ProjectConfig, error) {
	var c ProjectConfig
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) && len(se.Errors) > 0 {
			e := se.Errors[0]
			row, col := e.Position()
			return ProjectConfig{}, fmt.Errorf("workspace config %s:%d:%d: unknown key %s: want sync, protected_sync, setup_commands, check, check_timeout or check_mode", name, row, col, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return ProjectConfig{}, fmt.Errorf("workspace config %s:%d:%d: %s", name, row, col, de.Error())
		}
		return ProjectConfig{}, fmt.Errorf("workspace config %s: %w", name, err)
	}
	lines := strings.Split(string(b), "\n")
	fault := func(key, format string, a ...any) error {
		return fmt.Errorf("workspace config %s:%d: %s", name, keyLine(lines, key), fmt.Sprintf(format, a...))
	}
	for _, k := range []struct {
		key  string
		list []string
	}{{"sync", c.Sync}, {"protected_sync", c.ProtectedSync}} {
		for _, p := range k.list {
			if err := relPath(p); err != nil {
				return ProjectConfig{}, fault(k.key, "%s: %v", k.key, err)
			}
		}
	}
	for i, s := range c.SetupCommands {
		if strings.TrimSpace(s) == "" {
			return ProjectConfig{}, fault("setup_commands", "setup_commands[%d] is empty", i)
		}
	}
	var keys map[string]any
	if err := toml.Unmarshal(b, &keys); err != nil {
		return ProjectConfig{}, fmt.Errorf("workspace config %s: %w", name, err)
	}
	_, hasCheck := keys["check"]
	if err := c.checkCheck(hasCheck, fault); err != nil {
		return ProjectConfig{}, err
	}
	return c, nil
}

// keyLine returns the 1-based line of lines where top-level key is set
// (key = …, bare or quoted), or 1 when none is found.
func keyLine(lines []string, key string) int {
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			break
		}
		for _, k := range []string{key, `"` + key + `"`, "'" + key + "'"} {
			if rest, ok := strings.CutPrefix(l, k); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
				return i + 1
			}
		}
	}
	return 1
}

// checkCheck validates the check keys of c (hasCheck: the file sets the
// check key, perhaps to "") and parses its timeout; fault makes an error
// naming a key's line.
func (c *ProjectConfig) checkCheck(hasCheck bool, fault func(key, format string, a ...any) error) error {
	if strings.ContainsRune(c.Check, 0) {
		return fault("check", "check holds a NUL byte")
	}
	if hasCheck && c.Check == "" {
		return fault("check", "check is empty; remove the key to have no check")
	}
	if c.Check != "" && strings.TrimSpace(c.Check) == "" {
		return fault("check", "check is blank: name the check's command, or remove the key to have no check")
	}
	if c.Check == "" && c.CheckTimeout != "" {
		return fault("check_timeout", "check_timeout without a check: name the check's command (check = \"...\")")
	}
	if c.Check == "" && c.CheckMode != "" {
		return fault("check_mode", "check_mode without a check: name the check's command (check = \"...\")")
	}
	if c.CheckTimeout != "" {
		d, err := time.ParseDuration(c.CheckTimeout)
		if err != nil || d <= 0 || d > MaxCheckTimeout {
			return fault("check_timeout", "check_timeout %q: want a duration such as \"90s\" or \"10m\", more than 0 and at most %s", c.CheckTimeout, MaxCheckTimeout)
		}
		c.timeout = d
	}
	switch c.CheckMode {
	case "", events.ModeReadOnly, events.ModeWorkspaceWrite:
	default:
		return fault("check_mode", "check_mode %q: want %s or %s (a check never runs unconfined)", c.CheckMode, events.ModeWorkspaceWrite, events.ModeReadOnly)
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
