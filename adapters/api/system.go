package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/events"
)

// SystemSocketName is the file name of the system socket in the
// directory serve is given (serve --socket-dir): the way in for the users
// of a host when serve runs as a user of its own (see System).
const SystemSocketName = "logbook.sock"

// maxVerbLine is the most bytes of a system request's first line (the
// verb and its newline).
const maxVerbLine = 64

// Peer is the process at the other end of a system socket connection,
// as the kernel told it when the process connected (SO_PEERCRED): never
// what the process says of itself.
type Peer struct {
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"` // the process's effective group
	PID  int32  `json:"pid"`
	User string `json:"user"` // UID's name on this host; "" when it has none
}

// String names p as a person reads it: "alice (uid 1000)", or "uid 1000"
// for a uid with no name.
func (p Peer) String() string {
	if p.User == "" {
		return "uid " + strconv.FormatUint(uint64(p.UID), 10)
	}
	return p.User + " (uid " + strconv.FormatUint(uint64(p.UID), 10) + ")"
}

// Actor returns the actor p's word is recorded under on host:
// "person:alice@host uid=1000" ("person:uid-1000@host uid=1000" for a uid
// with no name).
func (p Peer) Actor(host string) string {
	name := p.User
	if name == "" {
		name = "uid-" + strconv.FormatUint(uint64(p.UID), 10)
	}
	return "person:" + name + "@" + host + " uid=" + strconv.FormatUint(uint64(p.UID), 10)
}

// peerKey is the context key of the Peer a system socket request came
// from.
type peerKey struct{}

// ownOnlyKey is the context key of the uid whose sessions alone a system
// socket request may read (OwnOnly).
type ownOnlyKey struct{}

// OwnOnly returns the uid whose sessions alone the system socket request
// ctx is a handler's context of may read: set for a peer that is neither
// serve's user, nor root, nor one Deciders lets in. false: the request
// may read every session (any other peer, a NATS request, a local call).
func OwnOnly(ctx context.Context) (uint32, bool) {
	uid, ok := ctx.Value(ownOnlyKey{}).(uint32)
	return uid, ok
}

// MayRead reports whether the request ctx is a handler's context of may
// read a session owned by owner (session.State.Owner; nil: a session not
// opened through the system socket, serve's user's): always, unless
// OwnOnly limits it to its own sessions.
func MayRead(ctx context.Context, owner *events.Sender) bool {
	uid, ok := OwnOnly(ctx)
	return !ok || owner != nil && owner.UID == uid
}

// PeerOf returns the peer of the system socket request ctx is a handler's
// context of; false for any other context (a NATS request, a local call).
func PeerOf(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// Access is which users a system socket lets in, beyond the server's own
// user and root: named users and the members of named groups (a user's
// primary group or one /etc/group lists it in). The zero Access lets
// nobody else in. It is read-only once made, so safe for concurrent use.
type Access struct {
	users  map[uint32]string // uid → as given
	groups map[uint32]string // gid → as given
}

// ParseAccess reads spec, a comma-separated list of users (a name or a
// uid) and groups ("group:NAME" or "group:GID"), resolved on this host
// now; "" is the zero Access. An entry that names no user or group of the
// host is an error naming it.
func ParseAccess(spec string) (Access, error) {
	a := Access{users: map[uint32]string{}, groups: map[uint32]string{}}
	if strings.TrimSpace(spec) == "" {
		return a, nil
	}
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		if g, ok := strings.CutPrefix(e, "group:"); ok {
			gr, err := lookupGroup(g)
			if err != nil {
				return Access{}, fmt.Errorf("socket access %q: no group %q on this host", e, g)
			}
			id, err := strconv.ParseUint(gr.Gid, 10, 32)
			if err != nil {
				return Access{}, fmt.Errorf("socket access %q: group id %q", e, gr.Gid)
			}
			a.groups[uint32(id)] = e
			continue
		}
		if e == "" {
			return Access{}, fmt.Errorf("socket access %q: an empty entry", spec)
		}
		u, err := lookupUser(e)
		if err != nil {
			return Access{}, fmt.Errorf("socket access %q: no user %q on this host", e, e)
		}
		id, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return Access{}, fmt.Errorf("socket access %q: user id %q", e, u.Uid)
		}
		a.users[uint32(id)] = e
	}
	return a, nil
}

