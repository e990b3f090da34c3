package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// MaxLineBytes is the longest transcript line ReadLines yields: 64 MiB.
// A Claude Code line holding images or large tool results runs to a few MiB.
const MaxLineBytes = 64 << 20

// LongLineHead is how much of a line longer than MaxLineBytes ReadLines
// keeps (Line.Head): 128 KiB, twice the default cap of an observation's
// text, so the text kept is redacted with what follows it in view.
const LongLineHead = 128 << 10

// Line is one line of a transcript file.
type Line struct {
	N      int    // 1-based line number
	Offset int64  // byte offset of the line's first byte
	End    int64  // byte offset just after the line's newline
	Bytes  []byte // the line without its "\n" (or "\r\n"); nil when Torn or too long. Owned by the caller.
	// Torn reports that the file ends inside this line: it has no newline
	// yet because the agent is still writing it. Bytes is nil and End is
	// 0; Size says how much of it was there. Import it when it is complete.
	Torn bool
	Size int // length of the line in bytes, without its terminator
	// Head and Sum are set only for a line longer than MaxLineBytes,
	// yielded with an error wrapping ErrLineTooLong (Bytes nil): its first
	// bytes (at most LongLineHead) and the hex SHA-256 of the whole line
	// without its terminator, hashed as it was read, never held whole.
	Head []byte
	Sum  string
}

// Cursor is where an import stopped: the last line imported (0: none) and
// the byte offset just after it (that line's Line.End).
type Cursor struct {
	Line   int
	Offset int64
}

// ReadLines yields the complete lines of the transcript at path after
// line from (0: from the start), in order, with 1-based numbers. It reads
// the file from its start; ReadFrom resumes at a byte offset instead.
//
// A last line without its newline is yielded once as a Line with Torn set
// (and no Bytes), then the sequence ends. A line longer than MaxLineBytes
// yields a *LineError wrapping ErrLineTooLong, with the Line's Head, Sum
// and Size set (it is read through, never held whole: at most
// MaxLineBytes of it are in memory at once), and reading goes on with the
// next line. An open or read error is yielded once, naming path, and ends
// the sequence. Lines need not be valid JSON here: ParseLine judges them.
// Each Line's Bytes is a fresh slice the caller may keep. Every range over
// the sequence opens the file anew, so sequences may be used concurrently.
func ReadLines(path string, from int) iter.Seq2[Line, error] {
	return readLines(context.Background(), path, Cursor{}, from, MaxLineBytes, 0)
}

// ReadFrom yields the complete lines of the transcript at path after c,
// like ReadLines, but starts reading at c.Offset. It yields an error, and
// nothing else, if c.Offset is past the end of the file or is not just
// after a newline: the file was truncated or replaced since c was taken.
func ReadFrom(path string, c Cursor) iter.Seq2[Line, error] {
	return readLines(context.Background(), path, c, c.Line, MaxLineBytes, 0)
}

// ErrPrivate marks a transcript path that leads, through symlinks or a
// second name of a directory, to a file inside a directory no transcript
// is read from: a Logbook data dir, which holds credentials.
var ErrPrivate = errors.New("points into the data dir")

// CheckPrivate returns an error wrapping ErrPrivate, naming path as
// given, when the file path names (symlinks followed) lies inside one of
// dirs: its resolved path is under a dir's resolved path, or one of its
// resolved parents is the same directory (device and inode) as a dir,
// which catches a bind mount. So it does, when dirs is not empty, inside
// any other Logbook data dir: a resolved parent that holds a creds.json
// file and a jetstream directory (another serve's, another user's). A
// path that cannot be resolved passes (its read reports why), as do
// dirs that do not exist.
func CheckPrivate(path string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil
	}
	if d, ok := privateDir(real, dirs); ok {
		return fmt.Errorf("%s: %w %s (it resolves to %s); no file there is read as a transcript", path, ErrPrivate, d, real)
	}
	return nil
}

