package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/internal/procstat"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// Client is how a command other than serve reaches a data dir's log
// (Open).
type Client struct {
	Dir   datadir.Dir
	Reach datadir.Reach // --nats-url, --creds and --role
	// Cmd is the command's name ("logbook sessions"), in the lock it
	// takes and in what is said.
	Cmd string
	// Reads is a command that only reads: it refuses a data dir with no
	// data, and takes the lock as a reader (datadir.ReaderMark).
	Reads bool
	// Follows is a command that follows the log while it holds the lock:
	// it never asks another reader to give the lock up.
	Follows bool
	// RequireServer refuses to open the data dir directly.
	RequireServer bool
	// StaleOK is a read that may answer from a server's projection while
	// its log does not answer.
	StaleOK bool
	// AdminAppends is a command that appends only with admin
	// credentials, so signs with no key of the data dir's.
	AdminAppends bool
	// LogWait is how long a stream leader is waited for (OpenLogWithin;
	// 0: natslog.Open alone).
	LogWait time.Duration
	// ViewsCache (bytes) and AcceptLoss are how the projection is opened
	// to check the log (Views).
	ViewsCache int64
	AcceptLoss bool
	// BusyWait is how long a command that reads once (Reads, not
	// Follows) waits for another command that works on the data dir
	// directly (an import) to end, saying once on Stderr whom it waits
	// for, before it gives up with an error naming it (0: it does not
	// wait). A server's hold is never waited for.
	BusyWait time.Duration
	// Stderr is where the command says what it waits for.
	Stderr io.Writer
}

// ServeStartWait is how long a command waits for a `logbook serve` that
// holds the data dir's lock but has not written serve.json yet (one
// starting) to answer, before it fails as with a serve that does not
// answer.
const ServeStartWait = 10 * time.Second

// serveStartPoll is how often a command waiting for a starting serve
// looks again.
const serveStartPoll = 50 * time.Millisecond

// serveStarting reports whether the data dir's lock is held by a live
// `logbook serve` that is starting, and its pid: one that has not
// written serve.json yet (none, or a dead serve's, another pid's), or
// wrote it less than ServeStartWait ago (its listener may not answer
// yet). One that wrote it earlier and does not answer is not starting:
// it is hung.
func serveStarting(dd datadir.Dir) (int, bool) {
	pid, ok := dd.LockedBy("logbook serve")
	if !ok {
		return 0, false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, false
	}
	// serve.json of another pid is a dead serve's, left behind: this one
	// has not written its own yet.
	if si, ok := dd.ReadServeInfo(); ok && si.PID == pid && time.Since(si.Started) > ServeStartWait {
		return 0, false
	}
	return pid, true
}

// DefaultBusyWait is the Client.BusyWait the command line gives a read:
// long enough for a small import to end.
const DefaultBusyWait = 10 * time.Second

// Opened is a log Open reached. Its Close releases what it holds.
type Opened struct {
	Registry *events.Registry
	NC       *nats.Conn
	// Log is nil when Down is set.
	Log *natslog.Log
	// Remote is a running server reached; API is its API prefix
	// (api.AnyPrefix when serve.json names none).
	Remote bool
	API    string
	// Server and Lock, opened locally only, are the data dir's embedded
	// server and its lock.
	Server *natslog.Server
	Lock   *os.File
	// Views, local only, is the projection CheckLog opened, the caller's
	// to use and close; nil when none.
	Views *projections.Store
	// Down, remote and StaleOK only, is the status of a server that said
	// its log does not answer; Asked is set once its status was asked.
	Down  *api.StatusReply
	Asked bool
}

// Close releases everything o holds, in reverse order.
func (o *Opened) Close() {
	if o.Views != nil {
		o.Views.Close()
	}
	if o.Log != nil {
		o.Log.Close()
	}
	if o.Server != nil {
		o.Server.Shutdown()
	} else if o.NC != nil {
		o.NC.Drain()
		api.Forget(o.NC)
	}
	if o.Lock != nil {
		o.Lock.Close()
	}
}

