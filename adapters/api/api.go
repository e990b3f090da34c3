package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/events"
)

// The request/reply API a running server answers on its NATS connection.
// Subjects sit outside the stream's lb.> so requests are never stored.
// Each server answers on a prefix of its own, logbook.api.<server id>.,
// written to serve.json, so that several hosts on one NATS cluster each
// answer for their own projection; all of them also answer, as one queue
// group, on AnyPrefix, for a client that knows no server. A follower
// (serve --role reader) answers the verbs that only read on a prefix of
// its own outside logbook.api., FollowerRoot and the follower id its
// credentials name (FollowerPrefixFor with admin's, which name none), so
// that credentials that may answer a follower's requests cannot take a
// writing server's, nor another follower's.
const AnyPrefix = "logbook.api.any."

// FollowerRoot begins every follower's API prefix.
const FollowerRoot = "logbook.ro."

// PrefixFor returns the API prefix of the server for the data dir at
// absolute path dir on host: "logbook.api.<12 hex digits>.".
func PrefixFor(host, dir string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + dir))
	return "logbook.api." + hex.EncodeToString(sum[:6]) + "."
}

// FollowerPrefixFor returns the API prefix of a follower (serve --role
// reader) whose credentials name no follower id (admin's) for the data
// dir at absolute path dir on host:
// "logbook.ro.<12 hex digits>.", the same digits as PrefixFor.
func FollowerPrefixFor(host, dir string) string {
	return FollowerRoot + strings.TrimPrefix(PrefixFor(host, dir), "logbook.api.")
}

// API verbs, each with its request and answer.
const (
	VerbHook           = "hook"            // HookRequest → HookReply
	VerbSessions       = "sessions"        // SessionsRequest → SessionsPage
	VerbSession        = "session"         // SessionRequest → SessionReply
	VerbVerify         = "verify"          // {} → replay.VerifyReport
	VerbStatus         = "status"          // {} → StatusReply
	VerbCommands       = "commands"        // CommandsRequest → CommandsPage
	VerbCommand        = "command"         // CommandRequest → command.State
	VerbSessionEnd     = "session.end"     // SessionEndRequest → SessionEndReply
	VerbSessionAbandon = "session.abandon" // SessionEndRequest (with Entry) → SessionEndReply
)

// Reply wraps every answer: Error set means the request failed.
type Reply struct {
	Error string          `json:"error,omitempty"`
	Code  string          `json:"code,omitempty"` // "not_found", "rejected", "malformed", "too_large", "appends_held", "not_on_socket"
	Data  json.RawMessage `json:"data,omitempty"`
}

// dataPrefix begins the wire form of every answer that succeeded.
const dataPrefix = `{"data":`

// wire returns r as sent: an answer that succeeded is written by hand as
// {"data":<Data>} (Data is valid JSON, and the client reads it without
// decoding the wrapper); an error is r's JSON.
func (r Reply) wire() []byte {
	if r.Error == "" && len(r.Data) > 0 {
		b := make([]byte, 0, len(dataPrefix)+len(r.Data)+1)
		return append(append(append(b, dataPrefix...), r.Data...), '}')
	}
	b, _ := json.Marshal(r)
	return b
}

// Encoded is an answer already in its JSON form, which a handler returns
// to spare encoding it again: its bytes are sent as they are and must be
// valid JSON.
type Encoded []byte

// encode returns the JSON of a handler's answer v.
func encode(v any) ([]byte, error) {
	if e, ok := v.(Encoded); ok {
		return e, nil
	}
	return json.Marshal(v)
}

// errCode names the events sentinel err wraps, for the client to rebuild.
func errCode(err error) string {
	switch {
	case errors.Is(err, ErrNotOwner):
		return "refused"
	case errors.Is(err, events.ErrNotFound):
		return "not_found"
	case errors.Is(err, events.ErrRejected):
		return "rejected"
	case errors.Is(err, events.ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrHeld):
		return hooksock.CodeHeld
	}
	return ""
}

// Framing of answers. An answer that fits the connection's maximum
// payload travels as one message without headers. A larger one travels as
// parts: consecutive messages to the request's reply subject, each with
// header Logbook-Part "i/n" (1-based), whose data joined in order is the
// answer. An answer over MaxReply bytes is not sent: the client gets an
// error answer with code "too_large" saying how big it was, and the
// server logs it. Listing verbs page their answers (a cursor and a limit)
// so that each page fits one message.
const (
	headerPart = "Logbook-Part"
	// MaxReply is the largest answer sent, in bytes, well under the
	// pending limits of the server (64 MiB per client) and of a client's
	// subscription (64 MiB).
	MaxReply = 32 << 20
	// replyHeadroom is the room kept in a part's message for its headers,
	// in bytes.
	replyHeadroom = 256

	// headerWorking marks a heartbeat: a message without data the server
	// sends every heartbeatEvery while a request is being worked on, so
	// that a long answer (verify of a large log) is waited for and a
	// server that stopped answering is noticed within idleTimeout.
	headerWorking  = "Logbook-Working"
	heartbeatEvery = 2 * time.Second
	idleTimeout    = 15 * time.Second
)

