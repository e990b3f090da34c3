package natslog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
)

// A bounded read of one subject (LoadStreamed) spends most of its time,
// through nats.go, in the client's one read loop: it decodes every
// message's header block into a map (nine headers a signed event, the
// map grown twice) and hands each message over through the ordered
// consumer's machinery, one message after the other, while the decoding
// goroutines wait. consumeRaw reads the same messages from the same
// kind of consumer over a connection of its own that speaks the NATS
// protocol itself: its read loop only cuts the stream into messages and
// leaves each header block as the server sent it (Msg.hdr), which the
// decoding goroutines of decodeParallel parse, in parallel, when they
// judge the message: in place, the judged headers' names and values
// taken from the block in one walk (RawHeader), no map made; a read
// that judges nothing parses none. For an audit of 20,000 events the
// raw read took 39% off the client's CPU time (user+sys, median of 15
// alternating runs on 2 cores at a load of ~15: 254 → 155 ms, headers
// then decoded into maps); the server's own stayed at ~90 ms.

// Raw read tuning.
const (
	// rawBufSize is the raw connection's read buffer.
	rawBufSize = 256 << 10
	// rawSlab is the size of the blocks the raw read loop cuts message
	// bodies from: one allocation per 512 KiB rather than per message.
	rawSlab = 512 << 10
	// rawPulls is how many pull requests a raw read keeps outstanding,
	// so the server has the next one when one is served.
	rawPulls = 2
)

// errRawUnsupported reports a connection the raw read cannot dial as
// the Log's connection does (TLS, websocket, a proxy, a custom dialer,
// or credentials other than a user and password or a token).
var errRawUnsupported = errors.New("raw read: connection not supported")

// consumeRaw is consume for a read bounded by end (> 0) on a stream of
// one replica: it yields filter's messages from from up to end in
// order, through a pull consumer of its own read over a connection of
// its own (rawConn), each with its header block undecoded in Msg.hdr
// and Header nil (decodeParallel decodes it). When that connection
// cannot be set up, and when it fails after some messages (a gap, a
// dropped connection, an answer it does not expect, no message for
// readStall), the read goes on with consume from the first message not
// yet yielded: what consume guarantees holds either way. A read that
// ended early while the embedded Server restarted JetStream goes on
// from there once the restart is over (resumeAcrossHeals). Errors of
// ctx are yielded as consume yields them.
func (l *Log) consumeRaw(ctx context.Context, filter string, from, end uint64, yield func(Msg, error) bool) {
	l.consumeRawHeld(ctx, filter, from, end, 0, yield)
}

// consumeRawHeld is consumeRaw where the caller knows held, how many
// messages filter held from from up to end, as the stream said when it
// said end (subjectState's one stream info): a run of the read that
// starts at from passes it to rawRead, which then ends without asking
// the stream once it has yielded that many. 0: not known.
func (l *Log) consumeRawHeld(ctx context.Context, filter string, from, end, held uint64, yield func(Msg, error) bool) {
	l.resumeAcrossHeals(ctx, from, end, yield, func(ctx context.Context, next uint64, yield func(Msg, error) bool) {
		h := held
		if next != from {
			h = 0 // a read resumed past from: held counts what lies before it too
		}
		l.consumeRawOnce(ctx, filter, next, end, h, yield)
	})
}

// consumeRawOnce is consumeRaw, one run of resumeAcrossHeals.
func (l *Log) consumeRawOnce(ctx context.Context, filter string, from, end, held uint64, yield func(Msg, error) bool) {
	next, stopped, err := l.rawRead(ctx, filter, from, end, held, yield)
	if stopped {
		return
	}
	if err != nil && ctx.Err() != nil {
		yield(Msg{}, fmt.Errorf("read %s from %d: %w", filter, from, ctx.Err()))
		return
	}
	if errors.Is(err, errJSRestarted) {
		// resumeAcrossHeals goes on from next after the restart.
		yield(Msg{}, err)
		return
	}
	if err == nil || next > end {
		return
	}
	l.consume(ctx, filter, next, end, yield)
}