// lookupUser finds a user by name, or by uid when s is a number.
func lookupUser(s string) (*user.User, error) {
	if _, err := strconv.ParseUint(s, 10, 32); err == nil {
		return user.LookupId(s)
	}
	return user.Lookup(s)
}

// lookupGroup finds a group by name, or by gid when s is a number.
func lookupGroup(s string) (*user.Group, error) {
	if _, err := strconv.ParseUint(s, 10, 32); err == nil {
		return user.LookupGroupId(s)
	}
	return user.LookupGroup(s)
}

// Permits reports whether a lets p in: p's uid is named, or p's group, or
// a group /etc/group lists p's user in.
func (a Access) Permits(p Peer) bool {
	if _, ok := a.users[p.UID]; ok {
		return true
	}
	if len(a.groups) == 0 {
		return false
	}
	if _, ok := a.groups[p.GID]; ok {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10))
	if err != nil {
		return false
	}
	gids, err := u.GroupIds()
	if err != nil {
		return false
	}
	for _, g := range gids {
		if id, err := strconv.ParseUint(g, 10, 32); err == nil {
			if _, ok := a.groups[uint32(id)]; ok {
				return true
			}
		}
	}
	return false
}

// String lists a's entries as given, sorted: "group:dev, lbtest"; "nobody
// else" when empty.
func (a Access) String() string {
	var s []string
	for _, e := range a.users {
		s = append(s, e)
	}
	for _, e := range a.groups {
		s = append(s, e)
	}
	if len(s) == 0 {
		return "nobody else"
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// System is the system socket's server: what a user of the host may ask
// a serve that runs as a user of its own, whose data dir, keys and NATS
// credentials that user cannot read. Who asks is the peer's credentials
// (SO_PEERCRED), never the request's words.
//
// A request is one connection: the verb and a newline, then the request's
// JSON (at most hooksock.MaxRequest bytes), then the client shuts down its
// writing half and reads the answer (Reply, as on NATS) to the end.
type System struct {
	// Verbs are the verbs every peer Access lets in may ask (hooks, the
	// gate's question, reads).
	Verbs map[string]func(ctx context.Context, data []byte) (any, error)
	// People are the verbs that act on a person's word (a review's
	// verdict): only peers Deciders lets in may ask them, and the
	// request's "actor" and "by" members, in any letter case, are
	// ignored: the handler gets the request with "actor" set to the
	// peer's Actor on Host.
	People map[string]func(ctx context.Context, data []byte) (any, error)
	// Access lets users in beyond serve's own user and root, which are
	// always let in.
	Access Access
	// Deciders are the users, beyond serve's own and root, who may ask
	// People's verbs; they must be let in by Access too.
	Deciders Access
	// Host names this host in an Actor.
	Host string
}

// ErrPeerRefused is wrapped by a system socket client's error when the
// server refused the connection's user.
var ErrPeerRefused = errors.New("refused on the socket")

// Limits of the system socket's connections (see System.Serve).
const (
	// SystemSlotsPerUser is how many connections of one user System
	// works on at once; each user has its own, so one user's idle
	// connections keep no other user waiting.
	SystemSlotsPerUser = 16
	// systemRefusing is how many refusals of peers not let in are
	// answered at once; past it such a connection is closed unanswered.
	systemRefusing = 8
	// systemLogEvery is how often at most System logs a summary of the
	// connections it refused or could not answer.
	systemLogEvery = time.Minute
)

// Serve answers requests on l until ctx is done, then closes l and
// returns once every connection is over. Each user works on at most
// SystemSlotsPerUser connections at once, its own slots: a connection
// over its user's waits for one until SocketReadTimeout, then is answered
// "busy". A peer Access does not let in takes no slot: it is answered
// with an error (code "refused") naming its user and who is let in,
// before any of its request is read (or, with more than a few such
// refusals under way, closed unanswered); an unknown verb, or one of
// People asked by a peer Deciders does not let in, is refused likewise.
// Refusals (a hook for a session another user owns, ErrNotOwner, too)
// and answers not sent are counted and written to logf as a summary at
// most once a minute; other failures are written as they come.
func (s *System) Serve(ctx context.Context, l *net.UnixListener, logf func(format string, args ...any)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	sum := &systemTally{}
	defer sum.flush(logf)
	wg.Go(func() {
		t := time.NewTicker(systemLogEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sum.flush(logf)
			case <-ctx.Done():
				return
			}
		}
	})
	refusing := make(chan struct{}, systemRefusing)
	slots := map[uint32]chan struct{}{} // uid → its slots; read and written by this loop only
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			logf("system socket: %v", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		p, own, ans := s.peer(c)
		if ans != nil {
			sum.refused(p)
			select {
			case refusing <- struct{}{}:
				wg.Go(func() {
					defer func() { <-refusing }()
					defer c.Close()
					c.SetWriteDeadline(time.Now().Add(time.Second))
					c.Write(ans)
					linger(c)
				})
			default:
				c.Close()
			}
			continue
		}
		mine, ok := slots[p.UID]
		if !ok {
			mine = make(chan struct{}, SystemSlotsPerUser)
			slots[p.UID] = mine
		}
		wg.Go(func() {
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(SocketReadTimeout))
			stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
			defer stop()
			wait := time.NewTimer(SocketReadTimeout)
			defer wait.Stop()
			var b []byte
			unread := true
			select {
			case mine <- struct{}{}:
				defer func() { <-mine }()
				b, unread = s.request(ctx, c, p, own, sum, logf), false
			case <-wait.C:
				b = Reply{Error: fmt.Sprintf("system socket: busy: %s has %d requests under way", p, SystemSlotsPerUser), Code: "busy"}.wire()
			case <-ctx.Done():
				b = Reply{Error: "system socket: the server is stopping"}.wire()
			}
			c.SetWriteDeadline(time.Now().Add(socketWriteTimeout))
			if _, err := c.Write(b); err != nil {
				sum.unsent(p, len(b), err)
			}
			if unread {
				linger(c)
			}
		})
	}
}

