package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The boundary marker. bubblewrap's first child (pid 1 of the
// boundary's pid namespace) waits, blocked, for bubblewrap to write its
// user namespace's maps, and takes its own parent-death signal only
// after that wait (bubblewrap 0.8.0). A process that starts bubblewrap
// and dies in between (SIGKILL, a crash) takes bubblewrap with it
// (--die-with-parent) and leaves that child blocked for good, re-parented
// to init, in bubblewrap's session, which nobody leads any more. No
// record written after the fork can be counted on to name it: the
// starter may die before the write. So the name is on the process
// itself, from its exec: every bubblewrap this package starts (Start's
// restricted commands, the probe of Available and Start,
// BoundaryCommand) runs with argv[0] naming its starter, and the first
// child, a fork of bubblewrap, keeps that argv. bubblewrap uses its
// argv[0] in its usage message alone, and execs the command by the path
// after "--", so the marker changes nothing of what it does.

// BoundaryMarker begins the argv[0] that every bubblewrap process the
// package starts runs under, the executable itself being found by its
// path: "logbook-bwrap:<pid>:<start>", where pid (decimal) and start
// (decimal clock ticks after boot, as ProcStart returns) name the
// process that started bubblewrap, its starter. bubblewrap's own forks
// inside the boundary (its first child, pid 1 of the boundary's pid
// namespace, and that one's fork before it execs the command) carry it
// as well; what the boundary execs (the reporter, the command) has an
// argv of its own. It reads as bwrap's own name in ps(1) listings
// (ps -eo pid,cmd | grep bwrap finds it), and SweepBoundaries takes a
// process carrying it whose starter no longer runs as left behind. The
// command can read it in its boundary (/proc/1/cmdline), as it can all
// of bubblewrap's arguments: the starter's host pid, which names nothing
// it can reach from its own pid namespace.
const BoundaryMarker = "logbook-bwrap:"

// markerMax bounds the length of an argv[0] that carries BoundaryMarker:
// the prefix, a pid and a start time of at most 20 digits each and a
// colon.
const markerMax = len(BoundaryMarker) + 20 + 1 + 20

// boundaryArgv0 returns the argv[0] bubblewrap runs under when this
// process starts it: BoundaryMarker, this process's pid and its start
// time. The start time is read once; should it not be readable, it is 0,
// and a sweep then takes the starter to run as long as its pid does.
var boundaryArgv0 = sync.OnceValue(func() string {
	pid := os.Getpid()
	start, _ := ProcStart(pid)
	return BoundaryMarker + strconv.Itoa(pid) + ":" + strconv.FormatUint(start, 10)
})

// parseMarker returns the starter that argv0, an argv[0] beginning with
// BoundaryMarker, names; false if argv0 is not such a marker.
func parseMarker(argv0 []byte) (pid int, start uint64, ok bool) {
	rest, ok := bytes.CutPrefix(argv0, []byte(BoundaryMarker))
	if !ok {
		return 0, 0, false
	}
	p, s, ok := bytes.Cut(rest, []byte{':'})
	if !ok {
		return 0, 0, false
	}
	pid, perr := strconv.Atoi(string(p))
	start, serr := strconv.ParseUint(string(s), 10, 64)
	if perr != nil || serr != nil || pid <= 0 {
		return 0, 0, false
	}
	return pid, start, true
}

// readArgv0 reads the argv[0] of process pid (the bytes of
// /proc/<pid>/cmdline before the first NUL) into buf and returns it;
// false if it cannot be read, is empty (a kernel thread, a zombie) or
// does not fit in buf.
func readArgv0(pid int, buf []byte) ([]byte, bool) {
	b, err := readProcPrefix("/proc/"+strconv.Itoa(pid)+"/cmdline", buf, 0)
	if err != nil {
		return nil, false
	}
	arg0, _, found := bytes.Cut(b, []byte{0})
	return arg0, found && len(arg0) > 0
}

