package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/sandbox/reporter"
)

// Stream names one output stream of a command.
type Stream string

// Output streams: a TTY command has only PTY, a pipe command has Stdout and
// Stderr.
const (
	PTY    Stream = "pty"
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Output coalescing.
const (
	// MaxChunk is the largest Chunk.Data, in bytes (32 KiB).
	MaxChunk = 32 << 10
	// FlushInterval is the longest time output read from the command waits
	// for more before it is emitted (50 ms).
	FlushInterval = 50 * time.Millisecond
)

// Bounds on reading output after the group leader has exited. Output written
// before the exit is always delivered; these only stop waiting for writers
// that escaped the process group (FullAccess only) and still hold the
// terminal or a pipe.
const (
	drainIdle  = 500 * time.Millisecond // no output for this long: stop
	drainWait  = 2 * time.Second        // total time spent waiting for output
	drainBytes = 4 << 20                // bytes read, per stream
)

// Reading buffers: each read fills a buffer of readSize bytes, and up to
// inFlight of them per stream wait for emitLoop before the reader waits too.
// The reader never waits for emitLoop to hand a buffer back: it allocates a
// new one, and emitLoop passes full ones on to emit anyway.
const (
	readSize = MaxChunk
	inFlight = 4
)

// Chunk is a piece of one output stream. Chunks of a stream are emitted in
// order and contiguously: the first has Offset 0 and each next one starts
// where the previous ended.
type Chunk struct {
	Stream Stream
	Offset int64  // bytes of Stream emitted before Data[0]
	Data   []byte // 1 to MaxChunk bytes, exactly as read; owned by the receiver
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the exit status; if the process was killed by a signal it
	// is 128 + the signal number, as in a shell. In every mode it is the
	// command's own: in restricted modes the reporter in the boundary
	// reports the command's wait status (see reporterPath), so a command
	// killed by signal N has Signal set, unlike one that called
	// exit(128+N).
	ExitCode int
	// Signal is the name of the signal that killed the process, e.g.
	// "SIGKILL", or "" if it exited. In restricted modes it is also
	// "SIGKILL" when bubblewrap itself was killed (by Stop's SIGKILL, for
	// one), or when the boundary ended before the command did (its
	// reporter was killed): the end of the boundary's PID namespace kills
	// the command with SIGKILL.
	Signal string
	// Stopped is true if Stop was called (or ctx was done) before the
	// process exited.
	Stopped bool
	// Lingering is true if, after the process exited and its group was
	// killed, something outside the group still held its output open and
	// reading was given up: output written after that point is lost, and
	// that process may still be running. Only in FullAccess: a descendant
	// that left the group (setsid, or a job-control shell's own groups).
	Lingering bool
	// Duration is the time from start to the exit of the process.
	Duration time.Duration
	// Limits are the limits that bound the command, and by what.
	Limits Applied
}

// output is one stream the Process reads.
type output struct {
	stream Stream
	f      *os.File // our end: a pipe's read end or the pty master; pollable
}

// Process is a started command. Its methods are safe for concurrent use.
// It owns one goroutine per output stream, one that calls emit and one that
// waits for the exit; they end on their own once the command has exited and
// its output is emitted, which is when Wait returns. Stop makes sure the
// command exits.
type Process struct {
	name       string // argv[0], for messages
	pid        int
	procStart  uint64 // the leader's start time, clock ticks after boot; 0 if unknown
	grace      time.Duration
	restricted bool
	tty        bool
	cmd        *exec.Cmd
	start      time.Time
	stdin      *os.File // pipe write end, or the pty master (also in outputs)
	outputs    []output
	status     *os.File // read end of bwrap's JSON status; nil in FullAccess
	statusR    *bufio.Reader
	report     *os.File      // read end of the reporter's pipe (reportFD); nil in FullAccess
	procs      int           // restricted: the process limit Release puts in place
	released   chan struct{} // restricted: closed once Release is done, or will not be
	limited    chan struct{} // held: closed once limit has run (limitRes is set); nil otherwise
	limitRes   limitResult   // held: what limit came to, once limited is closed
	unlocked   chan struct{} // ReadOnly: closed once its locks are let go after the setup; nil before Release
	cg         *cgroup       // the command's cgroup; nil if none could be made
	limits     Applied
	setupErr   error  // the limits could not be put in place: bwrap was killed; under mu
	layout     layout // restricted modes: what to clean up after the exit
	sandboxFD  int    // restricted: pidfd of bwrap's sandbox (its pid 1) once released; -1 if none

	stdinClosed atomic.Bool // CloseStdin was called

	mu         sync.Mutex
	block      *os.File    // write end of bwrap's --block-fd until Release or the exit takes it
	stopping   bool        // Stop was called
	leaderGone bool        // the leader exited: no more signals to its group
	killTimer  *time.Timer // SIGKILL after grace; nil until Stop
	tree       []member    // FullAccess: the tree held by Stop, killed with the group

	exited chan struct{} // closed once the leader has been reaped
	done   chan struct{} // closed once res and err are final
	torn   chan struct{} // closed once the host side is taken down (see teardown)
	res    Result
	err    error
}

// Start validates spec and starts its command. Output reaches emit in order,
// called from one goroutine owned by the Process, never concurrently; emit
// owns each Chunk's Data. While emit runs no more output is read, so a slow
// emit slows the command down rather than buffering without bound. emit may
// call Stop, but must not call Wait or WriteStdin, which can wait for the
// command while the command waits for emit. emit may be nil to discard
// output.
//
// Start returns an error, and nothing has run, if spec is invalid
// (ErrInvalidSpec), argv[0] is not found (ErrNotFound), a restricted mode
// cannot get its boundary (ErrRefused), ctx is already done, or the
// process cannot be started: a program the kernel refuses as "text file
// busy" (open for writing) only once it was tried again for
// reporter.BusyWait (reporter.WhileBusy). A restricted start first runs
// bubblewrap once as a probe, which costs about as much as the boundary
// itself, unless spec.Probed says the caller did so already. A spec
// (*Spec).Busy has just planned is started on that plan, not planned again
// before its locks are taken; one like a spec this process started before
// takes the locks that start took first and plans once, under them, when
// that plan locks the same directories (see lockHints). A restricted start
// takes locks on the host, held until the command's boundary is gone: a
// WorkspaceWrite start its workspace, exclusively (see the package
// documentation). It waits for another command's for as long as ctx lets
// it, then refuses (ErrRefused, wrapping ctx's error).
//
// When ctx is done the Process is stopped as by Stop. The caller must call
// Wait to learn the result. In restricted modes bubblewrap's
// --die-with-parent watches the OS thread that called Start: do not call it
// from a goroutine locked to a thread (runtime.LockOSThread) that may exit
// while the command runs.
func Start(ctx context.Context, spec Spec, emit func(Chunk)) (_ *Process, rerr error) {
	pl, hint, planned := spec.planned.take() // (*Spec).Busy's, made a moment ago
	// A WorkspaceWrite start records the names it may make (one
	// fdatasync) while it waits for its locks and plans under them.
	early := recordEarly(spec)
	defer func() { early.drop() }() // unless a plan took it over
	busy := hint != nil             // Busy found the hinted locks free
	planned = planned && !busy
	var err error
	var key string  // restricted: spec's lockKey, for lockHints
	locked := false // pl was planned under its own locks, which it holds until claim
	if spec.Mode.restricted() {
		key = spec.lockKey()
		if !busy && !planned {
			hint = lockHints.get(key)
		}
		if hint != nil {
			if pl, planned, locked, err = lockFirst(ctx, spec, key, hint, busy); err != nil {
				return nil, err
			}
		}
	}
	if locked && !handTo(&early, &pl.layout) {
		// The missing names are recorded while the start gets on
		// (record): the write's fdatasync overlaps the pipes, the
		// cgroup and bubblewrap's lookup rather than the claim.
		pl.layout.ledger = newLedger(spec.Ledger, pl.layout.ws)
		pl.layout.recorded = pl.layout.record()
	}
	defer func() {
		if rerr != nil && locked {
			// Failed before claim took them over.
			if pl.layout.recorded != nil {
				<-pl.layout.recorded
				pl.layout.ledger.remove()
			}
			pl.layout.unlock()
		}
	}()
	if !planned {
		if pl, err = validate(spec); err != nil {
			return nil, err
		}
	}
	if spec.Hold && !pl.restricted {
		return nil, fmt.Errorf("start %q: %w: Hold needs a restricted mode, not %s", pl.name, ErrInvalidSpec, spec.Mode)
	}
	var rep string // restricted: the reporter's executable (see reporterPath)
	if pl.restricted {
		bw, err := findBwrap(spec.Bwrap)
		if err == nil && !spec.Probed {
			err = probe(ctx, bw)
		}
		if err != nil {
			return nil, fmt.Errorf("start %q in mode %s: %w", pl.name, spec.Mode, err)
		}
		pl.path = bw
		// Without ReporterName beside the worker, FindReporter names
		// the worker's own executable and says so: that reporter is
		// slower to start, but reports the same.
		if rep, err = FindReporter(spec.Reporter); rep == "" {
			return nil, fmt.Errorf("start %q in mode %s: %w", pl.name, spec.Mode, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %q: %w", pl.name, err)
	}
	if emit == nil {
		emit = func(Chunk) {}
	}

	cmd := &exec.Cmd{Path: pl.path, Args: pl.args, Env: pl.env, Dir: pl.dir}
	p := &Process{
		name:       pl.name,
		grace:      pl.grace,
		restricted: pl.restricted,
		tty:        pl.tty,
		cmd:        cmd,
		sandboxFD:  -1,
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
		torn:       make(chan struct{}),
	}
	// The command leads a process group of its own, so the group can be
	// signalled as a whole, and has no terminal of the worker's: a TTY
	// command gets a new session, whose controlling terminal is its own
	// pseudo-terminal (Setpgid must not be added: with Setsid it fails
	// with EPERM); a pipe command too, but where the worker can have no
	// terminal at all and the command's tree is held otherwise (pipeAttr).
	var child []*os.File // the command's ends, closed here once it has them
	if pl.tty {
		master, slave, err := openPTY()
		if err != nil {
			return nil, fmt.Errorf("start %q: %w", pl.name, err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL} // Ctty 0: stdin
		child = []*os.File{slave}
		p.stdin = master
		p.outputs = []output{{PTY, master}}
	} else {
		var f [6]*os.File // stdin r, w; stdout r, w; stderr r, w
		for i := 0; i < len(f); i += 2 {
			if f[i], f[i+1], err = os.Pipe(); err != nil {
				closeAll(f[:i]...)
				return nil, fmt.Errorf("start %q: pipe: %w", pl.name, err)
			}
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = f[0], f[3], f[5]
		cmd.SysProcAttr = pipeAttr(pl.restricted) // a FullAccess one's cgroup is known below
		child = []*os.File{f[0], f[3], f[5]}
		p.stdin = f[1]
		p.outputs = []output{{Stdout, f[2]}, {Stderr, f[4]}}
	}

	var block *os.File // write end of bwrap's --block-fd
	if pl.restricted {
		var f [6]*os.File // status r, w; block r, w; report r, w
		for i := 0; i < len(f); i += 2 {
			if f[i], f[i+1], err = os.Pipe(); err != nil {
				closeAll(f[:i]...)
				p.closeFiles()
				closeAll(child...)
				return nil, fmt.Errorf("start %q: pipe: %w", pl.name, err)
			}
		}
		cmd.ExtraFiles = []*os.File{f[1], f[2], f[3], f[5]} // statusFD, blockFD, holdFD, reportFD
		child = append(child, f[1], f[2], f[5])
		p.status, p.statusR, block = f[0], bufio.NewReader(f[0]), f[3]
		p.report = f[4]
	}
	// A restricted start makes the cgroup while it claims the workspace:
	// neither waits for the other, and the kernel spends a good part of
	// a millisecond on each.
	limitsSet := make(chan struct{})
	if pl.restricted {
		go func(pl plan) {
			defer close(limitsSet)
			p.setLimits(pl)
		}(pl)
	} else {
		p.setLimits(pl)
		close(limitsSet)
		if !pl.tty && p.cg != nil && p.cg.v2 {
			// The cgroup holds the whole tree from its first
			// instruction: the session need not.
			cmd.SysProcAttr = pipeAttr(true)
		}
	}

	// Descriptors the worker inherited (serve 7>>file) are not close-on-exec;
	// the command must get none of them.
	if err := closeInheritedOnExec(); err != nil {
		<-limitsSet
		p.closeFiles()
		closeAll(child...)
		if p.cg != nil {
			p.cg.remove()
		}
		return nil, fmt.Errorf("start %q: %w", pl.name, err)
	}
	if pl.restricted {
		// The top-level protected names are decided under the
		// workspace's lock, held until the boundary is gone.
		replan := func() (layout, error) {
			again, err := validate(spec)
			return again.layout, err
		}
		if locked {
			replan, locked = nil, false // claim's from here on
		}
		if pl.layout.recorded == nil && !handTo(&early, &pl.layout) {
			pl.layout.ledger = newLedger(spec.Ledger, pl.layout.ws)
		}
		err := pl.layout.claim(ctx, replan)
		<-limitsSet
		if err != nil {
			p.closeFiles()
			closeAll(child...)
			closeAll(block)
			if p.cg != nil {
				p.cg.remove()
			}
			return nil, fmt.Errorf("start %q in mode %s: %w", pl.name, spec.Mode, err)
		}
		p.layout = pl.layout
		lockHints.put(key, p.layout.locks())
		p.limits.LinkedReadOnly, p.limits.LinkedWith = p.layout.links.files, p.layout.links.others
		// argv[0] names this process (BoundaryMarker): should it die
		// before bubblewrap lets its first child go on, a sweep finds
		// that child by it (SweepBoundaries).
		cmd.Args = append([]string{boundaryArgv0()}, pl.layout.args(rep, pl.args)...)
		if len(cmd.Args)-1 > bwrapMaxArgs || argvBytes(pl.args) > argvInline {
			// More than bubblewrap takes: the reporter reads the
			// command's argv from a descriptor of its own.
			f, err := argvFile(pl.args)
			if err != nil {
				p.layout.release()
				p.closeFiles()
				closeAll(child...)
				closeAll(block)
				if p.cg != nil {
					p.cg.remove()
				}
				return nil, fmt.Errorf("start %q: %w", pl.name, err)
			}
			cmd.Args = append([]string{boundaryArgv0()}, pl.layout.args(rep, []string{reporter.ArgvFlag})...)
			cmd.ExtraFiles = append(cmd.ExtraFiles, f) // reporter.ArgvFD: 3 + its index
			child = append(child, f)
		}
	}
	if p.cg != nil && p.cg.v2 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, p.cg.fd
	}
	spec.trace(StepPrepared)
	p.start = time.Now()
	// A program the kernel refuses as busy (open for writing: most often
	// by a child its writer forked, until that child's exec) is tried
	// again, as the restricted modes' reporter tries it.
	tries := 0
	err = reporter.WhileBusy(func() error {
		if tries++; tries > 1 {
			cmd = again(cmd, cmd.Path, cmd.Args)
		}
		return startTry(cmd)
	})
	if err != nil && !pl.restricted && errors.Is(err, syscall.ENOEXEC) {
		// A file the kernel will not run as a program (a script without
		// "#!") runs as execvp(3) runs it, and as the restricted modes'
		// reporter does: /bin/sh file args.
		cmd = again(cmd, "/bin/sh", append([]string{"/bin/sh", pl.path}, pl.args[1:]...))
		err = startTry(cmd)
	}
	p.cmd = cmd
	closeAll(child...)
	if err != nil {
		if pl.restricted {
			p.layout.release()
		}
		p.closeFiles()
		closeAll(block)
		if p.cg != nil {
			p.cg.remove()
		}
		return nil, fmt.Errorf("start %q: %w", pl.name, err)
	}
	p.pid = cmd.Process.Pid
	spec.trace(StepForked)
	p.procStart, _ = ProcStart(p.pid)
	if pl.restricted {
		p.layout.recordForked(p.pid, p.procStart) // while bubblewrap starts
	}
	if pl.restricted {
		p.block, p.procs, p.released = block, pl.procs, make(chan struct{})
		if spec.Hold {
			// The limits go on the sandbox while it is held, as soon
			// as bubblewrap names its first process: Release then only
			// lets it go on, once they are in place.
			p.limited = make(chan struct{})
			go func() {
				defer close(p.limited)
				p.limitRes = p.limit(pl.procs)
			}()
		} else {
			_ = p.Release() // an error is Wait's
		}
	}

	in := make(chan readMsg, inFlight*len(p.outputs))
	drained := make(chan drainResult, 1)
	go func() { drained <- p.emitLoop(in, emit) }()
	for i, o := range p.outputs {
		go p.read(i, o.f, in)
	}
	stopCtx := context.AfterFunc(ctx, p.Stop)
	go p.wait(stopCtx, drained, spec.trace)
	return p, nil
}

// setLimits decides the command's limits: a cgroup where one can be made,
// else RLIMIT_NPROC for an unprivileged worker's restricted command.
func (p *Process) setLimits(pl plan) {
	// In v1 a process can only be moved in once it runs: bwrap's sandbox
	// waits for that, a FullAccess command would not.
	kernel := pl.procs
	if pl.restricted {
		kernel += reporterTasks
	}
	cg, a, note := newCgroup(kernel, pl.memory, pl.restricted)
	if a.Procs != 0 {
		a.Procs = pl.procs
	}
	if cg == nil {
		a.Note = "no cgroup (" + note + ")"
		if pl.restricted && os.Geteuid() != 0 {
			a.Procs, a.ProcsBy = pl.procs, ByRlimit
		}
	}
	if pl.restricted {
		a.TmpBytes = pl.layout.tmpBytes // the links are counted once the workspace is searched (claim)
	}
	p.cg, p.limits = cg, a
}

// Release lets a command started with Spec.Hold run: it waits until the
// limits are on the sandbox's first process (Start puts them there as
// soon as bubblewrap reports it, up to 10 s, while the sandbox is held)
// and unblocks it. For a command started without Hold,
// released before, or already exited it does nothing and returns nil. An
// error wraps ErrRefused: the limits could not be put in place, so the
// command never runs; bubblewrap and its sandbox are killed and Wait
// reports the same error.
func (p *Process) Release() error {
	p.mu.Lock()
	block := p.block
	p.block = nil
	p.mu.Unlock()
	if block == nil {
		return nil
	}
	defer close(p.released)
	err := p.release(block, p.procs)
	if err != nil {
		err = fmt.Errorf("wait %q: %w: limits: %v", p.name, ErrRefused, err)
		p.mu.Lock()
		p.setupErr = err
		p.mu.Unlock()
		// Never run without the limits: bwrap and its sandbox die
		// before the sandbox is released.
		_ = unix.Kill(-p.pid, unix.SIGKILL)
	}
	closeAll(block)
	return err
}

// limitResult is what limit came to: the sandbox's first process, or
// none (bubblewrap failed before its sandbox, gone: Wait reports it), or
// why the limits could not be put on it.
type limitResult struct {
	pid  int
	gone bool
	err  error
}

// limit waits for bwrap to name its sandbox's first process (up to
// releaseWait), which waits on block, and puts the limits on it: the
// cgroup v1 it joins, or RLIMIT_NPROC. It runs once a Process, on
// Release's goroutine or, for a held one, on its own from Start (see
// Process.limited); it reads statusR's first line, which nothing else
// reads before it is done.
func (p *Process) limit(procs int) limitResult {
	_ = p.status.SetReadDeadline(time.Now().Add(releaseWait))
	pid, err := readChildPid(p.statusR)
	_ = p.status.SetReadDeadline(time.Time{})
	if errors.Is(err, io.EOF) {
		return limitResult{gone: true}
	}
	if err != nil {
		return limitResult{err: err}
	}
	// A handle on the sandbox's pid 1, whose end (after the kernel has
	// killed the rest of its PID namespace) awaitSandbox awaits before
	// the exit is reported and the placeholders go. It waits on block,
	// so it is still this process.
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		p.sandboxFD = fd
	}
	if p.cg != nil && !p.cg.v2 {
		if err := p.cg.add(pid); err != nil {
			return limitResult{pid: pid, err: err}
		}
	}
	if p.limits.ProcsBy == ByRlimit {
		if err := setNproc(pid, procs+reporterTasks); err != nil {
			return limitResult{pid: pid, err: err}
		}
	}
	return limitResult{pid: pid}
}

// release puts the limits on bwrap's sandbox, whose first process waits on
// block (or waits until a held one's are on), and lets it go on. Errors
// mean it must not go on.
func (p *Process) release(block *os.File, procs int) error {
	var r limitResult
	if p.limited != nil {
		<-p.limited
		r = p.limitRes
	} else {
		r = p.limit(procs)
	}
	if r.gone {
		return nil // bwrap failed before its sandbox: Wait reports it
	}
	if r.err != nil {
		return r.err
	}
	pid := r.pid
	if _, err := block.Write([]byte{1}); err != nil {
		return fmt.Errorf("release the sandbox: %w", err)
	}
	if p.layout.mode == ReadOnly {
		// A reader's locks guard its mounts while bwrap makes them, and
		// it writes nothing another command's mounts depend on: they go
		// once the command runs, so a long reader holds up no writer.
		p.unlocked = make(chan struct{})
		go func() {
			defer close(p.unlocked)
			if awaitChild(pid, releaseWait) {
				p.layout.unlock()
			}
		}()
	}
	return nil
}

// awaitChild waits, up to d, until process pid (bwrap's sandbox, pid 1 of
// its namespace) has a child, the command, which it starts only once its
// mounts are made, or is gone: exited, whether reaped yet or not (a
// command that ends at once takes pid 1 with it, which stays a zombie
// until its parent collects it). It reports whether either happened. A
// kernel without /proc/PID/task/TID/children answers false at once.
func awaitChild(pid int, d time.Duration) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	children := dir + "/task/" + strconv.Itoa(pid) + "/children"
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		b, err := os.ReadFile(children)
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			return true
		}
		if err != nil {
			_, serr := os.Stat(dir)
			return errors.Is(serr, fs.ErrNotExist)
		}
		if exited(pid) {
			return true
		}
	}
	return false
}