// linger reads and drops what c's peer sends, for a second at most,
// after the answer: closed with a request unread, the connection would be
// reset and the answer lost.
func linger(c *net.UnixConn) {
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(c, hooksock.MaxRequest+maxVerbLine))
}

// systemTally counts what System.Serve does not log one line each: the
// connections of peers it refused and the answers it could not send.
type systemTally struct {
	mu          sync.Mutex
	refusals    int
	lastRefused Peer
	unsents     int
	lastUnsent  string
	notOwners   int
	lastOwner   string
}

func (t *systemTally) notOwner(err error) {
	t.mu.Lock()
	t.notOwners++
	t.lastOwner = err.Error()
	t.mu.Unlock()
}

func (t *systemTally) refused(p Peer) {
	t.mu.Lock()
	t.refusals++
	t.lastRefused = p
	t.mu.Unlock()
}

func (t *systemTally) unsent(p Peer, n int, err error) {
	t.mu.Lock()
	t.unsents++
	t.lastUnsent = fmt.Sprintf("answer of %d bytes to %s not sent: %v", n, p, err)
	t.mu.Unlock()
}

// flush writes what t counted since the last flush to logf, and starts
// over.
func (t *systemTally) flush(logf func(format string, args ...any)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refusals > 0 {
		logf("system socket: refused %d connections of users not let in (the last: %s)", t.refusals, t.lastRefused)
	}
	if t.unsents > 0 {
		logf("system socket: %d answers not sent (the last: %s)", t.unsents, t.lastUnsent)
	}
	if t.notOwners > 0 {
		logf("system socket: refused %d hooks for sessions of other users (the last: %s)", t.notOwners, t.lastOwner)
	}
	t.refusals, t.unsents, t.notOwners = 0, 0, 0
}

// refused is the error answer to a peer the socket does not let do what
// it asked.
func refused(format string, args ...any) []byte {
	return Reply{Error: fmt.Sprintf(format, args...), Code: "refused"}.wire()
}