// Open connects to the server serve.json (or c.Reach) names and falls
// back to opening the data dir directly, with its lock and an embedded
// server of its own (StartLocal), when none answers: then the log is
// checked against the projection (CheckLog). It then attests the
// connection and opens the log (datadir.Dir.Attest, OpenLogWithin,
// datadir.Dir.Sign), and waits for the hooks the data dir's own serve
// took (Settle). A StaleOK read through a server whose log does not
// answer returns with Down set and no log. Errors name the data dir, the
// server and the lock's holder; nothing is left open on an error.
func Open(ctx context.Context, c Client) (*Opened, error) {
	dd, reach := c.Dir, c.Reach
	if c.Reads && reach.URL == "" && reach.CredsPath == "" && !dd.HasData() {
		if _, starting := serveStarting(dd); !starting {
			return nil, dd.NoDataError()
		}
	}
	if _, _, err := reach.CredsOptions(); err != nil {
		return nil, err
	}
	// The registry is built while the server is reached: it is first
	// used once connected (Attest), and building it costs a process
	// about as much CPU as connecting takes time.
	reg := make(chan *events.Registry, 1)
	go func() { reg <- events.NewRegistry() }()
	o := &Opened{API: api.AnyPrefix}
	defer func() {
		if o.Registry == nil {
			o.Registry = <-reg
		}
	}()
	// A serve that holds the data dir's lock but has not written
	// serve.json yet is starting: it is waited for (up to
	// ServeStartWait), not taken for one that does not answer.
	var waited time.Time
	said := false
	// serve.json, read once a try for the URL, the role and the API
	// prefix alike: again only when the file was replaced since (a dead
	// serve's, by a serve starting).
	var (
		si   datadir.ServeInfo
		siOK bool
	)
	for {
		read := serveInfoStamp(dd)
		si, siOK = dd.ReadServeInfo()
		if url, opts, ok := dd.ServerURLOf(reach, si, siOK); ok {
			d, handle := api.Watch(datadir.ConnRoleOf(reach, si, siOK))
			nc, err := natslog.Connect(url, append(opts, nats.Timeout(time.Second), nats.MaxReconnects(3), nats.ReconnectWait(200*time.Millisecond), nats.ErrorHandler(handle))...)
			if err == nil {
				o.NC, o.Remote = nc, true
				d.Register(nc)
				// The API prefix serve.json names beside the URL it
				// answers on: the file is read again when a dead serve's
				// was replaced while the connection was made.
				if !sameStamp(read, serveInfoStamp(dd)) {
					si, siOK = dd.ReadServeInfo()
				}
				if siOK && si.API != "" {
					o.API = si.API
				}
				break
			} else if reach.URL != "" || reach.CredsPath != "" {
				return nil, reach.ConnectError(url, err)
			}
		}
		var err error
		if c.RequireServer {
			err = noServerError{cmd: strings.TrimPrefix(c.Cmd, "logbook "), held: serveHolds(si, siOK)}
		} else {
			if err := dd.ForeignError(); err != nil {
				return nil, err
			}
			// A read never creates a store: a data dir with no log, and
			// no serve that answers for it, is said to be so, whatever
			// credentials came along (a follower's data dir whose serve
			// stopped, read with a reader's credentials but no URL).
			if c.Reads && !dd.HasData() {
				if _, starting := serveStarting(dd); !starting {
					return nil, dd.NoDataError()
				}
			}
			var lock *os.File
			if lock, err = lockFor(ctx, c); err == nil {
				if o.Server, err = StartLocal(ctx, dd, lock); err != nil {
					return nil, err
				}
				o.NC, o.Lock = o.Server.Conn(), lock
				break
			}
		}
		pid, starting := serveStarting(dd)
		if _, ok := errors.AsType[followerHeld](err); !starting || ok || serveStopped(pid) {
			return nil, err
		}
		if waited.IsZero() {
			waited = time.Now()
		} else if time.Since(waited) > ServeStartWait {
			return nil, err
		}
		if c.Stderr != nil && !said && time.Since(waited) >= time.Second {
			said = true
			fmt.Fprintf(c.Stderr, "%s: waiting up to %s for logbook serve (pid %d), which holds %s, to answer\n", c.Cmd, ServeStartWait, pid, dd)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(serveStartPoll):
		}
	}
	if o.Remote && c.StaleOK && o.logDown(ctx) {
		// Opening the log would wait natslog.ElectionWait for a leader
		// and fail; the server answers from its projection meanwhile.
		return o, nil
	}
	// The hooks serve took on its socket are waited for (Settle) while
	// the log is opened and its signing set up, not after: the caller
	// reads once Open returns either way.
	settled := func() {}
	if reach.URL == "" && o.Remote && o.API != api.AnyPrefix && !o.Asked {
		done := make(chan struct{})
		go func() {
			defer close(done)
			Settle(ctx, o.NC, o.API)
		}()
		settled = func() { <-done }
	}
	// On the errors below the connection's close ends it; a log found
	// down returns without waiting for it.
	cl := datadir.Client{Own: reach.URL == "" && reach.CredsPath == "", Remote: o.Remote, CredsPath: reach.CredsPath,
		Role: reach.Role, ConnRole: natslog.Role(datadir.ConnRoleOf(reach, si, siOK)), Reads: c.Reads}
	o.Registry = <-reg
	at, err := dd.Attest(cl, natslog.Config{Registry: o.Registry, ConnRole: cl.ConnRole})
	if err != nil {
		o.Close()
		return nil, err
	}
	cfg := at.Config
	if cl.Own {
		// The data dir's own server, on this host: no commit starts that
		// its disk could cut (diskfull.Room).
		cfg.Room = diskfull.Room(dd.Path("jetstream"))
	}
	var l *natslog.Log
	if o.Remote && c.StaleOK {
		// The cluster may lose its quorum while the stream is opened:
		// the read goes on from serve's projection once serve says so.
		down, err := api.UntilDown(ctx, o.logDown, func(ctx context.Context) error {
			var err error
			l, err = natslog.Open(ctx, o.NC, cfg)
			return err
		})
		if down {
			if l != nil {
				l.Close()
			}
			return o, nil
		}
		if err != nil {
			o.Close()
			return nil, err
		}
	} else if l, err = OpenLogWithin(ctx, o.NC, cfg, c.LogWait); err != nil {
		o.Close()
		return nil, err
	}
	o.Log = l
	if !o.Remote {
		// Nothing is read or appended on a log that lost events its
		// projection saw until the user says what to do (CheckLog).
		o.Views, err = CheckLog(ctx, Views{Dir: dd, Log: l, CacheSize: c.ViewsCache, AcceptLoss: c.AcceptLoss,
			Said: func(line string) { fmt.Fprintf(c.Stderr, "logbook: %s\n", line) }})
		if err != nil {
			o.Close()
			return nil, err
		}
	}
	if err := dd.Sign(ctx, cl, at, l, !c.Reads && !c.AdminAppends); err != nil {
		o.Close()
		return nil, err
	}
	settled()
	return o, nil
}