// exited reports whether process pid has exited and waits to be
// reaped: its state in /proc/<pid>/stat (readStat) is Z (zombie) or X
// (dead). A process gone altogether reads as exited too.
func exited(pid int) bool {
	st, err := readStat(pid)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	return st.dead
}

// releaseWait bounds the wait for bwrap to report its sandbox's process.
const releaseWait = 10 * time.Second

// sandboxGoneWait bounds awaitSandbox: the processes of a PID namespace
// whose pid 1 exits are killed (SIGKILL) and awaited by the kernel.
const sandboxGoneWait = 5 * time.Second

// teardown is the goroutine that takes down what the command left on
// the host once its tree is gone: the placeholders and the locks of a
// restricted command (pending announces those locks to this process's
// starts, or is nil for a reader, whose locks go on their own), then
// its cgroup. Wait returns once it is done.
func (p *Process) teardown(pending *pendingRelease) {
	defer close(p.torn)
	if p.restricted {
		if p.unlocked != nil {
			<-p.unlocked
		}
		p.layout.release()
		pending.done()
	}
	if p.cg != nil {
		p.cg.remove()
	}
}

// awaitSandbox waits, up to sandboxGoneWait, until the sandbox's pid 1 has
// exited, which it does only after every other process of its PID
// namespace (so of its mount namespace) is gone. Called once bwrap, its
// parent, has been reaped.
func (p *Process) awaitSandbox() {
	if p.sandboxFD < 0 {
		return
	}
	defer func() { unix.Close(p.sandboxFD); p.sandboxFD = -1 }()
	deadline := time.Now().Add(sandboxGoneWait)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(p.sandboxFD), Events: unix.POLLIN}}, ms)
		if n > 0 || err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// openPTY returns a pseudo-terminal of TermCols × TermRows. The master is
// non-blocking and pollable, so deadlines and Close interrupt its Read and
// Write: creack/pty leaves its own master in blocking mode (it calls Fd for
// its ioctls), where neither works, so it is replaced by a duplicate.
func openPTY() (master, slave *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer m.Close()
	if err := pty.Setsize(m, &pty.Winsize{Rows: TermRows, Cols: TermCols}); err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("set pty size: %w", err)
	}
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		s.Close()
		return nil, nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), m.Name()), s, nil
}

// Workspace returns, in the restricted modes, the workspace's path as its
// boundary mounts it: Spec.Workspace resolved when the command's locks
// were taken ("" in FullAccess). A caller that admitted the command on a
// resolved path compares the two before it releases a held command.
func (p *Process) Workspace() string {
	if !p.restricted {
		return ""
	}
	return p.layout.ws
}

// Pid returns the host process id of the process group leader: the command
// in FullAccess, bubblewrap in the restricted modes (the command has other
// ids inside its PID namespace).
func (p *Process) Pid() int { return p.pid }

// ProcStart returns the leader's start time in clock ticks after boot, as
// the package function ProcStart reads it right after the start; 0 if it
// could not be read. With Pid and BootID it names the process for
// KillTree.
func (p *Process) ProcStart() uint64 { return p.procStart }

// startUnlocked starts cmd from a goroutine of its own. The parent-death
// signal (and bubblewrap's --die-with-parent) fire when the OS thread that
// forked the command exits, not the process; Go ends a thread only when a
// goroutine locked to it (runtime.LockOSThread) exits, and a fresh
// goroutine never runs on a thread locked by another. So the command dies
// with the worker's process and never earlier, whatever the caller's
// thread does.
func startUnlocked(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() { errc <- cmd.Start() }()
	return <-errc
}

// startTry is startUnlocked; a test sees each of Start's tries through
// it.
var startTry = startUnlocked

// bwrapMaxArgs is the most arguments bubblewrap takes after its own name,
// its options and the command's together (MAX_ARGS, bubblewrap 0.8.0:
// "Exceeded maximum number of arguments 9000"). A restricted command
// whose boundary needs more gets its argv on reporter.ArgvFD.
const bwrapMaxArgs = 9000

// argvInline is the most bytes of a restricted command's argv (its
// arguments with a NUL each) put on bubblewrap's command line; a longer
// one goes on reporter.ArgvFD, so that bubblewrap's own exec never fails
// for the command's size: the command's exec, the reporter's, then fails
// as it would in full access (E2BIG).
const argvInline = 128 << 10

// argvBytes returns the bytes argv takes as NUL-ended strings.
func argvBytes(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	return n
}

