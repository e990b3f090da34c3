package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

func TestParseMarker(t *testing.T) {
	self, start := os.Getpid(), uint64(0)
	start, _ = ProcStart(self)
	for _, tc := range []struct {
		argv0 string
		pid   int
		start uint64
		ok    bool
	}{
		{boundaryArgv0(), self, start, true},
		{"logbook-bwrap:12:34", 12, 34, true},
		{"logbook-bwrap:12:0", 12, 0, true},
		{"/usr/bin/bwrap", 0, 0, false},
		{"logbook-bwrap:12", 0, 0, false},
		{"logbook-bwrap::34", 0, 0, false},
		{"logbook-bwrap:0:34", 0, 0, false},
		{"logbook-bwrap:-3:34", 0, 0, false},
		{"logbook-bwrap:12:34:56", 0, 0, false},
		{"logbook-bwrap:12:x", 0, 0, false},
		{"xlogbook-bwrap:12:34", 0, 0, false},
	} {
		pid, start, ok := parseMarker([]byte(tc.argv0))
		if pid != tc.pid || start != tc.start || ok != tc.ok {
			t.Errorf("parseMarker(%q) = %d, %d, %v; want %d, %d, %v", tc.argv0, pid, start, ok, tc.pid, tc.start, tc.ok)
		}
	}
	if n := len(boundaryArgv0()); n > markerMax {
		t.Errorf("boundaryArgv0() is %d bytes, more than markerMax (%d)", n, markerMax)
	}
}

// Environment of TestHelperBlockedBoundary.
const helperBlockedBwrap = "LOGBOOK_TEST_BLOCKED_BWRAP" // the bubblewrap to run

// TestHelperBlockedBoundary is not a test: run as a child process by
// TestSweepBoundaries_KilledStarter, it starts bubblewrap under its
// marker as a restricted start does, and stops bubblewrap right after
// its fork of the first child, before it lets that child go on: its
// status pipe (--json-status-fd), where bubblewrap writes the child's pid
// first, is full. Then it says "blocked <child> <bwrap>" and waits to be
// killed. That is a worker killed between bubblewrap's fork and any
// write of its own: bubblewrap dies by its parent-death signal, and its
// child, blocked until bubblewrap writes its user namespace's maps,
// stays (bubblewrap 0.8.0).
func TestHelperBlockedBoundary(t *testing.T) {
	bw := os.Getenv(helperBlockedBwrap)
	if bw == "" {
		t.Skip("helper process for TestSweepBoundaries_KilledStarter")
	}
	fail := func(format string, a ...any) {
		fmt.Printf("helper: "+format+"\n", a...)
		os.Exit(1)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		fail("pipe: %v", err)
	}
	chunk := make([]byte, 4096)
	for {
		_, err := unix.Write(p[1], chunk)
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			fail("fill the status pipe: %v", err)
		}
	}
	if err := unix.SetNonblock(p[1], false); err != nil {
		fail("status pipe: %v", err)
	}
	status := os.NewFile(uintptr(p[1]), "status")
	system, links := systemMounts()
	cmd := &exec.Cmd{
		Path:        bw,
		Args:        append(append([]string{boundaryArgv0()}, boundaryBase(system, links, DefaultTmpBytes)...), "--json-status-fd", "3", "--", "true"),
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  []*os.File{status},
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		fail("start bubblewrap: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		procs, _ := allProcs()
		for _, c := range procs {
			if c.ppid == cmd.Process.Pid {
				fmt.Println("blocked", c.pid, cmd.Process.Pid)
				select {} // until killed
			}
		}
		if exited(cmd.Process.Pid) {
			fail("bubblewrap exited without a child: %v", cmd.Wait())
		}
		time.Sleep(2 * time.Millisecond)
	}
	fail("bubblewrap forked no child in 10 s")
}

// pidfd opens a pidfd on process pid, closed at the test's end; the
// process's end (or a zombie's) makes it readable, whatever later
// process gets the pid.
func pidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("no pidfd (Linux < 5.3): a process's end cannot be told from a reuse of its pid")
	}
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// ended reports whether the process pidfd fd names has ended.
func ended(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// argv0Of returns the argv[0] of process pid, "" if it cannot be read.
func argv0Of(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	arg0, _, _ := bytes.Cut(b, []byte{0})
	return string(arg0)
}

// requireBoundary skips a test where bubblewrap cannot build the
// boundary (no user namespaces for this user, say).
func requireBoundary(t *testing.T) string {
	t.Helper()
	requireBwrap(t)
	bw, err := findBwrap("")
	if err == nil {
		err = probe(t.Context(), bw)
	}
	if err != nil {
		t.Skipf("bubblewrap cannot build the boundary for this user here: %v", err)
	}
	return bw
}

// A process killed after it forked bubblewrap and before it wrote
// anything leaves bubblewrap's first child blocked for good, with no
// record of it anywhere: SweepBoundaries finds it by its argv[0] and
// kills it. A boundary whose starter runs (this test's own held
// command, its bubblewrap and first child carrying this process's
// marker) is left alone.
func TestSweepBoundaries_KilledStarter(t *testing.T) {
	bw := requireBoundary(t)

	// This process's own held boundary, never released.
	live := newSpec(t, ReadOnly, false, "sleep", "300")
	live.Hold = true
	p := start(t, live, newRecorder(""))
	defer func() { p.Stop(); _, _ = p.Wait() }()
	liveFD := pidfd(t, p.Pid())
	var liveChild int
	waitFor(t, "the held boundary's first child", func() bool {
		procs, _ := allProcs()
		for _, c := range procs {
			if c.ppid == p.Pid() {
				liveChild = c.pid
				return true
			}
		}
		return false
	})
	liveChildFD := pidfd(t, liveChild)
	for _, pid := range []int{p.Pid(), liveChild} {
		if got := argv0Of(pid); got != boundaryArgv0() {
			t.Errorf("argv[0] of the held boundary's process %d is %q, want %q", pid, got, boundaryArgv0())
		}
	}

	// Another process's, killed: tried again while a sweep of another
	// process on the host (a test beside this one) kills the child before
	// this one's does.
	for try := 1; ; try++ {
		child := exec.Command(os.Args[0], "-test.run=^TestHelperBlockedBoundary$")
		child.Env = append(os.Environ(), helperBlockedBwrap+"="+bw)
		child.Stderr = os.Stderr
		out, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		var orphan, bwrap int
		if _, err := fmt.Sscanf(line, "blocked %d %d", &orphan, &bwrap); err != nil {
			_ = child.Process.Kill()
			_ = child.Wait()
			t.Fatalf("helper: %q", line)
		}
		orphanFD, bwrapFD := pidfd(t, orphan), pidfd(t, bwrap)
		t.Cleanup(func() { _ = unix.PidfdSendSignal(orphanFD, unix.SIGKILL, nil, 0) })
		starter, _ := ProcStart(child.Process.Pid)
		want := fmt.Sprintf("%s%d:%d", BoundaryMarker, child.Process.Pid, starter)
		if got := argv0Of(orphan); got != want {
			t.Errorf("argv[0] of bubblewrap's first child is %q, want %q", got, want)
		}
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		waitFor(t, "bubblewrap to die with its starter", func() bool { return ended(bwrapFD) })
		time.Sleep(100 * time.Millisecond)
		if ended(orphanFD) {
			// Killed by another process's sweep (the serves and workers
			// of tests beside this one sweep the host's marked
			// boundaries of their user every 200 ms and more): this
			// test cannot tell that from a child that did not block.
			if try < 5 {
				t.Logf("try %d: bubblewrap's child %d ended before the sweep (another sweep on the host?)", try, orphan)
				continue
			}
			t.Skipf("bubblewrap's child ended before this test's sweep in %d tries: another sweep on the host is the likely cause (the unprivileged run of this package, alone on the host, checks it)", try)
		}
		killed, err := SweepBoundaries()
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the sweep to kill bubblewrap's blocked child", func() bool { return ended(orphanFD) })
		if killed < 1 {
			t.Errorf("the sweep says it killed %d processes, want 1 or more", killed)
		}
		break
	}
	if ended(liveFD) || ended(liveChildFD) {
		t.Errorf("the sweep killed the held boundary of a process that runs (bubblewrap ended: %v, its child: %v)", ended(liveFD), ended(liveChildFD))
	}
}

// A worker killed at any moment of a restricted start, in either mode,
// held or not, with no ledger to record anything, leaves nothing of the
// command running once SweepBoundaries has run. Killed 0–3 ms after Start
// returns.
func TestSweepBoundaries_KilledWorkerWithoutLedger(t *testing.T) {
	requireBoundary(t)
	marker := t.TempDir() // every workspace below it: bwrap's arguments name it
	const tries = 12
	for i := range tries {
		ws := filepath.Join(marker, strconv.Itoa(i))
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		mode := WorkspaceWrite
		if i%2 == 1 {
			mode = ReadOnly
		}
		env := []string{helperWorkspace + "=" + ws, helperLedger + "=", helperMode + "=" + string(mode)}
		if i%3 == 2 {
			env = append(env, helperHold+"=1")
		}
		child := startHelperWorker(t, env...)
		time.Sleep(time.Duration(i%4) * time.Millisecond)
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
	}
	left := func() []int {
		var live []int
		for _, pid := range sandboxtest.ProcessesWith(marker + "/") {
			if !exited(pid) {
				live = append(live, pid)
			}
		}
		return live
	}
	before, killed := sweepLeft(t, left)
	if l := left(); len(l) > 0 {
		t.Fatalf("%d of %d killed workers' starts left a process after the sweep (it killed %d): pids %v", len(l), tries, killed, l)
	}
	t.Logf("%d processes of %d killed workers' starts outlived them; the sweep killed %d processes", before, tries, killed)
}

// Every bubblewrap process of the probe carries the marker naming this
// process.
func TestProbe_CarriesMarker(t *testing.T) {
	bw := probeCopy(t)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_ = probe(context.Background(), bw)
			}
		}
	}()
	seen := map[int]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 3 && time.Now().Before(deadline) {
		for _, pid := range processesOf(t, bw) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if len(b) == 0 || string(b) == bw+"\x00--version\x00" {
				continue // gone, or the command the boundary runs
			}
			arg0, _, _ := bytes.Cut(b, []byte{0})
			seen[pid] = string(arg0)
		}
	}
	close(stop)
	<-done
	if len(seen) == 0 {
		t.Fatal("no process of the probe's bubblewrap seen in 10 s")
	}
	for pid, a := range seen {
		if a != boundaryArgv0() {
			t.Errorf("argv[0] of the probe's process %d is %q, want %q", pid, a, boundaryArgv0())
		}
	}
}