// serveInfoStamp returns what tells serve.json as it stands from
// another (its file's identity, size and time); nil when there is none.
func serveInfoStamp(dd datadir.Dir) os.FileInfo {
	fi, err := os.Stat(dd.Path("serve.json"))
	if err != nil {
		return nil
	}
	return fi
}

// sameStamp reports whether a and b (serveInfoStamp) are serve.json
// unchanged: the same file, neither written since nor replaced, or
// absent both times.
func sameStamp(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// lockFor takes the data dir's lock for c: a reader's when c only
// reads; a follower's without asking another reader to give it up (two
// would take it from each other in turn). A lock another process holds
// is an error wrapping datadir.ErrBusy that says what to do.
func lockFor(ctx context.Context, c Client) (*os.File, error) {
	role := c.Cmd
	if c.Reads {
		role += datadir.ReaderMark
	}
	var lock *os.File
	var err error
	if c.Follows {
		lock, err = c.Dir.Lock(role)
	} else {
		lock, err = c.Dir.LockOver(ctx, role, func(holder string) {
			fmt.Fprintf(c.Stderr, "%s: waiting for %s, which only reads the data dir, to give it up\n", c.Cmd, holder)
		})
	}
	if errors.Is(err, datadir.ErrBusy) && c.Reads && !c.Follows && c.BusyWait > 0 && !strings.Contains(err.Error(), "logbook serve") {
		lock, err = waitWriter(ctx, c, role, err)
	}
	if errors.Is(err, datadir.ErrBusy) {
		if strings.Contains(err.Error(), "logbook serve") {
			if remote := followed(c.Dir); remote != "" {
				return nil, followerHeld{fmt.Errorf("%w, following the log at %s: it answers a command that gives that server's credentials: pass --creds FILE (a reader's)", err, remote)}
			}
			if pid, ok := c.Dir.LockedBy("logbook serve"); ok && serveStopped(pid) {
				return nil, fmt.Errorf("%w; `logbook serve` holds it but is stopped (SIGSTOP, or a debugger): `kill -CONT %d` lets it go on", err, pid)
			}
			return nil, fmt.Errorf("%w; `logbook serve` holds it but does not answer (%s)", err, c.Dir.Path("serve.json"))
		}
		return nil, fmt.Errorf("%w; another command works on it directly: try again when it ends, or run `logbook serve` so commands can share it", err)
	}
	return lock, err
}

// serveStopped reports whether the process pid, a serve that holds the
// data dir, is stopped (state T: a SIGSTOP, a terminal's Ctrl-Z, or a
// debugger): it answers nothing until it is let go on, which waiting
// for it does not do.
func serveStopped(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && st.Stopped()
}

// followerHeld is lockFor's error for a follower's data dir that its
// serve holds: only the followed server answers for it, to a command
// that gives that server's credentials, so waiting for the serve,
// starting or not, cannot help (Open returns it at once).
type followerHeld struct{ error }

func (e followerHeld) Unwrap() error { return e.error }

// followed returns the server whose log d's projection is made from when
// d is a follower's data dir (no log of its own, stream.json naming
// another server), "" otherwise.
func followed(d datadir.Dir) string {
	if _, err := os.Stat(d.Path("jetstream")); !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	r, have, err := d.ReadStreamRecord()
	if err != nil || !have {
		return ""
	}
	return r.Remote
}

// waitWriter waits up to c.BusyWait for the command whose hold busy
// (wrapping datadir.ErrBusy) names to end, taking the lock as role once
// it has; it says once on c.Stderr whom it waits for. It returns the
// last ErrBusy when the wait runs out or a server takes the lock, and
// ctx's error when ctx ends first.
func waitWriter(ctx context.Context, c Client, role string, busy error) (*os.File, error) {
	fmt.Fprintf(c.Stderr, "%s: %v; waiting up to %s for it to end\n", c.Cmd, busy, c.BusyWait)
	deadline := time.NewTimer(c.BusyWait)
	defer deadline.Stop()
	tick := time.NewTicker(datadir.HandoverPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("%w (waited %s)", busy, c.BusyWait)
		case <-tick.C:
		}
		lock, err := c.Dir.TryLock(role)
		if !errors.Is(err, datadir.ErrBusy) || strings.Contains(err.Error(), "logbook serve") {
			return lock, err
		}
		busy = err
	}
}