// argvFile returns a memfd (close-on-exec; a child gets it through
// ExtraFiles) that holds argv as reporter.ReadArgv reads it: each
// argument ended by a NUL byte. The caller owns it.
func argvFile(argv []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("logbook-argv", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("the command's arguments: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "logbook-argv")
	b := make([]byte, 0, argvBytes(argv))
	for _, a := range argv {
		b = append(append(b, a...), 0)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("the command's arguments: write: %w", err)
	}
	return f, nil
}

// again returns a command that runs path with args as cmd would, with
// cmd's environment, directory, descriptors and attributes: an exec.Cmd
// starts once, even when its start failed.
func again(cmd *exec.Cmd, path string, args []string) *exec.Cmd {
	return &exec.Cmd{Path: path, Args: args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: cmd.SysProcAttr}
}

// WriteStdin writes b to the command's standard input and returns how many
// bytes were written. It blocks while the pipe or terminal buffer is full.
// Under a TTY the terminal echoes the input into the PTY stream, and a lone
// line is limited to the terminal's line buffer (4095 bytes). After the
// process has exited it returns an error wrapping ErrExited; after
// CloseStdin, one wrapping os.ErrClosed.
func (p *Process) WriteStdin(b []byte) (int, error) {
	if p.hasExited() {
		return 0, fmt.Errorf("write stdin of %q: %w", p.name, ErrExited)
	}
	if p.stdinClosed.Load() {
		return 0, fmt.Errorf("write stdin of %q: %w", p.name, os.ErrClosed)
	}
	n, err := p.stdin.Write(b)
	if err != nil && p.hasExited() {
		err = ErrExited
	}
	if err != nil {
		return n, fmt.Errorf("write stdin of %q: %w", p.name, err)
	}
	return n, nil
}

// CloseStdin ends the command's standard input: it closes the pipe, or under
// a TTY writes the terminal's end-of-file character (Ctrl-D), which a program
// reading the terminal line by line sees as end of input; that write may
// block like WriteStdin. Idempotent; after the process has exited it
// returns nil.
func (p *Process) CloseStdin() error {
	if !p.stdinClosed.CompareAndSwap(false, true) || p.hasExited() {
		return nil
	}
	var err error
	if p.tty {
		_, err = p.stdin.Write([]byte{4})
	} else {
		err = p.stdin.Close()
	}
	if err != nil && !p.hasExited() {
		return fmt.Errorf("close stdin of %q: %w", p.name, err)
	}
	return nil
}

// Stop asks the command to end: SIGTERM to its process group now (in the
// restricted modes to every member but bubblewrap), SIGKILL to the whole
// group Grace later if the leader has not exited by then; a command held
// (Spec.Hold) and not yet released gets SIGKILL at once. It returns at once
// and is idempotent; after the process has exited it does nothing. Wait
// reports the outcome.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping || p.leaderGone {
		return
	}
	p.stopping = true
	if p.block != nil {
		// Held (Spec.Hold): the command has not run, so no grace is owed
		// to it, and the sandbox's first process would not heed SIGTERM.
		p.killTreeLocked(true)
		return
	}
	if p.restricted {
		// bwrap does not forward SIGTERM: it would die of it and take the
		// namespace with it at once, so spare it until the SIGKILL.
		if err := signalMembers(p.pid, unix.SIGTERM); err != nil {
			_ = unix.Kill(-p.pid, unix.SIGTERM)
		}
	} else {
		// The whole tree, taken while the leader lives: a descendant that
		// left the group (setsid) is found by its parent link, which the
		// leader's exit would cut.
		p.tree = holdTree(p.pid, p.procStart)
		_ = unix.Kill(-p.pid, unix.SIGTERM)
		signalTree(p.tree, unix.SIGTERM)
	}
	p.killTimer = time.AfterFunc(p.grace, p.kill)
}

