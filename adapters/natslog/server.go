package natslog

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Fsync says when the embedded server flushes stream files to disk.
type Fsync int

const (
	// FsyncAlways flushes and fsyncs before every acknowledgement
	// (sync_interval: always). An acknowledged append survives an OS crash
	// or power loss. It is the zero value and the default.
	FsyncAlways Fsync = iota
	// FsyncInterval fsyncs every EmbeddedConfig.SyncInterval. Appends
	// acknowledged within the last interval can be lost on an OS crash or
	// power loss (not on a process crash). It is an explicit opt-in.
	FsyncInterval
)

// String returns "always" or "interval".
func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncInterval:
		return "interval"
	default:
		return "Fsync(" + strconv.Itoa(int(f)) + ")"
	}
}

// DefaultSyncInterval is the flush period of FsyncInterval when
// EmbeddedConfig.SyncInterval is 0.
const DefaultSyncInterval = time.Second

// DefaultReadyTimeout bounds how long StartEmbedded waits for the server
// when ctx has no deadline.
const DefaultReadyTimeout = 10 * time.Second

// MaxClosedClients is how many closed client connections the embedded
// server remembers (their connection info, a few hundred bytes to a few
// KiB each), instead of nats-server's 10000.
const MaxClosedClients = 64

// EmbeddedConfig configures an in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// StoreDir is the JetStream directory. Required: an empty StoreDir is
	// refused (the server would silently use a shared temp directory).
	// The server name is derived from its absolute path, so it is stable
	// across restarts on the same directory.
	StoreDir string
	// Fsync selects the durability mode; the zero value is FsyncAlways.
	Fsync Fsync
	// SyncInterval is the flush period under FsyncInterval; 0 means
	// DefaultSyncInterval. It must be 0 under FsyncAlways.
	SyncInterval time.Duration
	// Listen is a loopback host:port for a client TCP listener, e.g.
	// "127.0.0.1:0" (port 0 picks a free port; see Server.ClientURL).
	// Empty (the default) means no listener: in-process clients only.
	// A non-loopback host is refused.
	Listen string
	// User and Password protect every connection, in-process ones
	// included, with one user who may do anything. Listen needs them or
	// Users (see NewPassword); set neither for an in-process-only server.
	User, Password string
	// Users are NATS users with a Role each, instead of User and
	// Password: each gets Permissions(User, Grants), and the server
	// refuses what a role may not do. Names must be unique and passwords
	// non-empty. The server's own connection (Conn) is Users[0]'s;
	// ConnectAs connects as another.
	Users []User
	// Grants names the workers' and the API's subjects for Users'
	// permissions.
	Grants Grants
	// MaxStore and MaxMemory cap JetStream file and memory storage in
	// bytes. MaxStore 0 means no cap short of the disk (NoStoreCap):
	// what stops the store is the disk itself, whose write errors pause
	// appends until space is freed or the file system grown, never a
	// limit the server would otherwise derive from the space free when
	// JetStream starts (three quarters of it, kept across the restarts
	// that clear a write error), which a log started on a nearly full
	// disk, or restarted while it was full, stays above for good.
	// MaxMemory 0 lets the server pick (75% of RAM).
	MaxStore, MaxMemory int64
	// Logger receives the server's notices, warnings and errors; nil
	// (the default) turns server logging off.
	Logger *slog.Logger
	// Healed, if set, is told each time the Server restarted JetStream
	// to clear a store write error (see HealStore): the error cleared,
	// and the restart's own error if it failed. It runs on the Server's
	// own goroutine; it must not block.
	Healed func(writeError string, err error)
}

