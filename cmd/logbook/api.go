package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/events"
)

// The request/reply API a running server answers on its NATS connection.
// Subjects sit outside the stream's lb.> so requests are never stored.
// Each server answers on a prefix of its own, logbook.api.<server id>.,
// written to serve.json, so that several hosts on one NATS cluster each
// answer for their own projection; all of them also answer, as one queue
// group, on anyAPI, for a client that knows no server.
const anyAPI = "logbook.api.any."

// apiPrefixFor returns the API prefix of the server for data dir dd on
// this host.
func apiPrefixFor(dd dataDir) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + string(dd)))
	return "logbook.api." + hex.EncodeToString(sum[:6]) + "."
}

// API verbs.
const (
	verbHook     = "hook"     // hookRequest → hookReply
	verbSessions = "sessions" // sessionsRequest → []session.State
	verbSession  = "session"  // sessionRequest → sessionReply
	verbVerify   = "verify"   // {} → verifyReply
	verbStatus   = "status"   // {} → statusReply
)

// apiReply wraps every answer: Error set means the request failed.
type apiReply struct {
	Error string          `json:"error,omitempty"`
	Code  string          `json:"code,omitempty"` // "not_found", "rejected", "malformed"
	Data  json.RawMessage `json:"data,omitempty"`
}

// errCode names the events sentinel err wraps, for the client to rebuild.
func errCode(err error) string {
	switch {
	case errors.Is(err, events.ErrNotFound):
		return "not_found"
	case errors.Is(err, events.ErrRejected):
		return "rejected"
	case errors.Is(err, events.ErrMalformed):
		return "malformed"
	}
	return ""
}

// serveAPI answers subject (a prefix and a verb) on nc with handle until
// the subscription ends.
func serveAPI(nc *nats.Conn, subject string, handle func(ctx context.Context, data []byte) (any, error)) (*nats.Subscription, error) {
	return nc.QueueSubscribe(subject, "logbook-api", func(m *nats.Msg) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var r apiReply
		v, err := handle(ctx, m.Data)
		if err == nil {
			r.Data, err = json.Marshal(v)
		}
		if err != nil {
			r = apiReply{Error: err.Error(), Code: errCode(err)}
		}
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	})
}

// callAPI sends req to the server answering on prefix and decodes its
// answer into resp.
func callAPI(ctx context.Context, nc *nats.Conn, prefix, verb string, req, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, prefix+verb, b)
	if err != nil {
		return fmt.Errorf("ask server (%s): %w", verb, err)
	}
	var r apiReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return fmt.Errorf("server answer (%s): %w", verb, err)
	}
	if r.Error != "" {
		re := &remoteError{msg: r.Error}
		switch r.Code {
		case "not_found":
			re.is = events.ErrNotFound
		case "rejected":
			re.is = events.ErrRejected
		case "malformed":
			re.is = events.ErrMalformed
		}
		return re
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(r.Data, resp)
}

// remoteError is an error the server answered with: its message as the
// server wrote it, and the events sentinel it wrapped there, if any.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }
