// Package journal is a write-ahead queue of records kept in one file that
// is written full of zeros before use: Append makes a record durable with
// one fdatasync into space that is already allocated (no file size or
// extent changes, so the file system commits no metadata), and returns
// the record's sequence; Done marks every record up to a sequence as
// processed and drops their data from the file; Open returns the records
// not yet marked done, in order, for their owner to process again after
// a crash.
//
// `logbook serve` keeps the hook payloads it answered on its socket in a
// journal until their batches are in the log: a hook waits for one
// fdatasync instead of the log's atomic batch.
//
// # File format (version 1)
//
// Offsets and integers are little-endian.
//
//   - Bytes 0–511 and 512–1023 are two header slots, written in turn so
//     that a torn write leaves the other intact. A slot holds the magic
//     "LBJRNL01", then uint64 counter (which slot is newer), uint64 base
//     (the sequence of the record at offset 4096), uint64 done (every
//     record up to it is processed), then the CRC-32C (Castagnoli) of
//     those 32 bytes. Open uses the valid slot with the higher counter.
//   - Records follow from offset 4096, back to back: uint32 length of
//     the data, uint32 CRC-32C of the sequence's 8 bytes followed by the
//     data, uint64 sequence, then the data. Sequences start at base and
//     rise by one; the first record that is zero, torn, fails its CRC or
//     carries another sequence ends the journal.
//
// When every record is done, Done starts the records over at offset 4096
// under a new base, so a journal whose records are processed as they
// come stays at its first size; older records left in the file carry
// sequences below base and are never read again. A journal with a
// backlog grows by writing zeros past its end.
//
// # Scrubbing
//
// A record's data is not kept once it is done: Done, after the header
// that marks a record done is on disk, scrubs the record (its data
// written over with zeros, its CRC field set to the complement of the
// CRC of its sequence and those zeros, its length and sequence left as
// they were) and syncs that too before it returns. A scrubbed record
// still chains the records after it: Open steps over it by its length
// and never returns it, whatever the header says. A scrub a crash tore
// leaves a record that fails its CRC, which Open steps over too when the
// header marks it done (it always does: the scrub starts only once that
// header is on disk), and scrubs again. Open (not Inspect) also scrubs a
// done record still holding its data (a crash before its scrub reached
// the disk, a file from before scrubbing) and writes zeros over anything
// past the last record (a torn record, records of earlier rounds).
package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Layout of the file.
const (
	slotSize   = 512
	dataStart  = 4096
	headerSize = 16 // of a record: length, CRC, sequence
	slotBytes  = 8 + 8 + 8 + 8 + 4
	magic      = "LBJRNL01"
)

// DefaultSize is the size a new journal is written to (4 MiB): about
// 7,000 records of a typical hook payload before it must grow.
const DefaultSize = 4 << 20

// Options tunes Open; the zero value uses the defaults.
type Options struct {
	// Size is the bytes a new journal is written full of zeros to, and
	// the step it grows by; 0 means DefaultSize. It is rounded up to a
	// multiple of 4096 and is at least 8192.
	Size int64
	// MaxSize caps the file; Append fails with ErrFull rather than grow
	// past it. 0 means 64 times Size.
	MaxSize int64
	// MaxRecord is the most bytes of data one record may hold; 0 means
	// 2 MiB.
	MaxRecord int
}

// ErrFull is Append's error when the record would take the file past
// Options.MaxSize: the records before it are not yet done.
var ErrFull = errors.New("journal full: its records are not yet processed")

// ErrClosed is the error of any call after Close.
var ErrClosed = errors.New("journal closed")

// Record is one record returned by Open: its sequence and its data.
type Record struct {
	Seq  uint64
	Data []byte
}

// Journal is an open journal file. Its methods are safe for concurrent
// use; Append and Done are serialized. Append is one write and one
// fdatasync (it may first grow the file); Done is a header write and an
// fdatasync, then the scrub of the records it marks done and another
// fdatasync (it may also move the records back to the start). The
// Journal owns the file until Close.
type Journal struct {
	path     string
	opt      Options
	readOnly bool   // Inspect's: load writes nothing
	tornSeq  uint64 // the unreadable last record Open found (Torn)
	tornAt   int64

	mu      sync.Mutex
	f       *os.File // nil once closed
	size    int64    // bytes of the file, all written
	counter uint64   // of the header slot written last
	base    uint64   // sequence of the record at dataStart
	next    uint64   // sequence the next Append takes
	done    uint64   // every record up to it is processed
	off     int64    // where the next record goes
	// dirty lists, in sequence order, the records from base on whose
	// data is still in the file: every record not done, and done ones
	// a scrub has yet to reach.
	dirty []span
}

// span is where a record stands in the file: its sequence, the offset
// of its header and the length of its data.
type span struct {
	seq uint64
	off int64
	n   uint32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Open opens the journal at path, creating it when it does not exist
// (mode 0600, written whole under the name path+".new", synced, renamed
// into place, its directory synced), and returns it with the records not
// yet done, in sequence order. The path must name a regular file or
// nothing: a symbolic link, a directory or any other kind of file is
// refused. So is damage, which Open does not guess past (the error names
// the file, and the record and offset where there is one; moving the
// file aside starts a new journal, losing what it held): a file of
// another size than the journal is written to (cut short, emptied), no
// valid header slot, a record that cannot be read with a whole record
// after it. An unreadable last record is a write a crash tore, never
// acknowledged: it is left out, and Torn names it. Before it returns,
// Open scrubs the done records that still hold their data and writes
// zeros over what lies past the last record, the torn one included (see
// Scrubbing), and syncs that.
func Open(path string, opt Options) (*Journal, []Record, error) {
	opt = opt.withDefaults()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		if err := create(path, opt); err != nil {
			return nil, nil, err
		}
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, nil, fmt.Errorf("journal %s: a symbolic link, not a journal file", path)
		}
		if errors.Is(err, unix.EISDIR) {
			return nil, nil, fmt.Errorf("journal %s: a directory, not a regular file", path)
		}
		return nil, nil, &os.PathError{Op: "open journal", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	j := &Journal{path: path, opt: opt, f: f}
	recs, err := j.load()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return j, recs, nil
}

// Inspect reads the journal at path without writing to it, and returns
// how many records it holds that are not done: what Open would return,
// for a report while another process may own the file. A missing file
// holds none. Errors are Open's, damage included.
func Inspect(path string, opt Options) (int, error) {
	opt = opt.withDefaults()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return 0, fmt.Errorf("journal %s: a symbolic link, not a journal file", path)
		}
		return 0, &os.PathError{Op: "open journal", Path: path, Err: err}
	}
	j := &Journal{path: path, opt: opt, f: os.NewFile(uintptr(fd), path), readOnly: true}
	defer j.f.Close()
	recs, err := j.load()
	return len(recs), err
}

// withDefaults fills in the zero fields of opt.
func (opt Options) withDefaults() Options {
	if opt.Size <= 0 {
		opt.Size = DefaultSize
	}
	opt.Size = max((opt.Size+dataStart-1)/dataStart*dataStart, 2*dataStart)
	if opt.MaxSize <= 0 {
		opt.MaxSize = 64 * opt.Size
	}
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = 2 << 20
	}
	return opt
}

// load reads the file's kind, headers and records, or writes a new
// journal into an empty file (not when read-only).
func (j *Journal) load() ([]Record, error) {
	st, err := j.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("journal %s: a %s, not a regular file", j.path, kind(st.Mode()))
	}
	// Open makes a journal whole before it takes its name, and grows it
	// by whole steps: a file of another size was cut short.
	if st.Size() < dataStart {
		return nil, fmt.Errorf("journal %s: damaged: %d bytes, shorter than its %d-byte header (%s)", j.path, st.Size(), dataStart, moveAside)
	}
	if st.Size() < j.opt.Size || st.Size()%dataStart != 0 {
		return nil, fmt.Errorf("journal %s: damaged: %d bytes, not the %d (or a multiple of %d above it) the journal is written to: the file was cut short (%s)", j.path, st.Size(), j.opt.Size, dataStart, moveAside)
	}
	j.size = st.Size()
	var head [2 * slotSize]byte
	if _, err := j.f.ReadAt(head[:], 0); err != nil {
		return nil, fmt.Errorf("journal %s: read header: %w", j.path, err)
	}
	found := false
	for i := range 2 {
		c, base, done, ok := parseSlot(head[i*slotSize : i*slotSize+slotBytes])
		if ok && (!found || c > j.counter) {
			j.counter, j.base, j.done, found = c, base, done, true
		}
	}
	if !found {
		return nil, fmt.Errorf("journal %s: damaged: no valid header (%s)", j.path, moveAside)
	}
	if j.done+1 < j.base || j.base == 0 {
		return nil, fmt.Errorf("journal %s: damaged: header names base %d and done %d", j.path, j.base, j.done)
	}
	var recs []Record
	raised := false // done raised past the header's by a scrubbed record
	j.off, j.next = dataStart, j.base
	var h [headerSize]byte