// logDown asks o's server whether its log answers (LogDown), keeping
// what it said in o.Down and o.Asked.
func (o *Opened) logDown(ctx context.Context) bool {
	down, asked := LogDown(ctx, o.NC, o.API)
	o.Asked = o.Asked || asked
	if down == nil {
		return false
	}
	o.Down = down
	return true
}

// StartLocal starts the data dir's embedded server (its jetstream/) for
// a command that holds lock, the data dir's; it closes lock when the
// server does not start, with an error naming the data dir. The caller
// connects in process with the server's Conn and shuts it down.
func StartLocal(ctx context.Context, dd datadir.Dir, lock *os.File) (*natslog.Server, error) {
	if err := dd.FollowerError(); err != nil {
		lock.Close()
		return nil, err
	}
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: dd.Path("jetstream")})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open log in %s: %w", dd, err)
	}
	return srv, nil
}

// Settle waits, on a connection nc to the data dir's own serve answering
// on prefix, for the hooks that serve took on its socket to be in the
// log: it appends them just after it answered them, and its status verb
// answers once those are in, so what the caller reads next holds them. A
// serve that cannot say within api.IntakeWait is not waited for longer.
func Settle(ctx context.Context, nc *nats.Conn, prefix string) {
	_, _ = api.AskStatus(ctx, nc, prefix)
}