// peer names c's peer and whether it is serve's user or root; ans is
// the answer to send instead of reading its request (a peer Access does
// not let in, or one whose credentials cannot be had), nil for a peer let
// in.
func (s *System) peer(c *net.UnixConn) (p Peer, own bool, ans []byte) {
	cred, err := peerCred(c)
	if err != nil {
		return Peer{UID: ^uint32(0)}, false, Reply{Error: fmt.Sprintf("system socket: peer credentials: %v", err)}.wire()
	}
	p = Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10)); err == nil {
		p.User = u.Username
	}
	own = p.UID == 0 || int(p.UID) == os.Geteuid()
	if !own && !s.Access.Permits(p) {
		return p, false, refused("connection refused: %s may not use this socket (serve --socket-allow lets in %s)", p, s.Access)
	}
	return p, own, nil
}

// request reads and works on the request of peer p on c (own: p is
// serve's user or root) and returns the answer to send. A hook refused
// because its session is another user's (ErrNotOwner) is counted in
// sum, not logged on its own.
func (s *System) request(ctx context.Context, c *net.UnixConn, p Peer, own bool, sum *systemTally, logf func(format string, args ...any)) []byte {
	data, ans := readRequest(ctx, c, "system socket", hooksock.MaxRequest+maxVerbLine)
	if ans != nil {
		return ans
	}
	line, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok || len(line) == 0 || len(line) >= maxVerbLine {
		return Reply{Error: "system socket: want the verb and a newline before the request", Code: "malformed"}.wire()
	}
	verb := string(line)
	if len(body) > hooksock.MaxRequest {
		return Reply{Error: fmt.Sprintf("%s: request of %d bytes, over the limit of %d", verb, len(body), hooksock.MaxRequest), Code: "too_large"}.wire()
	}
	ctx = context.WithValue(ctx, peerKey{}, p)
	if !own && !s.Deciders.Permits(p) {
		// Reads of sessions are limited to the peer's own: only a person
		// who may decide for anyone's sessions reads them all.
		ctx = context.WithValue(ctx, ownOnlyKey{}, p.UID)
	}
	if h, ok := s.Verbs[verb]; ok {
		return work(ctx, verb, body, func(ctx context.Context, data []byte) (any, error) {
			v, err := h(ctx, data)
			if errors.Is(err, ErrNotOwner) {
				sum.notOwner(err)
			}
			return v, err
		}, logf, nil)
	}
	h, ok := s.People[verb]
	if !ok {
		return Reply{Error: fmt.Sprintf("system socket: verb %q is not asked here (it answers %s)", verb, strings.Join(s.verbs(), ", ")), Code: CodeNotOnSocket}.wire()
	}
	if !own && !s.Deciders.Permits(p) {
		return refused("%s: refused: %s may not answer for a person on this socket (serve --socket-decide lets in %s)", verb, p, s.Deciders)
	}
	body, err := asActor(body, p.Actor(s.Host))
	if err != nil {
		return Reply{Error: fmt.Sprintf("%s: %v", verb, err), Code: "malformed"}.wire()
	}
	return work(ctx, verb, body, h, logf, nil)
}

// verbs lists the verbs s answers, sorted.
func (s *System) verbs() []string {
	var vs []string
	for v := range s.Verbs {
		vs = append(vs, v)
	}
	for v := range s.People {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// asActor returns the JSON object body with every member named "actor"
// or "by" (in any letter case, which encoding/json would match) taken out
// and "actor" set to actor. A body that is not one JSON object is an
// error.
func asActor(body []byte, actor string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: want a JSON object", events.ErrMalformed)
	}
	for k := range m {
		if strings.EqualFold(k, "actor") || strings.EqualFold(k, "by") {
			delete(m, k)
		}
	}
	a, err := json.Marshal(actor)
	if err != nil {
		return nil, err
	}
	m["actor"] = a
	return json.Marshal(m)
}

// ListenSystem listens on the system socket SystemSocketName in dir,
// made (0755, with each missing parent, whatever the umask) when missing. dir must be a directory of this process's
// user or root that no one else may write in (a user who could would put
// a socket of their own in its place). The socket file is 0666 when gid
// is negative: who may use it is System's to say, by the peer's
// credentials. Otherwise it is 0660 and group gid's, so the kernel
// refuses a connection from a user outside that group before the server
// reads anything (serve must be root or in that group). A socket left
// there by a server that is gone is replaced; one a server answers on is
// an error naming it, as is any other file in its place.
func ListenSystem(dir string, gid int) (*Socket, error) {
	// The directories made here are 0755 whatever the umask (a unit's
	// UMask=0077 would leave them 0700, the socket out of the users'
	// reach): each missing one, from the top, is made and then chmod'ed.
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Chmod(missing[i], 0o755); err != nil {
			return nil, fmt.Errorf("socket dir: %w", err)
		}
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("socket dir %s is a %s, not a directory", dir, fileKind(st.Mode()))
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if sys == nil || (sys.Uid != 0 && int(sys.Uid) != os.Geteuid()) {
		return nil, fmt.Errorf("socket dir %s belongs to another user: give --socket-dir a directory of serve's user or root", dir)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("socket dir %s: others may write in it (mode %04o): chmod go-w it", dir, st.Mode().Perm())
	}
	path := filepath.Join(dir, SystemSocketName)
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("listen on %s: a %s is in the socket's place; move it away", path, fileKind(st.Mode()))
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: another server answers on it; give this one another --socket-dir", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	s := &Socket{UnixListener: l, Path: path}
	mode := os.FileMode(0o666)
	if gid >= 0 {
		mode = 0o660
		if err := os.Lchown(path, -1, gid); err != nil {
			s.Close()
			return nil, fmt.Errorf("listen on %s: give the socket to group %d: %w (serve must run as root or as a member of that group)", path, gid, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		s.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return s, nil
}

// SocketCaller returns a Caller that asks the server on the system socket
// at path, one connection a call, waiting until ctx is done (at most
// HandleTimeout plus a minute when ctx has no deadline). Its errors name
// path: no socket there (no server, or not in system mode), one nothing
// listens on, a socket this user may not reach (permission denied), and
// the server's refusal of this user (wrapping ErrPeerRefused). It is safe
// for concurrent use.
func SocketCaller(path string) Caller {
	return func(ctx context.Context, verb string, req, resp any) error {
		b, err := hooksock.Marshal(req)
		if err != nil {
			return err
		}
		data, err := socketRequest(ctx, path, verb, b)
		if err != nil {
			return fmt.Errorf("ask server (%s) on %s: %w", verb, path, err)
		}
		err = decodeAnswer(verb, data, resp)
		var re *RemoteError
		if errors.As(err, &re) && re.is == nil && bytes.Contains(data, []byte(`"code":"refused"`)) {
			re.is = ErrPeerRefused
		}
		return err
	}
}

// socketRequest sends verb and b on a new connection to path and returns
// the answer as sent.
func socketRequest(ctx context.Context, path, verb string, b []byte) ([]byte, error) {
	if strings.ContainsAny(verb, "\n") || len(verb)+1 >= maxVerbLine {
		return nil, fmt.Errorf("verb %q", verb)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no socket there: no server runs with this --socket-dir (check --socket and $LOGBOOK_SOCKET)")
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("permission denied: this user cannot reach the socket (its directory, or the file: with serve --socket-group only that group's members may connect)")
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("nothing listens on the socket: the server that made it is gone")
	case err != nil:
		return nil, err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(HandleTimeout + time.Minute)
	}
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	uc := c.(*net.UnixConn)
	msg := make([]byte, 0, len(verb)+1+len(b))
	msg = append(append(append(msg, verb...), '\n'), b...)
	_, werr := uc.Write(msg)
	if werr == nil {
		werr = uc.CloseWrite()
	}
	// A server that refuses the peer answers before it reads: its answer
	// is read whatever the write met.
	data, rerr := io.ReadAll(io.LimitReader(uc, MaxReply+replyHeadroom+1))
	if len(data) > 0 && (rerr == nil || werr != nil) {
		if len(data) > MaxReply+replyHeadroom {
			return nil, fmt.Errorf("answer over %d bytes: %w", MaxReply, ErrTooLarge)
		}
		return data, nil
	}
	if ok && errors.Is(rerr, os.ErrDeadlineExceeded) {
		// The connection's deadline is ctx's: its timer may fire a moment
		// after the read gave up. Wait for it, so the caller sees ctx done
		// (no answer came in time) rather than a read error.
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if rerr != nil {
		return nil, rerr
	}
	if werr != nil {
		return nil, werr
	}
	return nil, errors.New("the server closed the connection without an answer")
}