// kill sends SIGKILL to the process group and the tree Stop held unless
// the leader is gone.
func (p *Process) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leaderGone {
		p.killTreeLocked(true)
	}
}

// killTreeLocked sends SIGKILL to the process group, to the tree Stop
// held, and in FullAccess, when scan is true, to the tree as it is now
// (members forked since Stop). p.mu is held.
func (p *Process) killTreeLocked(scan bool) {
	_ = unix.Kill(-p.pid, unix.SIGKILL)
	if p.restricted {
		return
	}
	signalTree(p.tree, unix.SIGKILL)
	if !scan {
		return
	}
	now := holdTree(p.pid, p.procStart)
	signalTree(now, unix.SIGKILL)
	releaseTree(now)
}

// Wait blocks until the process has exited, all its output has been
// emitted and what the command left on the host is taken down (a
// restricted command's placeholders and locks, the command's cgroup),
// then returns how it ended. A non-zero exit or a signal is a
// Result, not an error. The error wraps ErrRefused if bubblewrap exited
// without running the command (its setup or its exec of argv[0] failed
// after Start's probe passed), or reports a failure to wait for the process
// or to read its output; the Result is then as complete as it could be
// made. Wait may be called any number of times, from any goroutine, and
// returns the same values.
func (p *Process) Wait() (Result, error) {
	<-p.done
	<-p.torn
	return p.res, p.err
}

// WaitExit is Wait without the wait for the host side to be taken down:
// it returns the same values as soon as the process has exited and
// been reaped, what was left of its tree has been killed as at every
// exit (a restricted command's sandbox is gone with all it ran, and
// where a cgroup holds the command it is empty) and all its output has
// been emitted, while the placeholders, the locks and the cgroup itself
// go on their own, a few milliseconds later. A caller that reports the exit on
// WaitExit calls Wait once it has, before it lets go of the Process:
// a caller that ends its own process without Wait may leave
// placeholders in the workspace (for SweepPlaceholders). Meanwhile a
// restricted Start or Busy of this process that needs those locks
// waits for them to go, without polling; another process's waits as
// it waits for any lock.
func (p *Process) WaitExit() (Result, error) {
	<-p.done
	return p.res, p.err
}

