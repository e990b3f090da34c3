// Package hookrecord records one agent hook payload from the process an
// agent starts for it (`logbook hook claude`, `logbook hook codex`):
// straight to the running server when nothing waits in the data dir's
// spool, else into the spool behind what waits; a payload that cannot be
// used is kept aside, redacted, in the spool's rejected folder. It also
// redacts the messages a hook prints, which may quote its payload.
//
// The binary reads the payload and finds the data dir and the server;
// this package decides where the payload goes.
package hookrecord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/term"
)

// Recorder records hook payloads into one data dir. Its fields are set
// once; Record may be called from one goroutine at a time.
type Recorder struct {
	// Spool is the data dir's spool directory.
	Spool string
	// MaxPayload is the largest payload taken, in bytes; a larger one is
	// refused as unusable.
	MaxPayload int
	// Timeout bounds how long Deliver may wait for the server before the
	// payload is spooled.
	Timeout time.Duration
	// Rules returns the data dir's redaction rules; its error (rules
	// that cannot be read) leaves the built-in rules in their place.
	Rules func() (*claude.Redactor, error)
	// Deliver sends one payload to the running server and returns once
	// the server has appended it; an error (no server, none answering
	// within ctx) has the payload spooled, unless api.IsInputError says
	// the server refused it as input.
	Deliver func(ctx context.Context, req api.HookRequest) error
	// Warn receives the line said when a payload is spooled because the
	// server did not take it: why, and, when serve holds its appends for
	// want of disk space (api.ErrHeld), that it goes in once the disk
	// frees (hooksock.HeldKept).
	Warn io.Writer
}

// Record records payload, one hook payload of an agent's (name is the
// command, "hook claude", that leads its errors): prepare checks it and
// returns what is spooled and sent (the payload, or a copy cut to the
// send cap), or the error of a payload that cannot be used. A usable
// payload goes straight to the server when nothing waits in the spool,
// else into the spool behind what waits; Record returns nil either way.
// An unusable one (prepare's error, or one the server refuses as input)
// is kept aside, redacted, in the spool's rejected folder, and the error,
// redacted, names where.
func (r Recorder) Record(ctx context.Context, name string, payload []byte, prepare func([]byte) ([]byte, error)) error {
	sp, err := claude.Open(r.Spool)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		// Nothing to record and nothing worth keeping: a hook run by hand
		// with no input, or an agent that closed stdin before writing.
		what := "empty"
		if len(payload) > 0 {
			what = fmt.Sprintf("%d bytes of white space", len(payload))
		}
		return fmt.Errorf("%s: no payload on standard input (%s): a hook reads the agent's event, one JSON object, from stdin; nothing recorded or kept", name, what)
	}
	var prepared []byte
	if len(payload) > r.MaxPayload {
		err = fmt.Errorf("payload over %d MiB refused", r.MaxPayload>>20)
	} else {
		prepared, err = prepare(payload)
	}
	// keepAside keeps an unusable payload (redacted) where a person can
	// look, out of the spool so it blocks nothing, with keep; the message
	// may quote the payload: it is redacted as the payload kept aside is.
	keepAside := func(id string, err error, keep func(*claude.Redactor) (string, error)) error {
		red, perr := r.Rules()
		if perr != nil {
			return fmt.Errorf("%s: %w (not kept: %v)", name, RedactErr(redact.Default(), err), perr)
		}
		kid, kerr := keep(red)
		err = RedactErr(red, err)
		if kerr != nil {
			return fmt.Errorf("%s: %w (not kept: %v)", name, err, kerr)
		}
		return fmt.Errorf("%s: %w (kept aside as %s)", name, err, filepath.Join(sp.Dir(), claude.RejectedDir, kid+".json"))
	}
	if err != nil {
		// Bad input: exit 1.
		return keepAside("", err, func(red *claude.Redactor) (string, error) { return sp.KeepAside(payload, err, red) })
	}
	// The agent process this hook runs under, for the reconciler to
	// watch; a hook that finds none (run by hand, /proc unreadable) is
	// recorded without one.
	host, _ := os.Hostname()
	agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	id := claude.NewSpoolID()
	// With nothing waiting in the spool, the payload goes straight to the
	// server: its append is as durable as the spool and costs none of the
	// spool's fsyncs. With entries waiting it must not overtake them, and
	// a hook does not drain them in the agent's path either: it spools its
	// own behind them and the server, which watches the spool, delivers.
	waiting, err := sp.HasPending()
	if err == nil && !waiting {
		err = r.Deliver(ctx, api.HookRequest{ID: id, Text: string(prepared), Process: agent})
		if err == nil {
			return nil
		}
		if api.IsInputError(err) {
			return keepAside(id, err, func(red *claude.Redactor) (string, error) { return id, sp.Reject(id, prepared, err, red) })
		}
	}
	// Under the id already sent, so a server that took it after all sees
	// the spooled copy as the same observation.
	if perr := sp.PutAs(id, prepared, agent); perr != nil {
		var served error
		if err != nil {
			served = RedactErr(r.redactor(), err)
		}
		return fmt.Errorf("%s: %w", name, hookspool.NotRecorded(served, perr))
	}
	if err != nil {
		// The payload is safe in the spool; the server delivers it later.
		// Its message may name the data dir, whose path may hold any byte.
		msg := RedactErr(r.redactor(), err).Error()
		if errors.Is(err, api.ErrHeld) {
			msg += "; " + hooksock.HeldKept // serve said why it did not take it
		}
		fmt.Fprintf(r.Warn, "logbook hook: kept in spool: %s\n", term.Field(msg))
	}
	return nil
}

// redactor returns r's rules, or the built-in ones when they cannot be
// read.
func (r Recorder) redactor() *claude.Redactor {
	if red, err := r.Rules(); err == nil {
		return red
	}
	return redact.Default()
}

// redactedError is an error whose message is redacted: a hook's message
// may quote its payload (a field's value in a refusal), and the payload
// is hostile. Errors.Is and As see the error it wraps.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactErr returns err with its message redacted by red
// (RedactMessage); errors.Is and errors.As see err through it. A nil err
// stays nil.
func RedactErr(red *claude.Redactor, err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, msg: RedactMessage(red, err.Error())}
}

// RedactMessage redacts a message the hook prints that may quote its
// payload: each Go-quoted span ("…", as %q writes a field's value) by
// red, the rules of the data dir, and the whole message by the built-in
// rules only, so a broad rule of the data dir's (one that matches a
// common word) leaves the message's own words readable.
func RedactMessage(red *claude.Redactor, msg string) string {
	msg = redact.Default().Redact(msg)
	var b strings.Builder
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				out := q
				if v, err := strconv.Unquote(q); err == nil {
					if r := red.Redact(v); r != v {
						out = strconv.Quote(r)
					}
				}
				b.WriteString(out)
				i += len(q) // past the span read, not the one written
				continue
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}
