package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
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

// dir returns d as a datadir.Dir.
func (d dataDir) dir() datadir.Dir { return datadir.Dir(d) }

// ensure creates the data dir (datadir.Dir.Ensure).
func (d dataDir) ensure() error { return d.dir().Ensure() }

// ownerError names the owner of a data dir of another user's, and the
// fix (datadir.Dir.OwnerError).
func (d dataDir) ownerError(st fs.FileInfo) error { return d.dir().OwnerError(st) }

// ownerFix is what to do about a data dir of another user's.
const ownerFix = hookspool.OwnerFix

// tighten takes group and other permissions away (datadir.Dir.Tighten).
func (d dataDir) tighten() error { return d.dir().Tighten() }

// lock takes the data dir's exclusive lock without waiting
// (datadir.Dir.Lock); its error wraps datadir.ErrBusy when another
// process has it.
func (d dataDir) lock(role string) (*os.File, error) { return d.dir().Lock(role) }

// lockOver is lock that asks a reader holding it to give it up
// (datadir.Dir.LockOver).
func (d dataDir) lockOver(ctx context.Context, role string, wait func(holder string)) (*os.File, error) {
	return d.dir().LockOver(ctx, role, wait)
}

// handoverWanted reports whether a process waits for the lock
// (datadir.Dir.HandoverWanted).
func (d dataDir) handoverWanted() bool { return d.dir().HandoverWanted() }

// serveInfo says where a running server listens.
type serveInfo = datadir.ServeInfo

// readServeInfo returns the running server's serve.json
// (datadir.Dir.ReadServeInfo); false when there is none to read.
func (d dataDir) readServeInfo() (serveInfo, bool) { return d.dir().ReadServeInfo() }

// writeServeInfo writes serve.json (datadir.Dir.WriteServeInfo).
func (d dataDir) writeServeInfo(si serveInfo) error { return d.dir().WriteServeInfo(si) }

// writeFileAtomic writes b to path whole (datadir.WriteFileAtomic).
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	return datadir.WriteFileAtomic(path, b, mode)
}

// writeFileNew writes b to a path that must not exist
// (datadir.WriteFileNew).
func writeFileNew(path string, b []byte, mode os.FileMode) error {
	return datadir.WriteFileNew(path, b, mode)
}