// Validate reports a config StartEmbedded would refuse: empty StoreDir,
// an unknown Fsync, a SyncInterval without FsyncInterval or below 0, a
// Listen that is not a loopback host:port, or a Listen without User and
// Password.
func (c EmbeddedConfig) Validate() error {
	if c.StoreDir == "" {
		return errors.New("natslog: embedded: empty StoreDir")
	}
	switch c.Fsync {
	case FsyncAlways:
		if c.SyncInterval != 0 {
			return fmt.Errorf("natslog: embedded: SyncInterval %s needs Fsync interval", c.SyncInterval)
		}
	case FsyncInterval:
		if c.SyncInterval < 0 {
			return fmt.Errorf("natslog: embedded: SyncInterval %s < 0", c.SyncInterval)
		}
	default:
		return fmt.Errorf("natslog: embedded: unknown %s", c.Fsync)
	}
	if c.Listen != "" {
		if _, _, err := loopback(c.Listen); err != nil {
			return fmt.Errorf("natslog: embedded: listen %q: %w", c.Listen, err)
		}
		if (c.User == "" || c.Password == "") && len(c.Users) == 0 {
			return fmt.Errorf("natslog: embedded: listen %q: User and Password, or Users, are required", c.Listen)
		}
	}
	if (c.User == "") != (c.Password == "") {
		return errors.New("natslog: embedded: set both User and Password or neither")
	}
	if c.User != "" && len(c.Users) > 0 {
		return errors.New("natslog: embedded: set User and Password or Users, not both")
	}
	seen := map[string]bool{}
	for i, u := range c.Users {
		if u.Name == "" || u.Password == "" {
			return fmt.Errorf("natslog: embedded: user %d (%q): empty name or password", i, u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("natslog: embedded: user %q twice", u.Name)
		}
		seen[u.Name] = true
		if _, err := ParseRole(string(u.Role)); err != nil {
			return fmt.Errorf("natslog: embedded: user %q: %w", u.Name, err)
		}
		if u.FollowerID != "" {
			if u.Role != RoleFollower {
				return fmt.Errorf("natslog: embedded: user %q: a follower id for role %s; only a follower has one", u.Name, u.Role)
			}
			if err := CheckFollowerID(u.FollowerID); err != nil {
				return fmt.Errorf("natslog: embedded: user %q: %w", u.Name, err)
			}
		}
	}
	return nil
}

// User is a NATS user of the embedded server and its role.
type User struct {
	Name, Password string
	Role           Role
	// FollowerID, for a RoleFollower user, is the API id of the one
	// follower it answers for (see NewFollowerID): it subscribes to
	// Grants.FollowerAPI with this id as the id token, and to no other
	// follower's subjects. Empty, a follower answers on no follower's
	// subjects. Other roles must leave it empty.
	FollowerID string
}

// followerIDLen is the length of a follower's API id: 12 hex digits, as
// the ids of a server's prefix.
const followerIDLen = 12

// NewFollowerID returns a new random follower API id, 12 lowercase hex
// digits (e.g. "0a1b2c3d4e5f"): the token after "logbook.ro." on the
// subjects the follower answers.
func NewFollowerID() string {
	b := make([]byte, followerIDLen/2)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// CheckFollowerID refuses an id NewFollowerID would not make: anything
// but 12 lowercase hex digits (a '.', '*' or '>' in it would widen the
// subjects it grants). The error names the id.
func CheckFollowerID(id string) error {
	if len(id) != followerIDLen || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("follower id %q: want 12 lowercase hex digits", id)
	}
	return nil
}

// loopback splits hostport and refuses a host that is not loopback.
// Port 0 becomes server.RANDOM_PORT.
func loopback(hostport string) (string, int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", 0, fmt.Errorf("host %q is not loopback", host)
		}
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// Durability describes the fsync mode in one line for the operator, e.g.
// "fsync always: every acknowledged append is on disk".
func (c EmbeddedConfig) Durability() string {
	if c.Fsync == FsyncInterval {
		d := c.SyncInterval
		if d == 0 {
			d = DefaultSyncInterval
		}
		return fmt.Sprintf("fsync every %s: appends acknowledged in the last %s can be lost on an OS crash or power loss", d, d)
	}
	return "fsync always: every acknowledged append is on disk"
}

// Server is an embedded NATS server with JetStream and an in-process
// client connection it owns. Its methods are safe for concurrent use.
// Call Shutdown when done, after closing every Log opened on Conn.
type Server struct {
	cfg      EmbeddedConfig
	storeDir string // absolute cfg.StoreDir
	ns       *server.Server
	nc       *nats.Conn
	once     sync.Once
	err      error
	quit     chan struct{} // closed by Shutdown: stops heal
	healMu   sync.Mutex    // one HealStore at a time
	// restarts counts the JetStream restarts HealStore began and ended:
	// odd while one runs (see Log.acrossHeals).
	restarts atomic.Uint64
	// restartMu guards restarted, closed and replaced when a restart of
	// JetStream begins (untilRestart).
	restartMu sync.Mutex
	restarted chan struct{}
}

// StartEmbedded starts a JetStream server storing under cfg.StoreDir and
// connects to it in process. It waits until the server is ready, at most
// until ctx's deadline or DefaultReadyTimeout. It returns an error if cfg
// is invalid (see EmbeddedConfig.Validate), the listener cannot bind, or
// the server does not become ready; nothing is left running then.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("natslog: embedded: store dir %q: %w", cfg.StoreDir, err)
	}
	sum := sha256.Sum256([]byte(dir))
	opts := &server.Options{
		ServerName: "logbook-" + hex.EncodeToString(sum[:6]),
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: cfg.Fsync == FsyncAlways,
		NoSigs:     true,
		NoLog:      cfg.Logger == nil,
		DontListen: cfg.Listen == "",
		Username:   cfg.User,
		Password:   cfg.Password,

		JetStreamMaxStore:  cmp.Or(cfg.MaxStore, NoStoreCap),
		JetStreamMaxMemory: cfg.MaxMemory,
		// The server remembers closed connections for its monitoring
		// endpoint, which the embedded server does not serve; its default
		// of 10000 is ~10 MiB when every hook is a connection.
		MaxClosedClients: MaxClosedClients,
	}
	if cfg.Fsync == FsyncInterval {
		opts.SyncInterval = cfg.SyncInterval
		if opts.SyncInterval == 0 {
			opts.SyncInterval = DefaultSyncInterval
		}
	}
	if cfg.Listen != "" {
		opts.Host, opts.Port, _ = loopback(cfg.Listen) // checked by Validate
	}
	for _, u := range cfg.Users {
		opts.Users = append(opts.Users, &server.User{Username: u.Name, Password: u.Password, Permissions: Permissions(u, cfg.Grants)})
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natslog: embedded %s: %w", dir, err)
	}
	if cfg.Logger != nil {
		ns.SetLoggerV2(slogAdapter{cfg.Logger}, false, false, false)
	}
	ns.Start()
	wait := DefaultReadyTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !ns.ReadyForConnections(wait) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natslog: embedded %s: not ready after %s", dir, wait)
	}
	s := &Server{cfg: cfg, storeDir: dir, ns: ns, quit: make(chan struct{}), restarted: make(chan struct{})}
	nc, err := s.Connect(nats.Name("logbook-embedded"))
	if err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	s.nc = nc
	if err := s.unloaded(ctx); err != nil {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	embedded.Store(ns.ID(), s)
	go s.heal()
	return s, nil
}

