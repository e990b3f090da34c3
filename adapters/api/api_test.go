package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// serveTest serves subject on srv's connection with handle, logging to
// logf, until the test ends, and flushes the subscription to the server
// before it returns; a failure fails the test.
func serveTest(t *testing.T, srv *natslog.Server, subject string, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any)) {
	t.Helper()
	sub, err := Serve(srv.Conn(), subject, handle, logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := srv.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
}

// loopback starts an embedded server listening on a loopback port (user
// "u", password "p") and connects to it over TCP, as a client on another
// host would; both are closed when the test ends.
func loopback(t *testing.T) (*natslog.Server, *nats.Conn) {
	t.Helper()
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", User: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	nc, err := natslog.Connect(srv.ClientURL(), nats.UserInfo("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

// TestAPI_AnswerSizes sends answers of every size class through the
// API's framing over a loopback connection: small ones in one message,
// ones over the connection's maximum payload in parts, joined again
// byte for byte; one over MaxReply is refused at once with the reason on
// both sides, never left to time out. A slow answer comes after the
// heartbeats sent meanwhile. A verb nobody answers fails once
// NoRespondersWait has passed.
func TestAPI_AnswerSizes(t *testing.T) {
	t.Parallel() // its own server; it mostly waits (a heartbeat, NoRespondersWait)
	srv, nc := loopback(t)
	if nc.MaxPayload() != 1<<20 {
		t.Fatalf("max payload %d, the sizes below assume 1 MiB", nc.MaxPayload())
	}
	var logged natslogtest.Buffer
	logf := func(format string, args ...any) { fmt.Fprintf(&logged, format+"\n", args...) }
	serveTest(t, srv, "test.big", func(_ context.Context, data []byte) (any, error) {
		var n int
		if err := json.Unmarshal(data, &n); err != nil {
			return nil, err
		}
		return strings.Repeat("x", n), nil
	}, logf)
	for _, n := range []int{0, 10, 1<<20 - 300, 1<<20 + 1, 5 << 20, MaxReply - 100} {
		var got string
		if err := Call(t.Context(), nc, "test.", "big", n, &got); err != nil {
			t.Fatalf("answer of %d bytes: %v", n, err)
		}
		if len(got) != n || strings.Trim(got, "x") != "" {
			t.Errorf("answer of %d bytes came back as %d bytes", n, len(got))
		}
	}
	if logged.String() != "" {
		t.Errorf("server logged for answers it sent:\n%s", logged.String())
	}

	// The server encodes the whole answer before it knows its size,
	// seconds of work under the race detector on a loaded machine, and
	// heartbeats meanwhile: the deadline only keeps a server that never
	// answers from hanging the test, and an answer refused for its size
	// is ErrTooLarge, not the deadline's error.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := Call(ctx, nc, "test.", "big", MaxReply+1, nil)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(MaxReply+len(`""`)+1)) {
		t.Errorf("answer over MaxReply: error %v, want ErrTooLarge naming its size", err)
	}
	if !strings.Contains(logged.String(), "api big:") || !strings.Contains(logged.String(), "answer too large") {
		t.Errorf("server log %q, want a line about the answer it did not send", logged.String())
	}

	serveTest(t, srv, "test.slow", func(context.Context, []byte) (any, error) {
		time.Sleep(heartbeatEvery + heartbeatEvery/2)
		return "done", nil
	}, logf)
	// Each call below has a deadline of its own: the refusal above may
	// take most of its own on a loaded machine (32 MiB built and encoded).
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var done string
	if err := Call(ctx, nc, "test.", "slow", nil, &done); err != nil || done != "done" {
		t.Errorf("answer after a heartbeat: %q, %v", done, err)
	}

	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = Call(ctx, nc, "test.", "nobody", 1, nil)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("verb nobody serves: %v, want no responders", err)
	}
}

// slowJSON is an answer whose encoding takes d.
type slowJSON struct{ d time.Duration }

