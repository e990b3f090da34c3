package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
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
//
// Paths are relative to the project's top level and may not leave it.
// A project without the file has the zero ProjectConfig.
type ProjectConfig struct {
	Sync          []string `toml:"sync"`
	ProtectedSync []string `toml:"protected_sync"`
	SetupCommands []string `toml:"setup_commands"`
}

// LoadConfig reads dir's ConfigFile. A missing file is the zero ProjectConfig;
// unknown keys, a malformed file or a path leaving dir are errors naming
// the file.
func LoadConfig(dir string) (ProjectConfig, error) {
	name := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ProjectConfig{}, nil
	}
	if err != nil {
		return ProjectConfig{}, fmt.Errorf("workspace config: %w", err)
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
	return c, nil
}

// relPath reports a path that is empty, absolute, or leaves its root.
func relPath(p string) error {
	c := filepath.Clean(p)
	if p == "" || filepath.IsAbs(p) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
		return fmt.Errorf("sync path %q: want a path inside the project", p)
	}
	return nil
}
