package datadir

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/datadir/locate"
)

// Resolve picks the data directory, as an absolute path: flag (--data)
// when not empty, then $LOGBOOK_DATA, then $XDG_DATA_HOME/logbook, then
// ~/.local/share/logbook. It creates nothing. A path that is a file, or
// under one, is refused with an error naming it and the fix (give
// --data or $LOGBOOK_DATA a directory); so is a home it cannot find.
func Resolve(flag string) (Dir, error) {
	abs, err := locate.Path(flag)
	if err != nil {
		return "", err
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