// Environment of TestHelperProbeLoop.
const helperProbeLoop = "LOGBOOK_TEST_PROBE_LOOP" // the bubblewrap to probe

// TestHelperProbeLoop is not a test: run as a child process by
// TestProbe_KilledCallerLeavesNoProcess, it says "probing" and probes
// the bubblewrap helperProbeLoop names until it is killed.
func TestHelperProbeLoop(t *testing.T) {
	bw := os.Getenv(helperProbeLoop)
	if bw == "" {
		t.Skip("helper process for TestProbe_KilledCallerLeavesNoProcess")
	}
	fmt.Println("probing")
	for {
		_ = probe(context.Background(), bw)
	}
}

// A process killed while it probes bubblewrap (Available, or a Start
// without Spec.Probed) may leave bubblewrap's first child blocked for
// good, with no ledger to name it; SweepBoundaries kills it. Killed 0 to
// 15 ms after the first probe, in steps of 1 ms.
func TestProbe_KilledCallerLeavesNoProcess(t *testing.T) {
	bw := probeCopy(t)
	const tries = 16
	for i := range tries {
		child := exec.Command(os.Args[0], "-test.run=^TestHelperProbeLoop$")
		child.Env = append(os.Environ(), helperProbeLoop+"="+bw)
		child.Stderr = os.Stderr
		out, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "probing\n" {
			_ = child.Process.Kill()
			_ = child.Wait()
			t.Fatalf("helper: %q", line)
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
	}
	left := func() []int {
		var live []int
		for _, pid := range processesOf(t, bw) {
			if !exited(pid) {
				live = append(live, pid)
			}
		}
		return live
	}
	before, killed := sweepLeft(t, left)
	if l := left(); len(l) > 0 {
		for _, pid := range l {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		t.Fatalf("%d of %d killed probes left a process of bubblewrap after the sweep (it killed %d): pids %v", len(l), tries, killed, l)
	}
	t.Logf("%d processes of %d killed probes outlived them; the sweep killed %d processes", before, tries, killed)
}

// sweepLeft lets what dies with bubblewrap go, counts what left says is
// left (before), sweeps (killed: what SweepBoundaries says it killed),
// and waits up to 5 s for left to say nothing is.
func sweepLeft(t *testing.T, left func() []int) (before, killed int) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	before = len(left())
	killed, err := SweepBoundaries()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(left()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return before, killed
}

// BenchmarkSweepBoundaries is one sweep of this host's processes (none
// left by a dead starter, as a rule): its cost is one read of
// /proc/<pid>/cmdline per process.
func BenchmarkSweepBoundaries(b *testing.B) {
	names, _ := filepath.Glob("/proc/[0-9]*")
	for b.Loop() {
		if _, err := SweepBoundaries(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(names)), "procs")
}
