package main

import (
	"os"
	"path/filepath"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// dataDir is Logbook's data directory: its layout, lock and files are
// datadir.Dir's; the methods here are the names cmd calls them by.
type dataDir string

func (d dataDir) path(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// resolveDataDir picks the data directory: the flag, then $LOGBOOK_DATA,
// then $XDG_DATA_HOME/logbook, then ~/.local/share/logbook
// (datadir.Resolve).
func resolveDataDir(flag string) (dataDir, error) {
	d, err := datadir.Resolve(flag)
	return dataDir(d), err
}

// private returns the directories no transcript is read from
// (ingest.CheckPrivate): d, and the data dir Logbook's commands use when
// none is named (--data, $LOGBOOK_DATA, ~/.local/share/logbook), when it
// is another, so that a hard link to one of its files is refused too.
// Any other data dir a serve has run on is refused by its look.
func (d dataDir) private() []string {
	dirs := []string{string(d)}
	if def, err := datadir.Resolve(""); err == nil && string(def) != string(d) {
		dirs = append(dirs, string(def))
	}
	return dirs
}

// dir returns d as a datadir.Dir.
func (d dataDir) dir() datadir.Dir { return datadir.Dir(d) }

// ensure creates the data dir (datadir.Dir.Ensure).
func (d dataDir) ensure() error { return d.dir().Ensure() }

// lock takes the data dir's exclusive lock without waiting
// (datadir.Dir.Lock); its error wraps datadir.ErrBusy when another
// process has it.
func (d dataDir) lock(role string) (*os.File, error) { return d.dir().Lock(role) }

// readServeInfo returns the running server's serve.json
// (datadir.Dir.ReadServeInfo); false when there is none to read.
func (d dataDir) readServeInfo() (datadir.ServeInfo, bool) { return d.dir().ReadServeInfo() }