func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// wait is the goroutine that sees the leader exit, cleans up its group,
// reaps it, waits for the output to be drained and emitted, and publishes
// the result.
func (p *Process) wait(stopCtx func() bool, drained <-chan drainResult, trace func(Step)) {
	werr := waitExited(p.pid)
	trace(StepExitSeen)
	duration := time.Since(p.start)
	p.mu.Lock()
	if werr == nil {
		// The leader is a zombie, so its group and session ids cannot be
		// in use by anyone else: kill what is left of the group, of the
		// session, and of the tree Stop held. Its children are
		// re-parented already, so only members of its session or group
		// lead to the rest of the tree: without any, no scan. Nor where
		// a cgroup v2 holds the whole tree (a FullAccess command's, from
		// its first instruction): what is left of it is killed there,
		// below, and the scan of /proc (two system calls a process)
		// would only delay the exit.
		p.killTreeLocked(!p.restricted && (p.cg == nil || !p.cg.v2) && !lonelyLeader(p.pid))
	}
	if p.cg != nil && (!p.restricted || werr != nil) {
		// And what left the group, where a cgroup holds the whole tree.
		// A restricted command's tree is its sandbox's PID namespace,
		// which the SIGKILL above ends: its cgroup is emptied once
		// the sandbox is awaited (below), where the kernel has killed
		// the rest, so that no kill round waits for the kernel.
		p.cg.kill()
	}
	releaseTree(p.tree)
	p.tree = nil
	p.leaderGone = true
	res := Result{Stopped: p.stopping, Duration: duration}
	if p.killTimer != nil {
		p.killTimer.Stop()
	}
	// A held sandbox never released: bubblewrap is gone, and its sandbox
	// died with it (--die-with-parent), so the block may be let go. Else
	// wait for a Release under way, which reads the status too.
	block := p.block
	p.block = nil
	p.mu.Unlock()
	stopCtx()
	if block != nil {
		closeAll(block)
		if p.limited != nil {
			// Never released: the limits' goroutine reads the status
			// (to its end, the sandbox being gone) and may hold a pidfd.
			<-p.limited
		}
	} else if p.released != nil {
		<-p.released
	}

	err := p.cmd.Wait()
	if p.restricted {
		// The exit is reported, and the placeholders go, only once
		// nothing in the boundary runs (nor can see their mounts
		// detached).
		p.awaitSandbox()
		if p.cg != nil {
			p.cg.kill() // what is left, if the sandbox could not be awaited
		}
	}
	trace(StepReaped)
	// The tree is gone: what is left on the host goes beside the
	// result, not before it. A reader's locks go on their own (see
	// release), and Release is done by now (p.unlocked is settled).
	var pending *pendingRelease
	if p.restricted {
		// The placeholders go before the exit is reported: a command
		// or tool that runs once it is (full_access, the host's own)
		// finds the workspace as it was. The ledger's record, the locks
		// and the cgroup go beside the result.
		if p.unlocked != nil {
			<-p.unlocked
		}
		p.layout.removePlaceholders()
		if p.unlocked == nil {
			pending = p.layout.pendingRelease()
		}
	}
	go p.teardown(pending)
	res.Limits = p.limits
	if _, ok := errors.AsType[*exec.ExitError](err); ok {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("wait %q: %w", p.name, err)
	}
	if ps := p.cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				res.Signal = unix.SignalName(ws.Signal())
				res.ExitCode = 128 + int(ws.Signal())
			case ws.Exited():
				res.ExitCode = ws.ExitStatus()
			}
		}
	}
	close(p.exited)
	// Interrupt reads blocked since before the exit; from now on each read
	// bounds itself (see read).
	deadline := time.Now().Add(drainIdle)
	for _, o := range p.outputs {
		_ = o.f.SetReadDeadline(deadline)
	}
	p.mu.Lock()
	setupErr := p.setupErr
	p.mu.Unlock()
	if setupErr != nil {
		err = errors.Join(err, setupErr)
	} else if p.status != nil {
		err = errors.Join(err, p.commandStatus(deadline, &res))
	}
	d := <-drained
	p.closeFiles()
	res.Lingering = d.lingering
	p.res = res
	p.err = errors.Join(err, d.err)
	close(p.done)
}

// commandStatus makes res, which holds how bubblewrap ended, say how a
// restricted command did, from the reporter's report (see
// reporterPath): the command's own exit status, or the signal that
// killed it. It returns an error wrapping ErrRefused if bwrap exited
// (with status code) without having run the command: its setup, its
// exec of the reporter or the reporter's exec of the command failed, and
// the message is in the output. A reporter gone without a report ended
// the boundary, and the command with it: killed by SIGKILL.
func (p *Process) commandStatus(deadline time.Time, res *Result) error {
	_ = p.report.SetReadDeadline(deadline)
	b, rerr := io.ReadAll(io.LimitReader(p.report, 64))
	ws, execErr, ok := reporter.Parse(b)
	if ok {
		res.ExitCode, res.Signal = 0, ""
		switch {
		case ws.Signaled():
			res.ExitCode, res.Signal = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
		case ws.Exited():
			res.ExitCode = ws.ExitStatus()
		}
		return nil
	}
	if res.Signal != "" {
		return nil // bubblewrap itself was killed: the command with it
	}
	_ = p.status.SetReadDeadline(deadline)
	js, err := io.ReadAll(io.LimitReader(p.statusR, 64<<10))
	if err != nil {
		return fmt.Errorf("wait %q: read bubblewrap status: %w", p.name, err)
	}
	ran := bytes.Contains(js, []byte(`"exit-code"`)) // bwrap ran the reporter
	switch {
	case ran && execErr == 0:
		if rerr != nil {
			return fmt.Errorf("wait %q: read the command's status: %w", p.name, rerr)
		}
		res.ExitCode, res.Signal = 128+int(unix.SIGKILL), unix.SignalName(unix.SIGKILL)
		return nil
	case res.Stopped:
		// A stop that lands while bubblewrap still sets the boundary
		// up ends it before the command runs: that is the stop asked
		// for, not a refusal.
		return nil
	}
	return fmt.Errorf("wait %q: %w: bubblewrap exited with status %d before running the command; its message is in the output",
		p.name, ErrRefused, res.ExitCode)
}