records:
	for first := true; j.off+headerSize <= j.size; first = false {
		if _, err := j.f.ReadAt(h[:], j.off); err != nil {
			return nil, fmt.Errorf("journal %s: read at %d: %w", j.path, j.off, err)
		}
		n := int64(binary.LittleEndian.Uint32(h[0:4]))
		sum := binary.LittleEndian.Uint32(h[4:8])
		seq := binary.LittleEndian.Uint64(h[8:16])
		// The first record may stand past base: written after a start-over
		// whose header was the slot a torn write then damaged.
		if seq != j.next && !(first && seq > j.base) || n > int64(j.opt.MaxRecord) {
			break
		}
		if j.off+headerSize+n > j.size {
			return nil, fmt.Errorf("journal %s: damaged: record %d at offset %d runs past the file's end at %d bytes: the file was cut short (%s)", j.path, seq, j.off, j.size, moveAside)
		}
		data := make([]byte, n)
		if _, err := j.f.ReadAt(data, j.off+headerSize); err != nil {
			return nil, fmt.Errorf("journal %s: read at %d: %w", j.path, j.off+headerSize, err)
		}
		crc := crc32.Update(crc32.Checksum(h[8:16], castagnoli), castagnoli, data)
		whole := crc == sum
		scrubbed := !whole && sum == ^crc && allZero(data)
		switch {
		case whole, scrubbed:
		case seq <= j.done:
			// Done, and its scrub torn by a crash: its data are not
			// needed, and its length and sequence were never written
			// over.
		default:
			break records // torn, or damaged: the records end here
		}
		if first {
			j.base, j.next = seq, seq
		}
		if scrubbed && seq > j.done {
			// Only a done record is scrubbed, after every record before
			// it: the header that said so was lost (a damaged slot).
			j.done, raised = seq, true
			for len(recs) > 0 && recs[0].Seq <= seq {
				recs = recs[1:]
			}
		}
		if seq > j.done {
			recs = append(recs, Record{Seq: seq, Data: data})
		}
		if !scrubbed {
			j.dirty = append(j.dirty, span{seq: seq, off: j.off, n: uint32(n)})
		}
		j.off += headerSize + n
		j.next++
	}
	if h := j.headerAt(j.off); h.seq == j.next && h.seq != 0 {
		j.tornSeq, j.tornAt = h.seq, j.off
	}
	// The records end here: a crash tears at most the record it was
	// writing, the last, so a whole record after this point means the
	// file was damaged, and the records past the damage would be lost.
	if seq, at, ok := j.wholeAfter(j.off, j.next); ok {
		return nil, fmt.Errorf("journal %s: damaged: record %d at offset %d cannot be read, but record %d at offset %d after it is whole (%s)", j.path, j.next, j.off, seq, at, moveAside)
	}
	if j.readOnly {
		return recs, nil
	}
	if raised {
		// On disk before any record it marks done is scrubbed.
		if err := j.writeHeader(); err != nil {
			return nil, err
		}
		if err := j.sync(); err != nil {
			return nil, err
		}
	}
	if j.done >= j.next {
		// Marked done past the records the file holds (records lost to
		// damage, every one of them done): start over after done, the
		// header first, so that sequences stay contiguous from base.
		j.next = j.done + 1
		if err := j.restart(); err != nil {
			return nil, err
		}
	}
	if err := j.scrubOnOpen(); err != nil {
		return nil, err
	}
	return recs, nil
}