// rawRead reads filter from from up to end over a raw connection and
// yields each message. It returns the first sequence it has not
// yielded, whether the loop stopped (yield returned false), and why it
// ended early (nil: it reached end, or the consumer holds nothing
// more; errJSRestarted: the embedded server began a restart of
// JetStream). The connection, consumer and pulls are those a LoadStart
// opened ahead for filter from from (rawOpenedOf ctx), when it did,
// and its own otherwise. held is how many messages filter held from
// from up to end when end was read from the stream (0: not known):
// once the read has yielded that many, and the consumer counts none
// pending, it has reached end without asking the stream whether one
// lies between (noneFrom, a request that took 1 to 30 ms of an audit
// of 20,000 events on a busy server). The stream's count is read after
// its last sequence, so it may count a message after end, never leave
// one before it out: a read that yields fewer asks as before.
func (l *Log) rawRead(ctx context.Context, filter string, from, end, held uint64, yield func(Msg, error) bool) (next uint64, stopped bool, err error) {
	next = max(from, 1)
	if l.srv != nil {
		var cancel context.CancelFunc
		ctx, cancel = l.srv.untilRestart(ctx)
		defer cancel()
		defer func() {
			if err != nil && errors.Is(context.Cause(ctx), errJSRestarted) {
				err = errJSRestarted
			}
		}()
	}
	o := rawOpenedOf(ctx).take(filter, from)
	if o == nil {
		if o, err = l.openRaw(ctx, filter, from); err != nil {
			return next, false, err
		}
	}
	defer closeRaw(ctx, o)
	rc := o.rc
	rc.blocks = blocksOf(ctx)
	if o.pulls == nil {
		// A consumer made just after a restart of JetStream has been
		// seen to count nothing pending on a stream that holds
		// messages on its filter: only the stream's answer ends the
		// read here; consume takes over otherwise.
		if none, err := l.noneFrom(ctx, filter, next, end); err != nil || !none {
			return next, false, errors.Join(err, errPendingNone)
		}
		return next, false, nil
	}
	// Another message came: the watch lets the read wait on.
	var progress atomic.Uint64
	defer rc.watch(ctx, l.readStall(), &progress)()

	pulls := o.pulls
	var (
		subject string // the last subject met, not allocated again
		dseq    uint64 // the consumer's last delivery sequence
		yielded uint64 // messages yielded
	)
	for {
		f, err := rc.next()
		if err != nil {
			return next, false, err
		}
		progress.Add(1)
		if f.reply == nil {
			// A status: the oldest pull ended on its bytes (409), or
			// the server had nothing to deliver for a whole pull's
			// expiry (408, 404) or the consumer is gone, which consume
			// sorts out. The pulls ask for no heartbeats.
			code, text := rawStatus(f.hdr)
			if code == "409" && (strings.Contains(text, "MaxBytes") || strings.Contains(text, "Batch Completed")) {
				if err := pulls.served(); err != nil {
					return next, false, err
				}
				continue
			}
			return next, false, fmt.Errorf("raw read: status %s %s", code, text)
		}
		delivered, seq, cseq, ns, pending, err := ackMetaAll(unsafe.String(unsafe.SliceData(f.reply), len(f.reply)))
		if err != nil {
			return next, false, err
		}
		if delivered != 1 || cseq != dseq+1 || seq < next {
			return next, false, fmt.Errorf("raw read: delivery %d of seq %d (consumer seq %d after %d, next %d): not the next message", delivered, seq, cseq, dseq, next)
		}
		dseq = cseq
		if seq > end {
			return next, false, nil
		}
		if string(f.subject) != subject {
			subject = string(f.subject)
		}
		next = seq + 1
		if !yield(Msg{Seq: seq, Subject: subject, hdr: f.hdr, Data: f.data, Time: time.Unix(0, int64(ns))}, nil) {
			return next, true, nil
		}
		yielded++
		if seq >= end {
			return next, false, nil
		}
		if pending == 0 {
			if held > 0 && yielded == held {
				return next, false, nil // every message filter held up to end
			}
			if none, err := l.noneFrom(ctx, filter, next, end); err != nil || !none {
				return next, false, errors.Join(err, errPendingNone)
			}
			return next, false, nil
		}
		if err := pulls.delivered(f); err != nil {
			return next, false, err
		}
	}
}

// rawOpen is a raw read's connection, its consumer of filter from from
// and, when the consumer counted messages pending, the pulls sent to it:
// what rawRead reads from. close deletes the consumer and closes the
// connection.
type rawOpen struct {
	l      *Log
	filter string
	from   uint64
	rc     *rawConn
	name   string      // the consumer's
	pulls  *rawPullSet // nil: the consumer counted nothing pending, no pull sent
}