// HandleTimeout bounds the work on one request: its handler's context
// ends then. A handler that waits for someone (a gate review) decides
// before it (adapters/gate's MaxWait).
const HandleTimeout = 5 * time.Minute

// ErrTooLarge is wrapped by the error of an answer over MaxReply bytes.
var ErrTooLarge = errors.New("answer too large")

// ErrHeld is wrapped by the error of a hook serve did not take because
// it holds its appends for want of disk space (Service.Hook): nothing was
// appended, and the same payload goes in once the disk frees. Its code on
// the wire is hooksock.CodeHeld.
var ErrHeld = errors.New("serve holds appends")

// ErrNotOnSocket is wrapped by the error of a verb the system socket
// does not answer (System: neither a caller's verb nor a person's): the
// command asks a serve's data dir for it instead. Its code on the wire
// is CodeNotOnSocket.
var ErrNotOnSocket = errors.New("not answered on the system socket")

// CodeNotOnSocket is the reply code of ErrNotOnSocket.
const CodeNotOnSocket = "not_on_socket"

// PartSize returns the most answer bytes one message on nc carries.
func PartSize(nc *nats.Conn) int {
	return max(int(nc.MaxPayload())-replyHeadroom, 1024)
}

// MaxInFlight is how many requests of one subscription Serve works on
// at once. A request that waits long (a gate review waiting for a
// person) does not hold up the others; past this many, the next waits
// for one to finish, so a flood of requests queues in the client's
// subscription rather than in goroutines.
const MaxInFlight = 64

// Serve answers subject (a prefix and a verb) on nc with handle until
// the subscription ends, working on up to MaxInFlight requests at once
// (so handle must be safe for concurrent use) and sending heartbeats
// while handle works (at most HandleTimeout each). Failures to answer —
// an answer too large to send, a publish refused — and handler errors
// that are not about the request itself are written to logf as well as,
// when possible, to the client.
func Serve(nc *nats.Conn, subject string, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any)) (*nats.Subscription, error) {
	slots := make(chan struct{}, MaxInFlight)
	return nc.QueueSubscribe(subject, "logbook-api", func(m *nats.Msg) {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			answer(nc, m, subject, handle, logf)
		}()
	})
}

// InProcess returns a Caller that answers each verb with its handler in
// handlers, in this process, as Serve answers it on a connection and
// Call decodes the answer: the request encoded as Call encodes it, the
// handler run by the rules of Serve (at most HandleTimeout; an answer
// over MaxReply bytes a too_large error; errors not about the request
// written to logf) and its answer decoded as Call decodes one, so the
// caller sees the same answers and errors (a *RemoteError wrapping the
// code's sentinel) without a round trip through NATS. ctx is the
// handler's parent: its values (AllowStale) reach the handler, and its
// end ends the handler's wait. A verb with no handler is
// nats.ErrNoResponders, as a server that does not answer it.
// handlers must not change once the Caller is in use.
func InProcess(handlers map[string]func(context.Context, []byte) (any, error), logf func(format string, args ...any)) Caller {
	return func(ctx context.Context, verb string, req, resp any) error {
		h, ok := handlers[verb]
		if !ok {
			return fmt.Errorf("ask server (%s): %w", verb, nats.ErrNoResponders)
		}
		b, err := hooksock.Marshal(req)
		if err != nil {
			return err
		}
		return decodeAnswer(verb, work(ctx, verb, b, h, logf, nil), resp)
	}
}

// answer works on request m of subject with handle and sends the answer.
func answer(nc *nats.Conn, m *nats.Msg, subject string, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any)) {
	verb := subject[strings.LastIndexByte(subject, '.')+1:]
	ctx := context.Background()
	if m.Header.Get(headerStaleOK) != "" {
		ctx = AllowStale(ctx)
	}
	// The handler's context is canceled once the client is gone (see
	// heartbeat): a gate review's wait then ends, and the review with
	// it, rather than waiting its budget for nobody.
	ctx, gone := context.WithCancel(ctx)
	defer gone()
	b := work(ctx, verb, m.Data, handle, logf, heartbeat(nc, m.Reply, gone))
	if err := respond(nc, m, b); err != nil {
		logf("WARN: api %s: answer of %d bytes not sent: %v", verb, len(b), err)
		b, _ = json.Marshal(Reply{Error: fmt.Sprintf("%s: answer of %d bytes not sent: %v", verb, len(b), err)})
		_ = m.Respond(b)
	}
}

// work works on request data of verb with handle, for at most
// HandleTimeout under parent, and returns the answer as sent (Reply's
// wire form): handle's answer, or its error with the error's code. It
// calls done, when not nil, once the answer is in its wire form, just
// before it returns: encoding an answer of MaxReply bytes takes seconds
// on a loaded machine, and the heartbeats done stops go on meanwhile.
// An answer over MaxReply bytes becomes a too_large error; errors that
// are not about the request itself are also written to logf.
func work(parent context.Context, verb string, data []byte, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any), done func()) []byte {
	ctx, cancel := context.WithTimeout(parent, HandleTimeout)
	defer cancel()
	if done != nil {
		defer done()
	}
	var r Reply
	v, err := handle(ctx, data)
	if err == nil {
		r.Data, err = encode(v)
	}
	if err == nil && len(r.Data) > MaxReply {
		err = fmt.Errorf("%s: %w: %d bytes, over the limit of %d", verb, ErrTooLarge, len(r.Data), MaxReply)
	}
	if err != nil {
		if !IsInputError(err) && !errors.Is(err, events.ErrNotFound) {
			logf("WARN: api %s: %v", verb, err)
		}
		r = Reply{Error: err.Error(), Code: errCode(err)}
	}
	return r.wire()
}

// heartbeat sends a heartbeat to reply on nc every heartbeatEvery until
// the function it returns is called; that function returns once the last
// heartbeat is sent, so none follows the answer.
//
// Each heartbeat is sent as a request, which the client never answers
// (Call reads it as a heartbeat by its header): while the client's reply
// subscription lives, the request waits out heartbeatProbe for nothing;
// once the client is gone (its process ended, its connection closed),
// the server answers at once that no one subscribes
// (nats.ErrNoResponders), and heartbeat calls gone and sends no more.
func heartbeat(nc *nats.Conn, reply string, gone func()) (stop func()) {
	if reply == "" {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(exited)
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				msg := &nats.Msg{Subject: reply, Header: nats.Header{headerWorking: []string{time.Since(start).Round(time.Second).String()}}}
				pctx, pcancel := context.WithTimeout(ctx, heartbeatProbe)
				_, err := nc.RequestMsgWithContext(pctx, msg)
				pcancel()
				if errors.Is(err, nats.ErrNoResponders) {
					gone()
					return
				}
			}
		}
	}()
	return func() {
		cancel() // a probe waiting for nothing ends now: the answer goes out
		close(done)
		<-exited
	}
}

// heartbeatProbe is how long a heartbeat waits to learn that its client
// is gone: the server's no-responders answer comes at once, so this only
// bounds the wait for the answer that never comes from a live client.
const heartbeatProbe = 250 * time.Millisecond