// scrubOnOpen scrubs the done records that still hold their data (a
// crash came before their scrub was on disk, or the file predates
// scrubbing) and writes zeros over every byte past the last record that
// is not zero yet (a torn record, records of an earlier round), then
// syncs if it wrote anything. The header is on disk already, and marks
// every record it scrubs done; bytes past the last record are read by
// no later Open (a whole record there was refused as damage above).
func (j *Journal) scrubOnOpen() error {
	wrote, err := j.scrubThrough(j.done)
	if err != nil {
		return err
	}
	buf := make([]byte, min(j.size-j.off, 1<<20))
	for at := j.off; at < j.size; {
		n := min(int64(len(buf)), j.size-at)
		if _, err := j.f.ReadAt(buf[:n], at); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("journal %s: read at %d: %w", j.path, at, err)
		}
		if !allZero(buf[:n]) {
			if err := j.zero(at, at+n); err != nil {
				return err
			}
			wrote = true
		}
		at += n
	}
	if wrote {
		return j.syncData("scrub")
	}
	return nil
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// scrubThrough scrubs every record of j.dirty up to sequence seq (see
// the package doc), in writes of about 1 MiB, and drops them from
// j.dirty; it syncs nothing. The header marking them done must be on
// disk first. It reports whether it wrote anything.
func (j *Journal) scrubThrough(seq uint64) (bool, error) {
	k := 0
	for k < len(j.dirty) && j.dirty[k].seq <= seq {
		k++
	}
	if k == 0 {
		return false, nil
	}
	var buf []byte
	var at int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := j.f.WriteAt(buf, at); err != nil {
			return fmt.Errorf("journal %s: scrub at %d: %w", j.path, at, err)
		}
		buf = buf[:0]
		return nil
	}
	for _, r := range j.dirty[:k] {
		if len(buf) > 0 && (at+int64(len(buf)) != r.off || len(buf) >= 1<<20) {
			if err := flush(); err != nil {
				return true, err
			}
		}
		if len(buf) == 0 {
			at = r.off
		}
		buf = appendScrubbed(buf, r.seq, r.n)
	}
	if err := flush(); err != nil {
		return true, err
	}
	j.dirty = append(j.dirty[:0], j.dirty[k:]...)
	return true, nil
}

// zeros is read-only: the data of a scrubbed record, a piece at a time.
var zeros = make([]byte, 64<<10)

// appendScrubbed appends to b the scrubbed form of record seq of n data
// bytes: its length and sequence as written, its data zeros, and in
// its CRC field the complement of the CRC of the sequence and the zeros
// (a value no whole record of those bytes has).
func appendScrubbed(b []byte, seq uint64, n uint32) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[0:4], n)
	binary.LittleEndian.PutUint64(h[8:16], seq)
	crc := crc32.Checksum(h[8:16], castagnoli)
	for left := int(n); left > 0; left -= min(left, len(zeros)) {
		crc = crc32.Update(crc, castagnoli, zeros[:min(left, len(zeros))])
	}
	binary.LittleEndian.PutUint32(h[4:8], ^crc)
	b = append(b, h[:]...)
	return append(b, make([]byte, n)...)
}

// recordHeader is a record's header as read, whole or not.
type recordHeader struct {
	n, sum uint32
	seq    uint64
}

// headerAt reads the record header at off (zero past the file's end).
func (j *Journal) headerAt(off int64) recordHeader {
	var h [headerSize]byte
	if off+headerSize > j.size {
		return recordHeader{}
	}
	if _, err := j.f.ReadAt(h[:], off); err != nil {
		return recordHeader{}
	}
	return recordHeader{binary.LittleEndian.Uint32(h[0:4]), binary.LittleEndian.Uint32(h[4:8]), binary.LittleEndian.Uint64(h[8:16])}
}

// Torn reports the record Open found unreadable at the end of the
// records, taken as a write a crash tore before it was acknowledged, and
// its offset; 0, 0 when the records end cleanly. A record damaged after
// it was acknowledged looks the same: its owner should say so.
func (j *Journal) Torn() (seq uint64, at int64) { return j.tornSeq, j.tornAt }