// openRaw dials a raw connection (dialRaw), makes an ephemeral consumer
// of filter from from on it and, unless the consumer counts nothing
// pending, sends it its pulls (startPulls): the server then loads and
// sends the first messages, which wait in the connection until rawRead
// reads them. It reads no message. On an error nothing is left open.
func (l *Log) openRaw(ctx context.Context, filter string, from uint64) (*rawOpen, error) {
	rc, err := l.dialRaw(ctx)
	if err != nil {
		return nil, err
	}
	return l.openRawOn(ctx, rc, filter, from)
}

// rawConsumer is the consumer a raw read or follow of filter from
// sequence from (the start when ≤ 1) reads through: unacknowledged, in
// memory, one replica, removed by the server after 5 minutes unused.
func rawConsumer(filter string, from uint64) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     filter,
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 5 * time.Minute,
	}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	return cfg
}

// openRawOn is openRaw over rc, a connection dialRaw dialled: on an
// error rc is closed.
func (l *Log) openRawOn(ctx context.Context, rc *rawConn, filter string, from uint64) (*rawOpen, error) {
	cctx, cancel := l.withTimeout(ctx)
	cons, err := l.js.CreateConsumer(cctx, StreamName, rawConsumer(filter, from))
	cancel()
	if err != nil {
		rc.close()
		return nil, err
	}
	info := cons.CachedInfo()
	o := &rawOpen{l: l, filter: filter, from: from, rc: rc, name: info.Name}
	if info.NumPending == 0 {
		return o, nil
	}
	if o.pulls, err = l.startPulls(rc, info.Name, readPullMsgs, readExpiry, 0); err != nil {
		o.close(ctx)
		return nil, err
	}
	return o, nil
}

// close deletes o's consumer (for up to a second, ctx's cancellation
// aside) and closes its connection.
func (o *rawOpen) close(ctx context.Context) {
	defer o.rc.close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = o.l.js.DeleteConsumer(dctx, StreamName, o.name)
}

// errPendingNone reports a consumer that counted nothing pending while
// the stream held messages on its filter up to the read's end.
var errPendingNone = errors.New("raw read: the consumer counts nothing pending, the stream holds more")

// rawStatus returns the status code and description of a status
// message's header block ("NATS/1.0 408 Request Timeout\r\n…").
func rawStatus(hdr []byte) (code, text string) {
	line, _, _ := bytes.Cut(hdr, []byte("\r\n"))
	rest, ok := bytes.CutPrefix(line, []byte("NATS/1.0"))
	if !ok {
		return "", string(line)
	}
	code, text, _ = strings.Cut(strings.TrimSpace(string(rest)), " ")
	return code, text
}

// rawPullSet keeps a raw read's pull requests outstanding on its
// connection: rawPulls of them at once, each for n messages or b bytes
// (the larger of readPullBytes and twice the largest payload). The
// server serves them oldest first; one served is asked again.
type rawPullSet struct {
	rc    *rawConn
	subj  string // the consumer's CONSUMER.MSG.NEXT subject
	inbox string
	req   []byte // the pull request
	n, b  int
	left  []struct{ n, b int } // what is left of each, oldest first
}

// startPulls subscribes rc to an inbox and sends rawPulls pull requests
// to consumer for n messages each, with a heartbeat every heartbeat (0:
// none), each expiring after expiry.
func (l *Log) startPulls(rc *rawConn, consumer string, n int, expiry, heartbeat time.Duration) (*rawPullSet, error) {
	p := &rawPullSet{rc: rc, subj: jsAPI("CONSUMER.MSG.NEXT", StreamName, consumer), inbox: l.js.Conn().NewInbox(), n: n, b: int(max(readPullBytes, 2*l.js.Conn().MaxPayload()))}
	req, err := json.Marshal(struct {
		Batch     int           `json:"batch"`
		MaxBytes  int           `json:"max_bytes"`
		Expires   time.Duration `json:"expires"`
		Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	}{n, p.b, expiry, heartbeat})
	if err != nil {
		return nil, err
	}
	p.req = req
	if err := rc.sub(p.inbox); err != nil {
		return nil, err
	}
	for range rawPulls {
		if err := p.send(); err != nil {
			return nil, err
		}
	}
	return p, rc.flush()
}

