package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Resolve picks the data directory, as an absolute path: flag (--data)
// when not empty, then $LOGBOOK_DATA, then $XDG_DATA_HOME/logbook, then
// ~/.local/share/logbook. It creates nothing. A path that is a file, or
// under one, is refused with an error naming it and the fix (give
// --data or $LOGBOOK_DATA a directory); so is a home it cannot find.
func Resolve(flag string) (Dir, error) {
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
	// A data dir that is a file (a mistyped --data naming one) is
	// refused here, before anything looks for what is inside it.
	switch st, err := os.Stat(abs); {
	case err == nil && !st.IsDir():
		return "", fmt.Errorf("data dir %s is not a directory: give --data (or $LOGBOOK_DATA) a directory, new or holding Logbook data", abs)
	case errors.Is(err, syscall.ENOTDIR):
		return "", fmt.Errorf("data dir %s: a part of its path is a file, not a directory: give --data (or $LOGBOOK_DATA) a directory", abs)
	}
	return Dir(abs), nil
}
