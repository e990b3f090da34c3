package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/internal/words"
	"github.com/logbook-dev/logbook/events"
)

// LineFingerprint returns the fingerprint of a complete transcript line as
// ReadLines or ReadFrom yield it: its number, offsets, and the SHA-256 of
// its bytes without the newline (a "\r" before it excluded, a UTF-8 byte
// order mark included); for a line too long to hold, the SHA-256 read in
// passing (Line.Sum). A torn line has no fingerprint (zero value).
func LineFingerprint(l Line) events.Fingerprint {
	if l.Torn || l.End == 0 {
		return events.Fingerprint{}
	}
	if l.Sum != "" {
		return events.Fingerprint{Line: l.N, Offset: l.Offset, End: l.End, SHA256: l.Sum}
	}
	sum := sha256.Sum256(l.Bytes)
	return events.Fingerprint{Line: l.N, Offset: l.Offset, End: l.End, SHA256: hex.EncodeToString(sum[:])}
}

// CheckFingerprint reports whether the transcript at path still holds the
// line fp describes: the bytes [fp.Offset, fp.End) are that line and its
// newline, with the same SHA-256, and a newline (or the file's start) is
// just before them. It reads that one line, so it is cheap enough to run
// on every change of a watched file.
//
// When the file no longer holds it (truncated or rewritten), same is
// false and found describes what the file holds now at that place: line
// fp.Line of the file as it is (scanned from the start), or, for a file
// with fewer lines, Line = how many complete lines it has and no SHA256.
// size is the file's size in bytes. err is set only when the file cannot
// be read (it names path); a missing file is an error, not a divergence.
func CheckFingerprint(path string, fp events.Fingerprint) (found events.Fingerprint, size int64, same bool, err error) {
	f, _, err := hookspool.OpenRegular(path)
	if err != nil {
		return found, 0, false, fmt.Errorf("check transcript: %w", err)
	}
	defer f.Close()
	return checkFingerprintOf(f, path, fp)
}

// checkFingerprintOf is CheckFingerprint over f, the transcript opened
// from path (read with ReadAt only, not closed).
func checkFingerprintOf(f *os.File, path string, fp events.Fingerprint) (found events.Fingerprint, size int64, same bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return found, 0, false, fmt.Errorf("check transcript %s: %w", path, err)
	}
	size = st.Size()
	if fp.Line <= 0 || fp.End <= fp.Offset || fp.Offset < 0 {
		return found, size, false, fmt.Errorf("check transcript %s: bad fingerprint %+v", path, fp)
	}
	if size >= fp.End {
		same, err := holdsLine(f, fp)
		if err != nil {
			return found, size, false, fmt.Errorf("check transcript %s: %w", path, err)
		}
		if same {
			return fp, size, true, nil
		}
	}
	return lineAt(f, path, fp.Line, size)
}

// holdsLine reports whether f holds the line fp describes, with a newline
// (or the file's start) before it; a line of any length is hashed as it
// is read, never held whole.
func holdsLine(f *os.File, fp events.Fingerprint) (bool, error) {
	var b [1]byte
	if fp.Offset > 0 {
		if _, err := f.ReadAt(b[:], fp.Offset-1); err != nil {
			return false, err
		}
		if b[0] != '\n' {
			return false, nil
		}
	}
	if _, err := f.ReadAt(b[:], fp.End-1); err != nil {
		return false, err
	}
	if b[0] != '\n' {
		return false, nil
	}
	h := newLineHash()
	if _, err := io.Copy(h, io.NewSectionReader(f, fp.Offset, fp.End-1-fp.Offset)); err != nil {
		return false, err
	}
	return h.hex() == fp.SHA256, nil
}