// respond sends answer b to request m on nc: one message when it fits,
// else consecutive parts (see headerPart).
func respond(nc *nats.Conn, m *nats.Msg, b []byte) error {
	if m.Reply == "" {
		return errors.New("request has no reply subject")
	}
	size := PartSize(nc)
	if len(b) <= size {
		return nc.Publish(m.Reply, b)
	}
	n := (len(b) + size - 1) / size
	for i := range n {
		part := b[i*size : min((i+1)*size, len(b))]
		msg := &nats.Msg{Subject: m.Reply, Data: part, Header: nats.Header{headerPart: []string{fmt.Sprintf("%d/%d", i+1, n)}}}
		if err := nc.PublishMsg(msg); err != nil {
			return fmt.Errorf("part %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// NoRespondersWait bounds how long Call asks again while no server takes
// its request (nats.ErrNoResponders): long enough for a server's
// subscriptions to reach the cluster node a client is on, short enough
// that a client of a server that is down hears so at once.
const NoRespondersWait = 2 * time.Second

// Call sends req to the server answering on prefix and decodes its
// answer into resp; a resp of type *[]byte gets the answer's JSON as it
// came, not decoded (nor checked). A ctx from AllowStale lets the server
// answer a read from its projection as it stands while its log does not
// answer (the answer's Stale says so). It waits as long as the server sends
// heartbeats (until ctx is done), and fails when nothing came for
// idleTimeout. A request no server took is sent again, with pauses from
// 25 ms doubling, for up to NoRespondersWait; the error then wraps
// nats.ErrNoResponders.
func Call(ctx context.Context, nc *nats.Conn, prefix, verb string, req, resp any) error {
	b, err := hooksock.Marshal(req)
	if err != nil {
		return err
	}
	data, err := request(ctx, nc, prefix+verb, b)
	for start, pause := time.Now(), 25*time.Millisecond; errors.Is(err, nats.ErrNoResponders) && time.Since(start)+pause <= NoRespondersWait; pause *= 2 {
		// Nobody took the request, so nothing acted on it. In a cluster
		// a server's subscriptions reach the other nodes a moment after
		// it made them (and again after routes reconnect): ask again.
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("ask server (%s): %w", verb, err)
		}
		data, err = request(ctx, nc, prefix+verb, b)
	}
	if de := (*DeniedError)(nil); errors.As(err, &de) {
		return de.Doing(VerbAction(verb))
	}
	if err != nil {
		return fmt.Errorf("ask server (%s): %w", verb, err)
	}
	return decodeAnswer(verb, data, resp)
}

// decodeAnswer decodes data, an answer to verb as sent (Reply.wire), into
// resp (nil: dropped; *[]byte: the data's JSON as it came). An error
// answer is a *RemoteError wrapping the events sentinel its code names.
func decodeAnswer(verb string, data []byte, resp any) error {
	if d, ok := bytes.CutPrefix(data, []byte(dataPrefix)); ok && bytes.HasSuffix(d, []byte("}")) {
		switch resp := resp.(type) {
		case nil:
			return nil
		case *[]byte:
			*resp = d[:len(d)-1]
			return nil
		}
		if err := json.Unmarshal(d[:len(d)-1], resp); err != nil {
			return fmt.Errorf("server answer (%s): %w", verb, err)
		}
		return nil
	}
	var r Reply
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("server answer (%s): %w", verb, err)
	}
	if r.Error != "" {
		re := &RemoteError{msg: r.Error}
		switch r.Code {
		case "not_found":
			re.is = events.ErrNotFound
		case "rejected":
			re.is = events.ErrRejected
		case "malformed":
			re.is = events.ErrMalformed
		case "too_large":
			re.is = ErrTooLarge
		case hooksock.CodeHeld:
			re.is = ErrHeld
		case CodeNotOnSocket:
			re.is = ErrNotOnSocket
		}
		return re
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(r.Data, resp)
}

// request publishes b to subject on nc with a reply subject of its own
// and returns the answer, joined from its parts when it came in several.
func request(ctx context.Context, nc *nats.Conn, subject string, b []byte) ([]byte, error) {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := sub.SetPendingLimits(-1, MaxReply+(MaxReply/PartSize(nc)+1)*replyHeadroom); err != nil {
		return nil, err
	}
	// A refused publish is reported on the connection, not answered.
	ctx, stop := WatchDenied(ctx, nc, func(op, s string) bool { return op == "publish" && s == subject })
	defer stop()
	msg := &nats.Msg{Subject: subject, Reply: inbox, Data: b}
	if staleAllowed(ctx) {
		msg.Header = nats.Header{headerStaleOK: []string{"true"}}
	}
	if err := nc.PublishMsg(msg); err != nil {
		return nil, err
	}
	next := func() (*nats.Msg, error) {
		for {
			wctx, cancel := context.WithTimeout(ctx, idleTimeout)
			m, err := sub.NextMsgWithContext(wctx)
			cancel()
			if de := DeniedCause(ctx); de != nil {
				return nil, de
			}
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil, fmt.Errorf("the server sent nothing for %s: %w", idleTimeout, err)
			}
			if err != nil || m.Header.Get(headerWorking) == "" {
				return m, err
			}
		}
	}
	m, err := next()
	if err != nil {
		return nil, err
	}
	h := m.Header.Get(headerPart)
	if h == "" {
		return m.Data, nil
	}
	i, n, ok := parsePart(h)
	if !ok || i != 1 || n > MaxReply/1024+1 {
		return nil, fmt.Errorf("answer begins with part %q, want 1/n", h)
	}
	out := make([]byte, 0, n*len(m.Data))
	out = append(out, m.Data...)
	for want := 2; want <= n; want++ {
		m, err := next()
		if err != nil {
			return nil, fmt.Errorf("answer part %d of %d: %w", want, n, err)
		}
		h := m.Header.Get(headerPart)
		if h == "" {
			return m.Data, nil // the server gave up part way: its error answer
		}
		if i, nn, ok := parsePart(h); !ok || i != want || nn != n {
			return nil, fmt.Errorf("answer part %q, want %d/%d", h, want, n)
		}
		if len(out)+len(m.Data) > MaxReply+replyHeadroom {
			return nil, fmt.Errorf("answer over %d bytes: %w", MaxReply, ErrTooLarge)
		}
		out = append(out, m.Data...)
	}
	return out, nil
}

// parsePart parses a Logbook-Part header value "i/n".
func parsePart(h string) (i, n int, ok bool) {
	a, b, found := strings.Cut(h, "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	return i, n, err1 == nil && err2 == nil && i >= 1 && i <= n
}

// RemoteError is an error the server answered with: its message as the
// server wrote it, and the events sentinel it wrapped there, if any.
type RemoteError struct {
	msg string
	is  error
}

func (e *RemoteError) Error() string { return e.msg }
func (e *RemoteError) Unwrap() error { return e.is }