// closeFiles closes the worker's ends of stdin, the outputs, the status
// and the report.
func (p *Process) closeFiles() {
	closeAll(p.stdin, p.status, p.report)
	for _, o := range p.outputs {
		closeAll(o.f)
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// readMsg carries what a reader read to emitLoop: data, whose buffer goes
// back to free once copied, or the end of its stream.
type readMsg struct {
	idx       int // index in Process.outputs
	data      []byte
	free      chan<- []byte
	end       bool
	lingering bool  // end: reading was given up after the leader's exit
	err       error // end: a read failed
}

// drainResult is what emitLoop learned from the ends of all streams.
type drainResult struct {
	lingering bool
	err       error
}

// read is the goroutine that reads output i from f and sends it to in, until
// end of file (EIO on a pty master whose terminal was closed by everyone), a
// read error, or, once the leader has exited, the drain bounds. It puts all
// that is ready into a buffer before handing it over, so a command writing
// in small pieces costs few hand-overs.
func (p *Process) read(i int, f *os.File, in chan<- readMsg) {
	rc, rcErr := f.SyscallConn()
	free := make(chan []byte, 2) // buffers emitLoop has copied from
	var buf []byte
	waitLeft, bytesLeft := drainWait, drainBytes
	for {
		if buf == nil {
			select {
			case buf = <-free:
			default:
				buf = make([]byte, readSize)
			}
		}
		draining := p.hasExited()
		var began time.Time
		if draining {
			_ = f.SetReadDeadline(time.Now().Add(min(drainIdle, waitLeft)))
			began = time.Now()
		}
		var n int
		var err error
		if rcErr == nil {
			n, err = fill(rc, buf)
		} else {
			n, err = f.Read(buf)
		}
		if draining {
			waitLeft -= time.Since(began)
			bytesLeft -= n
			if err == nil && (waitLeft <= 0 || bytesLeft <= 0) {
				err = os.ErrDeadlineExceeded
			}
		}
		if n > 0 {
			in <- readMsg{idx: i, data: buf[:n], free: free}
			buf = nil
		}
		if err != nil {
			end := readMsg{idx: i, end: true}
			switch {
			case err == io.EOF, p.tty && errors.Is(err, syscall.EIO):
			case errors.Is(err, os.ErrDeadlineExceeded):
				end.lingering = true
			default:
				end.err = fmt.Errorf("read %s of %q: %w", p.outputs[i].stream, p.name, err)
			}
			in <- end
			return
		}
	}
}

// emitLoop is the goroutine that calls emit. It coalesces what the readers
// send into chunks of up to MaxChunk bytes, emitting a chunk when it is full,
// when output of another stream arrives (so chunks keep the order in which
// output was read), when it has waited FlushInterval, and at the end. It
// returns once every stream has ended.
func (p *Process) emitLoop(in <-chan readMsg, emit func(Chunk)) drainResult {
	offsets := make([]int64, len(p.outputs))
	send := func(i int, data []byte) {
		emit(Chunk{Stream: p.outputs[i].stream, Offset: offsets[i], Data: data})
		offsets[i] += int64(len(data))
	}
	pending := make([]byte, 0, MaxChunk)
	cur := 0 // stream of pending
	timer := time.NewTimer(FlushInterval)
	timer.Stop()
	armed := false
	flush := func() {
		if armed {
			timer.Stop()
			armed = false
		}
		switch {
		case len(pending) == 0:
		case len(pending) == MaxChunk:
			send(cur, pending)
			pending = make([]byte, 0, MaxChunk)
		default:
			send(cur, bytes.Clone(pending))
			pending = pending[:0]
		}
	}

	var d drainResult
	for open := len(p.outputs); open > 0; {
		select {
		case m := <-in:
			if m.end {
				open--
				d.lingering = d.lingering || m.lingering
				d.err = errors.Join(d.err, m.err)
				continue
			}
			if m.idx != cur {
				flush()
				cur = m.idx
			}
			data, given := m.data, false
			if len(pending) == 0 && len(data) >= MaxChunk {
				// Hand whole chunks of the buffer itself over, capped so
				// that no chunk can grow into the next.
				given = true
				for len(data) >= MaxChunk {
					send(cur, data[:MaxChunk:MaxChunk])
					data = data[MaxChunk:]
				}
			}
			for len(data) > 0 {
				k := copy(pending[len(pending):MaxChunk], data)
				pending = pending[:len(pending)+k]
				data = data[k:]
				if len(pending) == MaxChunk {
					flush()
				}
			}
			if !given {
				select {
				case m.free <- m.data[:cap(m.data)]:
				default: // the reader has enough
				}
			}
			if len(pending) > 0 && !armed {
				timer.Reset(FlushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			flush()
		}
	}
	flush()
	return d
}

// fill reads into buf as long as data is available without waiting, and
// waits only while it has read nothing. So one hand-over to emitLoop carries
// up to a whole buffer even when the command writes in small pieces.
func fill(rc syscall.RawConn, buf []byte) (int, error) {
	n := 0
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		for n < len(buf) {
			k, err := unix.Read(int(fd), buf[n:])
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return n > 0
			case err != nil:
				rerr = err
				return true
			case k == 0:
				rerr = io.EOF
				return true
			}
			n += k
		}
		return true
	})
	if err != nil {
		return n, err
	}
	return n, rerr
}