// moveAside is what to do with a damaged journal, for its errors.
const moveAside = "move it aside to start a new journal; the records it holds are then not appended"

// laterRecords is how far past the expected sequence wholeAfter looks.
const laterRecords = 64

// wholeAfter reports a whole record (its CRC right) from offset from on
// whose sequence is above seq and at most laterRecords past it, and
// where it starts. Records of earlier start-overs carry sequences below
// base and never match.
func (j *Journal) wholeAfter(from int64, seq uint64) (uint64, int64, bool) {
	if from >= j.size {
		return 0, 0, false
	}
	rest := make([]byte, j.size-from)
	if _, err := j.f.ReadAt(rest, from); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, false
	}
	for p := 8; p+8 <= len(rest); p++ {
		s := binary.LittleEndian.Uint64(rest[p : p+8])
		if s <= seq || s > seq+laterRecords {
			continue
		}
		at := p - 8 // the record's header starts 8 bytes before its sequence
		n := int(binary.LittleEndian.Uint32(rest[at : at+4]))
		if n > j.opt.MaxRecord || at+headerSize+n > len(rest) {
			continue
		}
		data := rest[at+headerSize : at+headerSize+n]
		if crc32.Update(crc32.Checksum(rest[p:p+8], castagnoli), castagnoli, data) == binary.LittleEndian.Uint32(rest[at+4:at+8]) {
			return s, from + int64(at), true
		}
	}
	return 0, 0, false
}

// create makes a new, empty journal at path: written whole (zeros to
// opt.Size, the first header) and synced under a temporary name, then
// renamed into place and its directory synced, so that a journal under
// its name is never a half-made one.
func create(path string, opt Options) error {
	tmp := path + ".new"
	fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create journal", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	j := &Journal{path: path, opt: opt, f: f}
	err = j.zero(0, opt.Size)
	if err == nil {
		j.size, j.base, j.next, j.done, j.off = opt.Size, 1, 1, 0, dataStart
		err = j.writeHeader()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("journal %s: create: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("journal %s: sync its directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync its directory: %w", path, err)
	}
	return nil
}

// zero writes zeros over [from, to) of the file.
func (j *Journal) zero(from, to int64) error {
	buf := make([]byte, min(to-from, 1<<20))
	for at := from; at < to; {
		n := min(int64(len(buf)), to-at)
		if _, err := j.f.WriteAt(buf[:n], at); err != nil {
			return fmt.Errorf("journal %s: write zeros at %d: %w", j.path, at, err)
		}
		at += n
	}
	return nil
}

// Append writes data as the next record and returns its sequence once
// the record is on disk (fdatasync). Errors: ErrClosed, a record over
// Options.MaxRecord, ErrFull, or the file system's; after an error the
// record is not in the journal and the next Append takes the same place.
func (j *Journal) Append(data []byte) (uint64, error) {
	if len(data) > j.opt.MaxRecord {
		return 0, fmt.Errorf("journal %s: record of %d bytes, over the limit of %d", j.path, len(data), j.opt.MaxRecord)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return 0, ErrClosed
	}
	need := int64(headerSize + len(data))
	if j.off+need > j.size {
		if j.done+1 == j.next && j.off > dataStart {
			if err := j.restart(); err != nil {
				return 0, err
			}
		}
	}
	if j.off+need > j.size {
		if err := j.grow(j.off + need); err != nil {
			return 0, err
		}
	}
	rec := make([]byte, need)
	binary.LittleEndian.PutUint32(rec[0:4], uint32(len(data)))
	binary.LittleEndian.PutUint64(rec[8:16], j.next)
	copy(rec[headerSize:], data)
	binary.LittleEndian.PutUint32(rec[4:8], crc32.Checksum(rec[8:], castagnoli))
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		return 0, fmt.Errorf("journal %s: write record %d: %w", j.path, j.next, err)
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		return 0, fmt.Errorf("journal %s: sync record %d: %w", j.path, j.next, err)
	}
	seq := j.next
	j.dirty = append(j.dirty, span{seq: seq, off: j.off, n: uint32(len(data))})
	j.off += need
	j.next++
	return seq, nil
}