// privateDir returns the dir of dirs that the absolute, resolved path
// real lies in: under the dir's resolved path, or with a parent that is
// the same directory (device and inode) as the dir. Dirs that do not
// exist hold nothing.
func privateDir(real string, dirs []string) (string, bool) {
	for _, d := range dirs {
		dst, err := os.Stat(d)
		if err != nil {
			continue
		}
		rd, err := filepath.EvalSymlinks(d)
		if err == nil {
			rd, err = filepath.Abs(rd)
		}
		if err == nil {
			rel, err := filepath.Rel(rd, real)
			if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return d, true
			}
		}
		for p := filepath.Dir(real); ; p = filepath.Dir(p) {
			if st, err := os.Stat(p); err == nil && os.SameFile(st, dst) {
				return d, true
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		if isDataDir(p) {
			return p, true
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return "", false
}

// isDataDir reports whether directory p is a Logbook data dir a serve
// has run on: it holds a regular file creds.json (the server's
// credentials) and a directory jetstream (its log).
func isDataDir(p string) bool {
	c, err := os.Lstat(filepath.Join(p, "creds.json"))
	if err != nil || !c.Mode().IsRegular() {
		return false
	}
	j, err := os.Lstat(filepath.Join(p, "jetstream"))
	return err == nil && j.IsDir()
}

// CheckOpened applies CheckPrivate's rule to f, the transcript opened
// from path, as it was opened rather than as path names it now: a path
// swapped for a symlink into one of dirs after it was checked is caught
// here. f's real path is read from /proc/self/fd; when f has more than
// one link (fstat's Nlink), its device and inode are compared with those
// of every regular file under each dir, so a hard link to a file of the
// data dir is refused too. The error wraps ErrPrivate and names path as
// given, the dir and, for a hard link, the file of the dir it links to;
// one that cannot tell where f leads (no /proc) also wraps ErrPrivate.
// f is neither read nor closed.
func CheckOpened(f *os.File, path string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	real, err := fdPath(f)
	if err != nil {
		return fmt.Errorf("%s: cannot tell whether it %w: %v; it is not read as a transcript", path, ErrPrivate, err)
	}
	if d, ok := privateDir(real, dirs); ok {
		return fmt.Errorf("%s: %w %s (it resolves to %s); no file there is read as a transcript", path, ErrPrivate, d, real)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Nlink <= 1 {
		return nil
	}
	for _, d := range dirs {
		if twin := sameFileUnder(d, st); twin != "" {
			return fmt.Errorf("%s: %w %s: it is a hard link to %s, a file of the data dir; no file there is read as a transcript", path, ErrPrivate, d, twin)
		}
	}
	return nil
}

// fdPath returns the path the kernel holds for the open file f
// (/proc/self/fd/<n>), without the " (deleted)" it adds once the file
// has no name left.
func fdPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var real string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		real, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil {
		return "", err
	}
	if rerr != nil {
		return "", rerr
	}
	return strings.TrimSuffix(real, " (deleted)"), nil
}

// sameFileUnder returns the path of a regular file under dir (walked
// whole, symlinks not followed) that is the file st describes (same
// device and inode), or "". Entries that cannot be read are passed over.
func sameFileUnder(dir string, st os.FileInfo) string {
	root := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		root = r
	}
	found := ""
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil && os.SameFile(info, st) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// OpenTranscript opens the transcript at path as OpenRegular does and
// checks the opened file with CheckOpened against dirs (nil: no check);
// the caller reads the transcript through the one file returned and
// closes it. Errors are OpenRegular's and CheckOpened's, naming path.
func OpenTranscript(path string, dirs []string) (*os.File, int64, error) {
	f, size, err := hookspool.OpenRegular(path)
	if err != nil {
		return nil, 0, err
	}
	if err := CheckOpened(f, path, dirs); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// ReadLinesOf is ReadLines over f, the transcript opened from path (as
// OpenTranscript opens it): path only names the file in errors. It reads
// f with ReadAt, never moving f's offset, so ranges over f may follow one
// another or run at once; each reads up to f's size at its start. f is
// not closed.
func ReadLinesOf(f *os.File, path string, from int) iter.Seq2[Line, error] {
	return readLinesOf(context.Background(), f, path, Cursor{}, from, MaxLineBytes, 0)
}

// FirstLineOf is FirstLine over f, the transcript opened from path, read
// as ReadLinesOf reads it.
func FirstLineOf(f *os.File, path string) (Line, error) {
	return firstLine(readLinesOf(context.Background(), f, path, Cursor{}, 0, MaxLineBytes, MaxLineBytes+2), path)
}

// FirstLine returns the first line of the transcript at path, reading no
// more than a line of MaxLineBytes and its "\r\n", however large the file
// (a sparse file of a terabyte is refused as fast as a small one). A file
// with no newline yet gives a Line with Torn set (Size: its length), an
// empty file a zero Line with Torn set and N 1; a first line longer than
// MaxLineBytes a *LineError wrapping ErrLineTooLong. Open errors are
// ReadLines'.
func FirstLine(path string) (Line, error) {
	return firstLine(readLines(context.Background(), path, Cursor{}, 0, MaxLineBytes, MaxLineBytes+2), path)
}

// firstLine is FirstLine over lines, read up to MaxLineBytes+2 bytes.
func firstLine(lines iter.Seq2[Line, error], path string) (Line, error) {
	const most = MaxLineBytes + 2
	for l, err := range lines {
		if err == nil && l.Torn && l.Size >= most {
			return Line{N: 1}, &LineError{Path: path, Line: 1, Err: fmt.Errorf("%w: over %d bytes, the limit is %d", ErrLineTooLong, MaxLineBytes, MaxLineBytes)}
		}
		return l, err
	}
	return Line{N: 1, Torn: true}, nil
}

// BlankOnly reports whether the transcript at path (JSON Lines, of any
// format the importers read) holds at least one line and only blank ones
// (white space): like an empty file, it has nothing to import yet. It
// reads up to the first line that is not blank; a line too long to hold
// or a last line with no newline yet is taken as not blank (the import
// reports it). Errors are ReadLines' (the file cannot be opened or read).
func BlankOnly(ctx context.Context, path string) (bool, error) {
	return blankOnly(readLines(ctx, path, Cursor{}, 0, MaxLineBytes, 0))
}

// blankOnly is BlankOnly over the lines of a transcript from its start.
func blankOnly(lines iter.Seq2[Line, error]) (bool, error) {
	n := 0
	for l, err := range lines {
		if errors.Is(err, ErrLineTooLong) || err == nil && l.Torn {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(bytes.TrimSpace(l.Bytes)) > 0 {
			return false, nil
		}
		n++
	}
	return n > 0, nil
}

// ctxReader reads r until ctx is done, then fails with ctx's error, so a
// pass over a large file stops soon after its import is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readLines is ReadFrom (from: the first line to yield) for lines of at
// most maxLine bytes, reading at most maxRead bytes (0: up to the file's
// size at open) and stopping with ctx's error once ctx is done.
func readLines(ctx context.Context, path string, c Cursor, from, maxLine int, maxRead int64) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		f, _, err := hookspool.OpenRegular(path)
		if err != nil {
			yield(Line{}, fmt.Errorf("read transcript: %w", err))
			return
		}
		defer f.Close()
		readLinesOf(ctx, f, path, c, from, maxLine, maxRead)(yield)
	}
}

// readLinesOf is readLines over f, the transcript opened from path: it
// reads f with ReadAt only (its offset is left alone), so ranges over f
// may follow one another or run at once. f is not closed.
func readLinesOf(ctx context.Context, f *os.File, path string, c Cursor, from, maxLine int, maxRead int64) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		st, err := f.Stat()
		if err != nil {
			yield(Line{}, fmt.Errorf("read transcript %s: %w", path, err))
			return
		}
		fsize := st.Size()
		if c.Offset > 0 {
			var b [1]byte
			if _, err := f.ReadAt(b[:], c.Offset-1); err != nil || b[0] != '\n' {
				yield(Line{}, fmt.Errorf("read transcript %s: cursor line %d offset %d is not at a line start; the file was truncated or replaced", path, c.Line, c.Offset))
				return
			}
		}
		// One pass reads no further than the file's size at its start: a
		// file that keeps growing is read in bounded steps, the rest on
		// the next pass (a line cut there reads as torn until then).
		limit := fsize - c.Offset
		if maxRead > 0 {
			limit = min(limit, maxRead)
		}
		r := bufio.NewReaderSize(ctxReader{ctx, io.NewSectionReader(f, c.Offset, max(limit, 0))}, 64<<10)
		n, off := c.Line, c.Offset
		var (
			buf  []byte
			head []byte
			sum  *lineHash // set once the line is known to be too long
		)
		size := 0
		for {
			chunk, err := r.ReadSlice('\n')
			size += len(chunk)
			if n+1 > from {
				body := chunk
				if err == nil {
					body = body[:len(body)-1] // the newline
				}
				if sum != nil {
					sum.Write(body)
				} else {
					buf = append(buf, chunk...)
					if len(trimEOL(buf)) > maxLine {
						// Too long to hold: keep its head, hash the rest
						// as it goes by.
						head = bytes.Clone(buf[:min(len(buf), LongLineHead)])
						sum = newLineHash()
						if err == nil {
							sum.Write(buf[:len(buf)-1])
						} else {
							sum.Write(buf)
						}
						buf = buf[:0]
					}
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF {
				if size > 0 && n+1 > from {
					yield(Line{N: n + 1, Offset: off, Torn: true, Size: size}, nil)
				}
				return
			}
			if err != nil {
				yield(Line{}, fmt.Errorf("read transcript %s after line %d: %w", path, n, err))
				return
			}
			n++
			end := off + int64(size)
			if n > from {
				var l Line
				var lerr error
				if sum != nil {
					l = Line{N: n, Offset: off, End: end, Size: int(sum.n), Head: head, Sum: sum.hex()}
					lerr = &LineError{Path: path, Line: n, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrLineTooLong, sum.n, maxLine)}
				} else {
					b := trimEOL(buf)
					l = Line{N: n, Offset: off, End: end, Bytes: bytes.Clone(b), Size: len(b)}
				}
				if !yield(l, lerr) {
					return
				}
			}
			off, buf, head, sum, size = end, buf[:0], nil, nil, 0
		}
	}
}

// lineHash is the SHA-256 of a line written to it in pieces, without its
// newline: a "\r" that ends a piece is held back until more comes, so the
// "\r" of a "\r\n" terminator is never hashed, as trimEOL drops it.
type lineHash struct {
	h  hash.Hash
	cr bool  // a "\r" is held back
	n  int64 // bytes hashed
}

func newLineHash() *lineHash { return &lineHash{h: sha256.New()} }

// Write hashes p, holding back a "\r" it ends with.
func (l *lineHash) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if l.cr {
		l.h.Write([]byte{'\r'})
		l.n++
		l.cr = false
	}
	b := p
	if b[len(b)-1] == '\r' {
		b, l.cr = b[:len(b)-1], true
	}
	l.h.Write(b)
	l.n += int64(len(b))
	return len(p), nil
}

// hex returns the hex SHA-256 of what was written, a "\r" held back left out.
func (l *lineHash) hex() string { return hex.EncodeToString(l.h.Sum(nil)) }

// trimEOL removes one trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