// unloaded returns an error naming the first stream whose folder the
// store holds, with its metadata file, but that the server did not load:
// its meta.inf or meta.sum is damaged (the server skips such a stream
// and logs it). Left alone, the next open would create the stream again
// over the messages still in its folder, with a new creation time, and
// every reader would take it for a stream deleted and made again.
func (s *Server) unloaded(ctx context.Context) error {
	base := filepath.Join(s.storeDir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT, "streams")
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil // no streams yet
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		meta := filepath.Join(base, e.Name(), "meta.inf")
		if _, err := os.Stat(meta); err != nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, DefaultReadyTimeout)
		_, err := js.Stream(c, e.Name())
		cancel()
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if cut, rerr := creationCut(filepath.Join(base, e.Name())); rerr != nil {
				return fmt.Errorf("natslog: embedded %s: stream %s was not loaded by the server: %w", s.storeDir, e.Name(), rerr)
			} else if cut {
				// Nothing was ever stored in it and its creation was
				// never answered: the next open creates it as the
				// first one would have.
				if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
					return fmt.Errorf("natslog: embedded %s: stream %s, whose creation was cut: %w", s.storeDir, e.Name(), err)
				}
				if s.cfg.Logger != nil {
					s.cfg.Logger.Warn("stream whose creation was cut (meta.inf without meta.sum, no message stored) removed; it is created again",
						"stream", e.Name(), "store", s.storeDir)
				}
				continue
			}
			return fmt.Errorf("natslog: embedded %s: stream %s was not loaded by the server: its metadata (%s, meta.sum beside it) is damaged; restore the store from a copy (its messages are in %s)",
				s.storeDir, e.Name(), meta, filepath.Join(base, e.Name(), "msgs"))
		}
	}
	return nil
}

