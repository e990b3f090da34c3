package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/events"
)

// SkipIndex remembers, per transcript file, the size, modification time
// and last imported line (its fingerprint: offsets and SHA-256) of the
// file when an import of it left nothing behind: every complete line in
// the log, no torn tail, no warning. An import of the file into the same
// session then skips it without loading the session from the log as long
// as its size and modification time are the same and the bytes the
// fingerprint names still hash the same (CheckFingerprint). Any other
// file, or a changed one, is imported as without the index.
//
// An index holds for one incarnation of the log (Stream, such as the
// stream's creation time): opened for another, it starts empty, so a log
// deleted and created again is never taken for the one the files were
// imported into. It is safe for concurrent use; Save writes it.
type SkipIndex struct {
	path   string
	mu     sync.Mutex
	stream string
	files  map[string]SkipEntry // by absolute file path
	dirty  bool
}

// SkipEntry is what a SkipIndex keeps of one transcript file.
type SkipEntry struct {
	Agg         string             `json:"aggregate"` // the session aggregate the import was asked for
	Session     string             `json:"session"`   // the session the lines went to (Agg, or its rewritten form)
	Size        int64              `json:"size"`      // bytes
	ModTime     int64              `json:"mtime_ns"`  // Unix nanoseconds
	Fingerprint events.Fingerprint `json:"fingerprint"`
}

// skipFile is a SkipIndex on disk (JSON).
type skipFile struct {
	Version int                  `json:"version"` // skipVersion
	Stream  string               `json:"stream"`
	Files   map[string]SkipEntry `json:"files"`
}

// skipVersion is the version of the index Save writes; a file of
// another version opens empty. Version 2 is written since an append its
// signing key's role may not make is refused (natslog.RoleRefusedError);
// a file without a version (an older build's) may remember files whose
// lines an import appended with such a key, which every reader
// quarantines: importing them again must find those lines not in the log.
const skipVersion = 2

// maxSkipIndex is the most bytes OpenSkipIndex reads: the index is read
// only if it is a regular file (hookspool.ReadRegular), so a FIFO or a
// device in its place is refused, never blocked on.
const maxSkipIndex = 1 << 30

// OpenSkipIndex reads the index at path for the log incarnation stream.
// A missing file, or one written for another stream or of another
// version (skipVersion), gives an empty index. Errors: a file that cannot be read or does not parse (naming
// path); the index returned with them is empty and usable, and Save
// replaces the file.
func OpenSkipIndex(path, stream string) (*SkipIndex, error) {
	x := &SkipIndex{path: path, stream: stream, files: map[string]SkipEntry{}}
	b, err := hookspool.ReadRegular(path, maxSkipIndex)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return x, fmt.Errorf("import index: %w", err)
	}
	var f skipFile
	if err := json.Unmarshal(b, &f); err != nil {
		return x, fmt.Errorf("import index %s: %w", path, err)
	}
	if f.Version == skipVersion && f.Stream == stream && f.Files != nil {
		x.files = f.Files
	}
	return x, nil
}

// Save writes the index to its path (a new file renamed over the old
// one) if it changed since it was opened or saved.
func (x *SkipIndex) Save() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.dirty {
		return nil
	}
	b, err := json.Marshal(skipFile{Version: skipVersion, Stream: x.stream, Files: x.files})
	if err != nil {
		return err
	}
	tmp := x.path + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("import index: %w", err)
	}
	if err := os.Rename(tmp, x.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("import index: %w", err)
	}
	x.dirty = false
	return nil
}

// Len returns how many files x remembers.
func (x *SkipIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.files)
}

// Known returns the session aggregate an earlier import of the file at
// path was asked for (SkipEntry.Agg), when the index remembers one: how
// a file whose lines named its session, emptied since, is still known
// as that session's transcript. Its fingerprint then tells the import
// the file was cut.
func (x *SkipIndex) Known(path string) (string, bool) {
	if x == nil {
		return "", false
	}
	key, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.files[key]
	return e.Agg, ok && e.Agg != ""
}

// unchanged returns the entry of the file at path if an import of it into
// agg would find nothing to do: the entry was made for agg, and the file
// has the size and modification time it had then, ends just after the
// line the fingerprint names, and still holds that line. The file is
// opened as an import opens it, checked against private (OpenTranscript).
func (x *SkipIndex) unchanged(path string, agg events.Aggregate, private []string) (SkipEntry, bool) {
	key, err := filepath.Abs(path)
	if err != nil {
		return SkipEntry{}, false
	}
	x.mu.Lock()
	e, ok := x.files[key]
	x.mu.Unlock()
	if !ok || e.Agg != agg.ID || e.Size != e.Fingerprint.End {
		return SkipEntry{}, false
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != e.Size || st.ModTime().UnixNano() != e.ModTime {
		return SkipEntry{}, false
	}
	f, _, err := OpenTranscript(path, private)
	if err != nil {
		return SkipEntry{}, false
	}
	defer f.Close()
	if _, _, same, err := checkFingerprintOf(f, path, e.Fingerprint); err != nil || !same {
		return SkipEntry{}, false
	}
	return e, true
}

// record remembers that the file at path holds nothing past line fp,
// which is in the log in session (imported when asked for agg), if the
// file ends just after that line now; otherwise it forgets the file.
func (x *SkipIndex) record(path string, agg events.Aggregate, session string, fp events.Fingerprint) {
	key, err := filepath.Abs(path)
	if err != nil {
		return
	}
	st, err := os.Stat(path)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil || fp.Line <= 0 || st.Size() != fp.End {
		if _, ok := x.files[key]; ok {
			delete(x.files, key)
			x.dirty = true
		}
		return
	}
	e := SkipEntry{Agg: agg.ID, Session: session, Size: st.Size(), ModTime: st.ModTime().UnixNano(), Fingerprint: fp}
	if x.files[key] != e {
		x.files[key] = e
		x.dirty = true
	}
}

// forget drops the file at path from the index.
func (x *SkipIndex) forget(path string) {
	key, err := filepath.Abs(path)
	if err != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.files[key]; ok {
		delete(x.files, key)
		x.dirty = true
	}
}