// send sends one more pull request.
func (p *rawPullSet) send() error {
	p.left = append(p.left, struct{ n, b int }{p.n, p.b})
	return p.rc.pub(p.subj, p.inbox, p.req)
}

// served says the oldest pull is done (expired, or ended on its
// bytes) and asks again.
func (p *rawPullSet) served() error {
	if len(p.left) > 0 {
		p.left = p.left[1:]
	}
	if err := p.send(); err != nil {
		return err
	}
	return p.rc.flush()
}

// delivered counts message f against the oldest pull, and asks again
// once that pull has had all it asked for.
func (p *rawPullSet) delivered(f rawFrame) error {
	if len(p.left) == 0 {
		return nil
	}
	o := &p.left[0]
	o.n--
	o.b -= len(f.subject) + len(f.reply) + len(f.hdr) + len(f.data)
	if o.n <= 0 || o.b <= 0 {
		return p.served()
	}
	return nil
}

// rawConn is a NATS protocol connection of the raw read's own.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	slab []byte // what is left of the block message bodies are cut from
	meta []byte // the last frame's subject and reply
	// blocks hands out the blocks slab is cut from (LoadEach's, which
	// takes them back); nil: each is made anew.
	blocks *blockPool
}

// rawFrame is one message the server sent: subject, reply and header
// block are valid until the next call of next; hdr (nil for a message
// without headers) and data are cut from the connection's slab and the
// receiver's to keep.
type rawFrame struct {
	subject, reply []byte
	hdr, data      []byte
}

// dialRaw connects to the server of the Log's connection as that
// connection did (the same server, user and password or token; an
// embedded server's in-process connection), with headers on, and waits
// for the server to accept it. A connection it cannot make as the Log's
// was made is errRawUnsupported.
func (l *Log) dialRaw(ctx context.Context) (*rawConn, error) {
	nc := l.js.Conn()
	o := nc.Opts
	if o.Secure || o.TLSConfig != nil || o.TLSCertCB != nil || o.RootCAsCB != nil || o.TLSHandshakeFirst ||
		o.UserJWT != nil || o.Nkey != "" || o.SignatureCB != nil || o.UserInfo != nil || o.TokenHandler != nil ||
		o.CustomDialer != nil || o.ProxyPath != "" {
		return nil, errRawUnsupported
	}
	user, pass, token := o.User, o.Password, o.Token
	var conn net.Conn
	if o.InProcessServer != nil {
		c, err := o.InProcessServer.InProcessConn()
		if err != nil {
			return nil, err
		}
		conn = c
	} else {
		u, err := url.Parse(nc.ConnectedUrl())
		if err != nil || u.Scheme != "nats" || u.Host == "" {
			return nil, errRawUnsupported
		}
		if u.User != nil && user == "" && token == "" {
			if p, ok := u.User.Password(); ok {
				user, pass = u.User.Username(), p
			} else {
				token = u.User.Username()
			}
		}
		d := net.Dialer{Timeout: l.cfg.Timeout}
		if conn, err = d.DialContext(ctx, "tcp", u.Host); err != nil {
			return nil, err
		}
	}
	rc := &rawConn{conn: conn, r: bufio.NewReaderSize(conn, rawBufSize), w: bufio.NewWriter(conn)}
	if err := rc.handshake(l.cfg.Timeout, user, pass, token); err != nil {
		rc.close()
		return nil, err
	}
	return rc, nil
}