func (s slowJSON) MarshalJSON() ([]byte, error) {
	time.Sleep(s.d)
	return []byte(`"encoded"`), nil
}

// TestServe_HeartbeatsWhileEncoding: an answer whose encoding takes
// longer than a heartbeat's period (a large one on a loaded machine)
// gets heartbeats until it is sent, as a slow handler does, and none
// after it: a client's idle timeout counts from the last thing the
// server sent. Under load, a 32 MiB answer took over 15 s to encode
// after its handler returned, heartbeats stopped, and the client gave
// up ("the server sent nothing for 15s").
func TestServe_HeartbeatsWhileEncoding(t *testing.T) {
	t.Parallel() // it mostly waits
	srv, nc := loopback(t)
	serveTest(t, srv, "test.enc", func(context.Context, []byte) (any, error) {
		return slowJSON{heartbeatEvery + heartbeatEvery/2}, nil
	}, func(string, ...any) {})
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("test.enc", inbox, nil); err != nil {
		t.Fatal(err)
	}
	var beats int
	for {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %d heartbeats: %v", beats, err)
		}
		if m.Header.Get(headerWorking) != "" {
			beats++
			continue
		}
		if !strings.Contains(string(m.Data), "encoded") {
			t.Fatalf("answer %q", m.Data)
		}
		break
	}
	if beats == 0 {
		t.Errorf("no heartbeat while the answer was encoded for %v", heartbeatEvery+heartbeatEvery/2)
	}
	if m, err := sub.NextMsg(heartbeatEvery + time.Second); err == nil {
		t.Errorf("a message after the answer: %q %v", m.Data, m.Header)
	}
}

// TestServe_ClientGoneCancels: a client that asks and goes away (its
// connection closed, as when its process is killed) while the handler
// works cancels the handler's context at the next heartbeat, so that a
// wait for someone's answer (a gate review) ends with its asker; a
// client still waiting keeps it, heartbeats and all.
func TestServe_ClientGoneCancels(t *testing.T) {
	t.Parallel() // it mostly waits
	srv, nc := loopback(t)
	ended := make(chan error, 2)
	serveTest(t, srv, "test.hold", func(ctx context.Context, data []byte) (any, error) {
		select {
		case <-ctx.Done():
			ended <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(3 * heartbeatEvery):
			ended <- nil
			return "held", nil
		}
	}, func(string, ...any) {})

	// A client that stays gets its answer after several heartbeats.
	var got string
	if err := Call(t.Context(), nc, "test.", "hold", nil, &got); err != nil || got != "held" {
		t.Fatalf("a client that waited: %q, %v", got, err)
	}
	if err := <-ended; err != nil {
		t.Fatalf("the handler of a client that waited ended: %v", err)
	}

	// A client that goes away.
	gone, err := natslog.Connect(srv.ClientURL(), nats.UserInfo("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	called := make(chan error, 1)
	go func() { called <- Call(t.Context(), gone, "test.", "hold", nil, nil) }()
	time.Sleep(heartbeatEvery / 2)
	gone.Close()
	<-called
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler of a client that went away ended with %v, want its context canceled", err)
		}
	case <-time.After(2*heartbeatEvery + time.Second):
		t.Fatal("the handler of a client that went away still works, past the next heartbeat")
	}
}

// TestServe_SlowRequestHoldsUpNoOther holds one request of a verb open
// (as a gate review waits for a person) and asks the same verb again:
// the second is answered while the first still waits, and the first is
// answered once released.
func TestServe_SlowRequestHoldsUpNoOther(t *testing.T) {
	srv, nc := loopback(t)
	release, held := make(chan struct{}), make(chan struct{})
	serveTest(t, srv, "test.wait", func(ctx context.Context, data []byte) (any, error) {
		var hold bool
		if err := json.Unmarshal(data, &hold); err != nil {
			return nil, err
		}
		if hold {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return "released", nil
		}
		return "at once", nil
	}, func(string, ...any) {})
	first := make(chan error, 1)
	var firstAnswer string
	go func() { first <- Call(t.Context(), nc, "test.", "wait", true, &firstAnswer) }()
	<-held
	var second string
	if err := Call(t.Context(), nc, "test.", "wait", false, &second); err != nil || second != "at once" {
		t.Fatalf("second request while the first waits: %q, %v", second, err)
	}
	select {
	case err := <-first:
		t.Fatalf("the held request was answered before it was released: %q, %v", firstAnswer, err)
	default:
	}
	close(release)
	if err := <-first; err != nil || firstAnswer != "released" {
		t.Fatalf("held request: %q, %v", firstAnswer, err)
	}
}

// TestCall_NoRespondersYet: a request no server takes is asked again
// until one subscribes (as a server's subscription reaches another
// cluster node a moment after it is made), within NoRespondersWait.
func TestCall_NoRespondersYet(t *testing.T) {
	t.Parallel() // its own server and log
	_, nc := loopback(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		sub, err := Serve(nc, "late.verb", func(context.Context, []byte) (any, error) { return "here", nil }, t.Logf)
		if err == nil {
			t.Cleanup(func() { sub.Unsubscribe() })
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got string
	if err := Call(ctx, nc, "late.", "verb", nil, &got); err != nil || got != "here" {
		t.Errorf("a verb served 300 ms late: %q, %v; want the answer", got, err)
	}
}

// TestInProcess_AnswersAsCall: InProcess answers a verb as Serve and
// Call do over a connection: the same decoded answer, the same error
// text and sentinel for an error answer, AllowStale passed on to the
// handler; a verb with no handler is no responders.
func TestInProcess_AnswersAsCall(t *testing.T) {
	srv, nc := loopback(t)
	type answer struct {
		N     int    `json:"n"`
		Echo  string `json:"echo"`
		Stale bool   `json:"stale"`
	}
	handlers := map[string]func(context.Context, []byte) (any, error){
		"echo": func(ctx context.Context, data []byte) (any, error) {
			var s string
			if err := json.Unmarshal(data, &s); err != nil {
				return nil, fmt.Errorf("echo: %w: %v", events.ErrMalformed, err)
			}
			return answer{N: len(s), Echo: s, Stale: staleAllowed(ctx)}, nil
		},
		"missing": func(context.Context, []byte) (any, error) {
			return nil, fmt.Errorf("session %q: %w", "01JB", events.ErrNotFound)
		},
	}
	for verb, h := range handlers {
		serveTest(t, srv, "inproc."+verb, h, t.Logf)
	}
	local := InProcess(handlers, t.Logf)
	remote := func(ctx context.Context, verb string, req, resp any) error {
		return Call(ctx, nc, "inproc.", verb, req, resp)
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		verb string
		req  any
	}{
		{"answer", t.Context(), "echo", "héllo \"x\""},
		{"stale allowed", AllowStale(t.Context()), "echo", "s"},
		{"malformed request", t.Context(), "echo", 42},
		{"not found", t.Context(), "missing", nil},
	} {
		var want, got answer
		werr := remote(c.ctx, c.verb, c.req, &want)
		gerr := local(c.ctx, c.verb, c.req, &got)
		if got != want {
			t.Errorf("%s: in process %+v, over NATS %+v", c.name, got, want)
		}
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("%s: in process error %v, over NATS %v", c.name, gerr, werr)
		}
		for _, sentinel := range []error{events.ErrNotFound, events.ErrMalformed} {
			if errors.Is(gerr, sentinel) != errors.Is(werr, sentinel) {
				t.Errorf("%s: in process error %v is %v: %v, over NATS %v", c.name, gerr, sentinel, errors.Is(gerr, sentinel), errors.Is(werr, sentinel))
			}
		}
	}
	if err := local(t.Context(), "nothing", nil, nil); !errors.Is(err, nats.ErrNoResponders) || !strings.Contains(err.Error(), "nothing") {
		t.Errorf("a verb with no handler: %v, want no responders naming the verb", err)
	}
}