// creationCut reports whether the stream folder dir is what a server
// stopped inside the stream's creation leaves: nats-server 2.15 writes
// meta.inf, then meta.sum (each whole, by rename), and answers the
// creation only after both, so a process killed between them leaves a
// meta.inf without its meta.sum, which the next server does not load.
// The folder counts as cut only when meta.sum is absent and no file under
// msgs holds a byte (no message block, and no index.db, the state a
// server writes when it stops or syncs): a stream that ever stored a
// message or was ever stopped, or whose
// meta.sum disagrees with meta.inf, is damaged, not cut, and is left for
// a person to restore.
func creationCut(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "meta.sum")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	held := false
	err := filepath.WalkDir(filepath.Join(dir, "msgs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == filepath.Join(dir, "msgs") {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > 0 {
			held = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return !held, nil
}

// Conn returns the server's in-process connection. It is owned by the
// Server and closed by Shutdown; do not close it yourself.
func (s *Server) Conn() *nats.Conn { return s.nc }

// Connect opens a new in-process connection with the server's
// credentials (User, or Users[0]) and opts. The caller owns it and closes
// it before Shutdown.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := []nats.Option{nats.InProcessServer(s.ns), nats.SyncQueueLen(SyncQueueLen)}
	if s.cfg.User != "" {
		all = append(all, nats.UserInfo(s.cfg.User, s.cfg.Password))
	} else if len(s.cfg.Users) > 0 {
		all = append(all, nats.UserInfo(s.cfg.Users[0].Name, s.cfg.Users[0].Password), InboxOption(s.cfg.Users[0].Role))
	}
	nc, err := nats.Connect("", append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("natslog: connect in process: %w", err)
	}
	return nc, nil
}

// ConnectAs opens a new in-process connection as the first of Users with
// role, with opts. It fails when no user has role. The caller owns the
// connection and closes it before Shutdown.
func (s *Server) ConnectAs(role Role, opts ...nats.Option) (*nats.Conn, error) {
	for _, u := range s.cfg.Users {
		if u.Role == role {
			all := []nats.Option{nats.InProcessServer(s.ns), nats.SyncQueueLen(SyncQueueLen), nats.UserInfo(u.Name, u.Password), InboxOption(role)}
			nc, err := nats.Connect("", append(all, opts...)...)
			if err != nil {
				return nil, fmt.Errorf("natslog: connect in process as %s: %w", role, err)
			}
			return nc, nil
		}
	}
	return nil, fmt.Errorf("natslog: connect in process: no user with role %s", role)
}

// ClientURL returns the TCP URL of the loopback listener, e.g.
// "nats://127.0.0.1:41234", or "" when EmbeddedConfig.Listen is empty.
// The URL holds no credentials.
func (s *Server) ClientURL() string {
	if s.cfg.Listen == "" {
		return ""
	}
	return s.ns.ClientURL()
}

// Durability describes the server's fsync mode in one line; print it at
// start so an operator sees an opt-in to FsyncInterval.
func (s *Server) Durability() string { return s.cfg.Durability() }

// Name returns the server name, derived from the absolute StoreDir.
func (s *Server) Name() string { return s.ns.Name() }

// Done is closed when Shutdown begins.
func (s *Server) Done() <-chan struct{} { return s.quit }

// Shutdown drains the in-process connection, then stops the server and
// waits until it has flushed its state. Close every Log on Conn first.
// It is idempotent; later calls return the first call's error.
func (s *Server) Shutdown() error {
	s.once.Do(func() {
		close(s.quit)
		s.healMu.Lock() // a restart under way ends first
		defer s.healMu.Unlock()
		if s.nc != nil {
			closed := make(chan struct{})
			s.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
			switch err := s.nc.Drain(); {
			case err == nil:
				<-closed
			case errors.Is(err, nats.ErrConnectionClosed):
			default:
				s.nc.Close()
				s.err = fmt.Errorf("natslog: shutdown: drain: %w", err)
			}
		}
		embedded.Delete(s.ns.ID())
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
	return s.err
}

// SyncQueueLen is the message queue of each synchronous subscription on
// the connections this package opens (nats.SyncQueueLen), in messages.
// nats.go's default, 65,536, allocates 512 KiB for every subscription,
// and a Load makes one per page of loadPage events: a daemon loading
// aggregates all day would allocate gigabytes an hour for queues that
// never hold more than a page. 4,096 holds four pages.
const SyncQueueLen = 4 * loadPage

// Connect dials a NATS server or cluster at url (comma-separated URLs
// allowed) for use with Open. opts follow the defaults (a client name and
// unlimited reconnects) and may override them. The caller owns the
// connection and closes it after closing every Log opened on it.
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.Name("logbook"), nats.MaxReconnects(-1), nats.SyncQueueLen(SyncQueueLen)}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("natslog: connect %s: %w", url, err)
	}
	return nc, nil
}

// NewPassword returns 32 random bytes from crypto/rand, base64url
// encoded: a credential for EmbeddedConfig.Password.
func NewPassword() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// slogAdapter routes server log lines to a slog.Logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Info(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }

// NoStoreCap is the JetStream store limit EmbeddedConfig.MaxStore 0
// stands for: 1 EiB, past any disk, so that the file system's own size,
// as it is now (it may be grown while serve runs), is the only one.
const NoStoreCap int64 = 1 << 60
