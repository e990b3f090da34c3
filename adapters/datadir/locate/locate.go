// Package locate finds the data directory's path the way every Logbook
// binary does. It imports only the standard library's os and path/filepath,
// so logbook-hook, which starts for every hook event, can link it without
// the rest of adapters/datadir.
package locate

import (
	"fmt"
	"os"
	"path/filepath"
)

// Path returns the data directory as an absolute path: flag (--data) when
// not empty, then $LOGBOOK_DATA, then $XDG_DATA_HOME/logbook, then
// ~/.local/share/logbook. It neither creates nor checks the directory. The
// error names what was missing: a home directory that cannot be found, or
// a working directory that cannot be read to make a relative flag
// absolute.
func Path(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("LOGBOOK_DATA")
	}
	if dir == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			dir = filepath.Join(x, "logbook")
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("data dir: %w (set --data or LOGBOOK_DATA)", err)
		}
		dir = filepath.Join(home, ".local", "share", "logbook")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data dir %s: %w", dir, err)
	}
	return abs, nil
}