// grow extends the file with zeros so that it holds at least to bytes,
// by whole steps of Options.Size, and syncs it (the one place a
// journal's size changes after Open).
func (j *Journal) grow(to int64) error {
	size := j.size
	for size < to {
		size += j.opt.Size
	}
	if size > j.opt.MaxSize {
		return fmt.Errorf("journal %s: %w (%d bytes would pass the limit of %d)", j.path, ErrFull, size, j.opt.MaxSize)
	}
	if err := j.zero(j.size, size); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.path, err)
	}
	j.size = size
	return nil
}

// Done marks every record up to seq as processed, on disk (a header
// write and an fdatasync), then scrubs those records (their data written
// over with zeros, see the package doc) and syncs again before it
// returns: a record done is no longer readable in the file. When seq is
// the last record appended, the next record goes at the start of the
// file again. A seq at or below what is already done changes nothing;
// one past the last record appended is an error. After an error from
// the scrub the records are done; a later Done or Open scrubs them.
func (j *Journal) Done(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return ErrClosed
	}
	if seq <= j.done {
		return nil
	}
	if seq >= j.next {
		return fmt.Errorf("journal %s: done through %d, but the last record is %d", j.path, seq, j.next-1)
	}
	j.done = seq
	if j.done+1 == j.next && j.off > dataStart {
		return j.restart()
	}
	if err := j.writeHeader(); err != nil {
		return err
	}
	if err := j.sync(); err != nil {
		return err
	}
	return j.scrub()
}

// scrub scrubs the records done (j.dirty up to j.done) and syncs them;
// the header marking them done is on disk.
func (j *Journal) scrub() error {
	wrote, err := j.scrubThrough(j.done)
	if err != nil || !wrote {
		return err
	}
	return j.syncData("scrub")
}

// restart starts the records over at dataStart, every record being done:
// a header with base at the next sequence, synced, then the records
// scrubbed (they carry sequences below base: the new header never reads
// them, torn or not). Whatever fails, their places are forgotten: the
// next records go over them, and what a failed scrub left the next Open
// writes zeros over.
func (j *Journal) restart() error {
	defer func() { j.dirty = j.dirty[:0] }()
	j.base, j.off = j.next, dataStart
	if err := j.writeHeader(); err != nil {
		return err
	}
	if err := j.sync(); err != nil {
		return err
	}
	return j.scrub()
}

// writeHeader writes the header slot not written last.
func (j *Journal) writeHeader() error {
	j.counter++
	var b [slotBytes]byte
	copy(b[0:8], magic)
	binary.LittleEndian.PutUint64(b[8:16], j.counter)
	binary.LittleEndian.PutUint64(b[16:24], j.base)
	binary.LittleEndian.PutUint64(b[24:32], j.done)
	binary.LittleEndian.PutUint32(b[32:36], crc32.Checksum(b[:32], castagnoli))
	if _, err := j.f.WriteAt(b[:], int64(j.counter%2)*slotSize); err != nil {
		return fmt.Errorf("journal %s: write header: %w", j.path, err)
	}
	return nil
}

func (j *Journal) sync() error { return j.syncData("header") }

// syncData fdatasyncs the file; what names the write, for the error.
func (j *Journal) syncData(what string) error {
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		return fmt.Errorf("journal %s: sync %s: %w", j.path, what, err)
	}
	return nil
}

// parseSlot returns a header slot's counter, base and done, and whether
// its magic and CRC are right.
func parseSlot(b []byte) (counter, base, done uint64, ok bool) {
	if string(b[0:8]) != magic || crc32.Checksum(b[:32], castagnoli) != binary.LittleEndian.Uint32(b[32:36]) {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint64(b[8:16]), binary.LittleEndian.Uint64(b[16:24]), binary.LittleEndian.Uint64(b[24:32]), true
}

// Pending reports how many records are appended and not yet done.
func (j *Journal) Pending() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next - 1 - j.done
}

// Path returns the journal's file name, as given to Open.
func (j *Journal) Path() string { return j.path }

// Close closes the file; records not done stay for the next Open.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// kind names a file mode's type for an error.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

var _ io.Closer = (*Journal)(nil)