// readProcPrefix reads the file at path, a /proc file, into buf until
// buf is full, the file ends or (stop >= 0) a read has brought byte
// stop, and returns what it read: the file's first len(buf) bytes at
// most. Errors: open's and read's, as *os.PathError.
func readProcPrefix(path string, buf []byte, stop int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
		if stop >= 0 && bytes.IndexByte(buf[n-m:n], byte(stop)) >= 0 {
			break
		}
	}
	return buf[:n], nil
}

// SweepBoundaries kills, with SIGKILL, what is left on this host of the
// bubblewrap processes that processes now gone started: every process of
// this user (its real uid is this process's effective uid) whose argv[0]
// carries BoundaryMarker naming a starter that no longer runs (its pid
// runs no more, or now with another start time). Those are bubblewrap
// itself, should it outlive its starter, and its first child, blocked
// for good when bubblewrap died before letting it go on, or set up with
// nobody to watch it; killing a boundary's pid 1 ends its pid namespace,
// and whatever ran in it. It needs no record: a starter killed at any
// moment after its fork of bubblewrap leaves a process it finds. A
// boundary whose starter runs is left alone, whoever its starter is.
// Each process is signalled through a pidfd, taken and then checked to
// carry the same marker, so a later process that got the pid is never
// signalled (on a kernel without pidfds, < 5.3, by its pid, once its
// start time is seen unchanged). It returns how many processes it
// signalled, and an error only if /proc cannot be listed. It takes one
// read of /proc/<pid>/cmdline per process of the host (about 10 µs
// each: 1.5 ms for 120 processes on a busy 2-core host). Safe for
// concurrent use; SweepPlaceholders runs it first.
func SweepBoundaries() (killed int, err error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, fmt.Errorf("sweep boundaries: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, fmt.Errorf("sweep boundaries: %w", err)
	}
	self := os.Getpid()
	var buf [markerMax + 1]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		arg0, ok := readArgv0(pid, buf[:])
		if !ok || !bytes.HasPrefix(arg0, []byte(BoundaryMarker)) {
			continue
		}
		starter, start, ok := parseMarker(arg0)
		if !ok || runs(starter, start, "", "") {
			continue
		}
		if killMarked(pid, string(arg0)) {
			killed++
		}
	}
	return killed, nil
}

// killMarked sends SIGKILL to process pid if it is still a live process
// of this user whose argv[0] is marker, and reports whether it did.
func killMarked(pid int, marker string) bool {
	before, err := readStat(pid)
	if err != nil || before.dead {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		fd = -1
	case err != nil:
		return false // gone
	default:
		defer unix.Close(fd)
	}
	// With the pidfd open, /proc/<pid> is the process it names for as
	// long as that one runs; once it has ended, the signal below finds
	// nothing.
	var buf [markerMax + 1]byte
	arg0, ok := readArgv0(pid, buf[:])
	if !ok || string(arg0) != marker || !ownedBy(pid, os.Geteuid()) {
		return false
	}
	if now, err := readStat(pid); err != nil || now.start != before.start || now.dead {
		return false
	}
	if fd < 0 {
		return unix.Kill(pid, unix.SIGKILL) == nil
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// ownedBy reports whether process pid's real uid (the first field of
// the Uid line of /proc/<pid>/status) is uid.
func ownedBy(pid, uid int) bool {
	// The Uid line comes well within the first KiB, before the
	// unbounded ones (Groups).
	var buf [2048]byte
	b, err := readProcPrefix("/proc/"+strconv.Itoa(pid)+"/status", buf[:], -1)
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nUid:"))
	line, _, eol := bytes.Cut(rest, []byte{'\n'})
	f := bytes.Fields(line)
	if !ok || !eol || len(f) == 0 {
		return false
	}
	real, err := strconv.Atoi(string(f[0]))
	return err == nil && real == uid
}