// LogDown asks the server on nc answering on prefix for its status, for
// a read that may answer from the server's projection (api.AllowStale),
// and returns it when it says its log does not answer (a cluster that
// lost its quorum), else nil; asked reports whether it answered. While
// the server's appends wait for disk space it answers at once, without
// waiting for the hooks its journal holds (the read's answer says they
// are not shown). A server that does not answer within api.IntakeWait
// (or an older one that does not say) is taken as one whose log answers.
func LogDown(ctx context.Context, nc *nats.Conn, prefix string) (down *api.StatusReply, asked bool) {
	st, err := api.AskStatus(api.AllowStale(ctx), nc, prefix)
	if err != nil {
		return nil, false
	}
	if st.LogUnavailableSince == nil {
		return nil, true
	}
	return &st, true
}

// OpenLogWithin is natslog.OpenWithin: the log, once a stream leader
// answered within wait (0: natslog.Open alone); past it the error says
// the log is unavailable, names the stream and --wait.
func OpenLogWithin(ctx context.Context, nc *nats.Conn, cfg natslog.Config, wait time.Duration) (*natslog.Log, error) {
	l, err := natslog.OpenWithin(ctx, nc, cfg, wait)
	if we, ok := errors.AsType[*natslog.LeaderWaitError](err); ok {
		return nil, fmt.Errorf("log unavailable: no leader for stream %s answered within %s (--wait): %w", natslog.StreamName, wait, we.Err)
	}
	return l, err
}

// ErrNoServer is what an Open with RequireServer fails with (errors.Is)
// when no server answers for the data dir: none runs, or the one that
// ran has stopped.
var ErrNoServer = errors.New("no server answers for the data dir")

// noServerError is ErrNoServer for the command cmd ("sessions").
// held, when not "", says that a serve holds the data dir but did not
// answer (serveHolds).
type noServerError struct{ cmd, held string }

func (e noServerError) Error() string {
	if e.held != "" {
		return fmt.Sprintf("%s needs a running server that answers: %s", e.cmd, e.held)
	}
	return fmt.Sprintf("%s needs a running server: start `logbook serve`", e.cmd)
}

// serveHolds returns what a command that found no server answering says
// of the serve serve.json (si, when ok) names, when that process still
// runs a logbook (procstat.Read's name): that it is stopped (state T,
// a SIGSTOP or a debugger) and how to let it go on, or that it holds the
// data dir but does not answer. "" when no such process runs: a serve
// killed with SIGKILL leaves its serve.json behind, and its pid may be
// another program's by now.
func serveHolds(si datadir.ServeInfo, ok bool) string {
	if !ok || si.PID <= 0 {
		return ""
	}
	st, err := procstat.Read(si.PID)
	if err != nil || !strings.HasPrefix(st.Comm, "logbook") {
		return ""
	}
	if st.Stopped() {
		return fmt.Sprintf("`logbook serve` (pid %d) holds the data dir but is stopped (SIGSTOP, or a debugger): `kill -CONT %d` lets it go on", si.PID, si.PID)
	}
	return fmt.Sprintf("`logbook serve` (pid %d) holds the data dir but does not answer (overloaded, or wedged: its log says which)", si.PID)
}

func (e noServerError) Is(target error) bool { return target == ErrNoServer }