// lineAt returns the fingerprint of line n of f, the transcript opened
// from path, as it is now, or of nothing past its last complete line;
// same is always false.
func lineAt(f *os.File, path string, n int, size int64) (events.Fingerprint, int64, bool, error) {
	var found events.Fingerprint
	for l, err := range readLinesOf(context.Background(), f, path, Cursor{}, n-1, MaxLineBytes, 0) {
		if err != nil {
			if _, ok := errors.AsType[*LineError](err); ok && l.N == n && l.Sum != "" {
				// Too long to hold, hashed in passing.
				return LineFingerprint(l), size, false, nil
			}
			if _, ok := errors.AsType[*LineError](err); ok {
				continue
			}
			return found, size, false, err
		}
		if l.Torn {
			break
		}
		return LineFingerprint(l), size, false, nil
	}
	// Fewer than n complete lines.
	lines := 0
	var end int64
	for l, err := range readLinesOf(context.Background(), f, path, Cursor{}, 0, MaxLineBytes, 0) {
		if err != nil || l.Torn {
			break
		}
		lines, end = l.N, l.End
	}
	return events.Fingerprint{Line: lines, Offset: end, End: end}, size, false, nil
}

// DivergedError reports a transcript file that no longer holds what was
// imported from it: truncated or rewritten since. Nothing of it was
// appended; the divergence itself was recorded on Session
// (session.transcript_diverged). Importing with Config.AsNew
// imports the file as it is now into NewSession, linked to Session.
type DivergedError struct {
	Path       string
	Session    string             // the session that imported the file
	NewSession string             // where its rewritten form goes
	Imported   events.Fingerprint // the last line imported
	Found      events.Fingerprint // what the file holds there now
	Size       int64              // the file's size now
	// Command is the import command that takes --as-new for this file,
	// e.g. "logbook import codex" (Config.Command).
	Command string
}

// Error returns "path:line: the transcript changed under Logbook: …",
// ending with the command (Command --as-new path, the path quoted as one
// shell word) that imports the file as it is now.
func (e *DivergedError) Error() string {
	line, what := divergence(e.Imported, e.Found, e.Size)
	return fmt.Sprintf("%s:%d: the transcript changed under Logbook: %s; session %s keeps the %s it imported, and importing this file stops here (recorded as session.transcript_diverged); to import the file as it is now as a new history linked to it, run: %s --as-new %s (it goes to session %s)",
		e.Path, line, what, e.Session, words.Plural(e.Imported.Line, "line"), e.Command, shellWord(e.Path), e.NewSession)
}

// Change says how the file changed: "truncated" when it is shorter
// than what was imported (empty, or ending before the last line
// imported), "rewritten" when another line stands where one was
// imported.
func (e *DivergedError) Change() string { return change(e.Found) }

// change is DivergedError.Change of a file that holds found where it
// differs from what was imported.
func change(found events.Fingerprint) string {
	if found.SHA256 == "" {
		return "truncated"
	}
	return "rewritten"
}

// shellWord returns path as one word a shell reads back as path, quoted
// (mvdan.cc/sh's syntax.Quote) when it holds anything the shell would
// split or expand, and led by ./ when it begins with a dash: the path in
// a command line to copy. A path a POSIX shell can quote is quoted as
// one reads it; one with a control character or a byte that is not
// UTF-8, which only escapes write, is quoted as bash reads it ($'a\nb'),
// so that the command pasted runs on the same file.
func shellWord(path string) string {
	if strings.HasPrefix(path, "-") {
		path = "./" + path
	}
	if q, err := syntax.Quote(path, syntax.LangPOSIX); err == nil {
		return q
	}
	if q, err := syntax.Quote(path, syntax.LangBash); err == nil {
		return q
	}
	return strconv.Quote(path) // a NUL byte: no shell word holds it
}

// divergence describes how a transcript file of size bytes differs from
// what was imported (the last line imported, imported) at found, the
// first line that differs or, with no SHA-256, the file's last complete
// line: the 1-based line number where it differs and what happened there.
// DivergedError and import's warnings say the same.
func divergence(imported, found events.Fingerprint, size int64) (int, string) {
	if found.SHA256 == "" && size == 0 {
		return 1, fmt.Sprintf("it is empty now (%s, %s imported)", words.Plural(imported.Line, "line"), words.Plural(int(imported.End), "byte"))
	}
	if found.SHA256 == "" {
		return found.Line + 1, fmt.Sprintf("it is shorter than what was imported, truncated after line %d (%s now; %s, %s imported)", found.Line, words.Plural(int(size), "byte"), words.Plural(imported.Line, "line"), words.Plural(int(imported.End), "byte"))
	}
	return found.Line, fmt.Sprintf("line %d differs from the line imported (sha256 %.12s now)", found.Line, found.SHA256)
}