// handshake reads the server's INFO, sends CONNECT and a PING, and
// waits up to timeout for the PONG.
func (rc *rawConn) handshake(timeout time.Duration, user, pass, token string) error {
	_ = rc.conn.SetDeadline(time.Now().Add(timeout))
	defer rc.conn.SetDeadline(time.Time{})
	line, err := rc.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	js, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("INFO "))
	if !ok {
		return fmt.Errorf("raw read: the server said %q, not INFO", line)
	}
	var info struct {
		Headers bool `json:"headers"`
		TLS     bool `json:"tls_required"`
	}
	if err := json.Unmarshal(js, &info); err != nil {
		return err
	}
	if !info.Headers || info.TLS {
		return errRawUnsupported
	}
	connect, err := json.Marshal(map[string]any{
		"verbose": false, "pedantic": false, "tls_required": false, "name": "logbook read",
		"lang": "go", "version": nats.Version, "protocol": 1, "echo": false,
		"headers": true, "no_responders": true,
		"user": user, "pass": pass, "auth_token": token,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(rc.w, "CONNECT %s\r\nPING\r\n", connect)
	if err := rc.flush(); err != nil {
		return err
	}
	for {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		switch {
		case bytes.HasPrefix(line, []byte("PONG")):
			return nil
		case bytes.HasPrefix(line, []byte("-ERR")):
			return fmt.Errorf("raw read: %s", bytes.TrimSpace(line))
		}
	}
}

// watch ends the connection's reads (a read deadline in the past) when
// ctx is done, or when progress has not moved for stall: a server that
// stopped delivering (see Log.readStall). The function it returns ends
// the watch, which has returned when it does.
func (rc *rawConn) watch(ctx context.Context, stall time.Duration, progress *atomic.Uint64) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(stall / 4)
		defer t.Stop()
		seen, since := progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
			case now := <-t.C:
				if p := progress.Load(); p != seen {
					seen, since = p, now
					continue
				}
				if now.Sub(since) < stall {
					continue
				}
			}
			_ = rc.conn.SetReadDeadline(time.Unix(1, 0))
			return
		}
	}()
	return func() { close(done); <-ended }
}

// sub subscribes to subject (sid 1).
func (rc *rawConn) sub(subject string) error {
	_, err := fmt.Fprintf(rc.w, "SUB %s 1\r\n", subject)
	return err
}

// pub buffers a message to subject with reply and data; flush sends it.
func (rc *rawConn) pub(subject, reply string, data []byte) error {
	fmt.Fprintf(rc.w, "PUB %s %s %d\r\n", subject, reply, len(data))
	rc.w.Write(data)
	_, err := rc.w.WriteString("\r\n")
	return err
}

// flush sends what pub and sub buffered.
func (rc *rawConn) flush() error { return rc.w.Flush() }

// close closes the connection.
func (rc *rawConn) close() { rc.conn.Close() }

// next returns the next message the server sends, answering its PINGs
// and passing over its INFOs and +OKs. A -ERR, a line it does not know
// and the connection's errors are errors.
func (rc *rawConn) next() (rawFrame, error) {
	for {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return rawFrame{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		op, args, _ := bytes.Cut(line, []byte(" "))
		switch string(op) {
		case "HMSG", "MSG":
			return rc.frame(string(op) == "HMSG", args)
		case "PING":
			rc.w.WriteString("PONG\r\n")
			if err := rc.flush(); err != nil {
				return rawFrame{}, err
			}
		case "PONG", "+OK", "INFO":
		default:
			return rawFrame{}, fmt.Errorf("raw read: the server said %q", line)
		}
	}
}

// frame reads the message whose control line's arguments are args:
// "<subject> <sid> [reply] [<header bytes>] <total bytes>".
func (rc *rawConn) frame(headers bool, args []byte) (rawFrame, error) {
	var f [5][]byte
	n := 0
	for i := 0; i < len(args); {
		if args[i] == ' ' || args[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(args) && args[j] != ' ' && args[j] != '\t' {
			j++
		}
		if n == len(f) {
			return rawFrame{}, fmt.Errorf("raw read: bad message line %q", args)
		}
		f[n], n, i = args[i:j], n+1, j
	}
	want := 3 // subject, sid, total
	if headers {
		want++
	}
	if n != want && n != want+1 {
		return rawFrame{}, fmt.Errorf("raw read: bad message line %q", args)
	}
	fr := rawFrame{subject: f[0]}
	if n == want+1 {
		fr.reply = f[2]
	}
	total, err := strconv.Atoi(string(f[n-1]))
	hlen := 0
	if err == nil && headers {
		hlen, err = strconv.Atoi(string(f[n-2]))
	}
	if err != nil || total < 0 || hlen < 0 || hlen > total {
		return rawFrame{}, fmt.Errorf("raw read: bad message line %q", args)
	}
	// The subject and reply are in the reader's buffer, which the body's
	// read may overwrite: copied first.
	rc.meta = append(append(rc.meta[:0], fr.subject...), fr.reply...)
	fr.subject, fr.reply = rc.meta[:len(fr.subject)], rc.meta[len(fr.subject):]
	if n != want+1 {
		fr.reply = nil
	}
	buf := rc.alloc(total)
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		return rawFrame{}, err
	}
	if _, err := rc.r.Discard(2); err != nil { // CRLF
		return rawFrame{}, err
	}
	if headers {
		fr.hdr = buf[:hlen:hlen]
	}
	fr.data = buf[hlen:total:total]
	return fr, nil
}

// alloc returns n bytes cut from the connection's slab (a block of its
// own when n is large).
func (rc *rawConn) alloc(n int) []byte {
	if n > rawSlab/4 {
		return make([]byte, n)
	}
	if len(rc.slab) < n {
		rc.slab = rc.blocks.get()
	}
	b := rc.slab[:n:n]
	rc.slab = rc.slab[n:]
	return b
}

// decodeHeader returns the headers of the header block hdr
// ("NATS/1.0\r\nK: V\r\n…\r\n") a read judges its message by (those
// named judgedHeader), as nats.go decodes them (nats.DecodeHeadersMsg;
// nil if the block does not decode), in fewer allocations: no copy of
// the block (the strings share hdr's bytes, which must not change
// after), the map sized for its lines, the values of all keys in one
// slice. The server's bookkeeping (Nats-Msg-Id, the batch headers) is
// left out: with it a signed event's map outgrew its first group.
func decodeHeader(hdr []byte) nats.Header {
	h, _ := decodeHeaderInto(nil, nil, hdr)
	return h
}

// decodeHeaderInto is decodeHeader that fills h (cleared first; nil:
// a new map) and appends the values to vals, and returns both: a
// decoding goroutine reuses the maps and values of a chunk's messages
// once the chunk is read, and makes no map a message. The map returned
// may be another when hdr is not an ordinary header block. The block is
// parsed by RawHeader.Parse, as every raw read parses one.
func decodeHeaderInto(h nats.Header, vals []string, hdr []byte) (nats.Header, []string) {
	var rh RawHeader
	if !rh.Parse(hdr) {
		return slowHeader(hdr), vals // a status, malformed, or unusual
	}
	if h == nil {
		h = make(nats.Header, 8)
	} else {
		clear(h)
	}
	for _, f := range rh.Fields() {
		if prev, dup := h[f.Name]; dup {
			h[f.Name] = append(prev, f.Value)
			continue
		}
		vals = append(vals, f.Value)
		h[f.Name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return h, vals
}

// HeaderField is one header of a message's header block: its name, as
// stored (case kept), and one of its values, its leading blanks cut (as
// nats.go decodes it). Both share the block's bytes.
type HeaderField struct{ Name, Value string }

// rawFields is how many judged headers a RawHeader holds: a signed
// event has seven (Lb-Type, Lb-Key and Lb-Sig, or the five of the batch
// form, and Nats-Expected-Last-Subject-Sequence).
const rawFields = 16

// RawHeader is the judged headers of one message's header block (those
// named judgedHeader: Lb-…, Nats-Expected-…), parsed in place in one
// walk over the block: each name and value shares the block's bytes,
// which must not change while it is in use. It is a value of fixed size
// (about 0.5 KiB, no pointer to memory of its own): a reader parses each
// message's block into the same one, with no map and no copy. The zero
// RawHeader holds no header.
type RawHeader struct {
	n int
	f [rawFields]HeaderField
}

// Parse parses hdr, a header block as the server sends it
// ("NATS/1.0\r\nName: value\r\n…\r\n"), into h, replacing what h held,
// and reports whether it could: false (h then holds nothing) for a
// status block ("NATS/1.0 408 …"), a block nats.go would not decode or
// would decode otherwise (a line without a colon, an empty name, no
// blank line at its end), and a block of more than 16 judged headers;
// such a block is decoded as nats.go decodes it (decodeHeader). When it
// parses, h holds what decodeHeader's map holds: the judged headers in
// stored order, each value of a repeated name in its own field.
func (h *RawHeader) Parse(hdr []byte) bool {
	h.n = 0
	s := unsafe.String(unsafe.SliceData(hdr), len(hdr))
	// The first line, "NATS/1.0" ended by "\n" or "\r\n".
	var rest string
	switch {
	case strings.HasPrefix(s, "NATS/1.0\r\n"):
		rest = s[len("NATS/1.0\r\n"):]
	case strings.HasPrefix(s, "NATS/1.0\n"):
		rest = s[len("NATS/1.0\n"):]
	default:
		return false
	}
	for {
		// A line's name is short and its value may be long: the name is
		// scanned byte by byte, up to its colon or the line's end, and
		// only the value searched for the line's end (one search a line,
		// not one for its end and another for its colon).
		c := 0
		for c < len(rest) && rest[c] != ':' && rest[c] != '\n' {
			c++
		}
		if c == len(rest) {
			h.n = 0
			return false // no line end
		}
		if rest[c] == '\n' {
			// No colon: the blank line that ends the block, or a line
			// nats.go would not decode.
			if c == 0 || c == 1 && rest[0] == '\r' {
				return true
			}
			h.n = 0
			return false
		}
		i := strings.IndexByte(rest[c:], '\n')
		if i < 0 {
			h.n = 0
			return false
		}
		kv := rest[:c+i]
		rest = rest[c+i+1:]
		if kv[len(kv)-1] == '\r' {
			kv = kv[:len(kv)-1]
		}
		if c == 0 {
			h.n = 0
			return false // an empty name
		}
		if !judgedHeader(kv[:c]) {
			continue
		}
		if h.n == len(h.f) {
			h.n = 0
			return false
		}
		v := c + 1
		for v < len(kv) && (kv[v] == ' ' || kv[v] == '\t') {
			v++
		}
		h.f[h.n] = HeaderField{Name: kv[:c], Value: kv[v:]}
		h.n++
	}
}

// Fields returns the headers h holds, in stored order; the slice is h's
// own, valid until h is parsed again.
func (h *RawHeader) Fields() []HeaderField { return h.f[:h.n] }

// Get returns the first value of the header named name (as stored, case
// included), "" when h holds none: nats.Header.Get of the decoded block.
func (h *RawHeader) Get(name string) string {
	for i := range h.n {
		if h.f[i].Name == name {
			return h.f[i].Value
		}
	}
	return ""
}

// attestRaw is attestMsg of a message whose judged headers h holds,
// parsed from its raw header block: each field the first value of its
// name, as nats.Header.Get takes it, in one pass over h.
func attestRaw(seq uint64, subject string, h *RawHeader, data []byte) attestation.Message {
	m := attestation.Message{Seq: seq, Subject: subject, Data: data}
	fs := h.Fields()
	for i := len(fs) - 1; i >= 0; i-- { // last to first: the first value stays
		f := &fs[i]
		switch f.Name {
		case jetstream.ExpectedLastSubjSeqHeader:
			m.Expect = f.Value
		case attestation.HeaderKey:
			m.KeyID = f.Value
		case attestation.HeaderSig:
			m.Sig = f.Value
		case attestation.HeaderBatch:
			m.Batch = f.Value
		case attestation.HeaderRoot:
			m.Root = f.Value
		case attestation.HeaderBatchSig:
			m.BatchSig = f.Value
		case attestation.HeaderProof:
			m.Proof = f.Value
		}
	}
	return m
}

// HeaderBlock returns m's header block as the server sent it when m's
// Header is still to be decoded from it (a message a raw read handed to
// Judged.Check undecoded; its judged headers are what RawHeader.Parse,
// or when that fails Decoded, makes of it), and nil otherwise. The
// bytes are m's: not to be changed.
func (m Msg) HeaderBlock() []byte {
	if m.Header != nil {
		return nil
	}
	return m.hdr
}

// Decoded returns m with its Header decoded from its header block (the
// judged headers, as a read decodes them: decodeHeader) when it still
// has one (HeaderBlock), and m as it is otherwise.
func (m Msg) Decoded() Msg {
	if m.Header == nil && m.hdr != nil {
		m.Header, m.hdr = decodeHeader(m.hdr), nil
	}
	return m
}

// judgedHeader reports whether a read judges a message by the header
// named name: the Lb- headers (signatures, batch proofs, and every one
// a Merkle leaf covers) and the publish expectations a signature covers
// (Nats-Expected-…; see attestMsg).
func judgedHeader(name string) bool {
	return strings.HasPrefix(name, "Lb-") || strings.HasPrefix(name, "Nats-Expected-")
}

// slowHeader is nats.DecodeHeadersMsg(hdr) with only the judged
// headers, nil when it fails, as nats.go delivers a message whose header
// block does not decode.
func slowHeader(hdr []byte) nats.Header {
	h, err := nats.DecodeHeadersMsg(hdr)
	if err != nil {
		return nil
	}
	for k := range h {
		if !judgedHeader(k) {
			delete(h, k)
		}
	}
	return h
}
