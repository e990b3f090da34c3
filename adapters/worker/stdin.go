package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// StdinSubject returns the core NATS subject on which worker takes stdin
// for command: logbook.worker.<worker>.stdin.<command>. It is outside the
// stream's lb.>, so what is sent there is never stored. command may be
// "*" (the worker's subscription).
func StdinSubject(worker, command string) string {
	return "logbook.worker." + worker + ".stdin." + command
}

// stdinRequest is the body of a stdin request.
type stdinRequest struct {
	Data     []byte `json:"data,omitempty"`     // the bytes to write
	Withhold bool   `json:"withhold,omitempty"` // record no SHA-256 of them
	EOF      bool   `json:"eof,omitempty"`      // close stdin after writing
}

// stdinReply is the worker's answer: how many bytes it wrote, or why not.
type stdinReply struct {
	Bytes  int    `json:"bytes"`
	Error  string `json:"error,omitempty"`
	Status string `json:"status,omitempty"` // the command's status when it has ended
}

// EndedError reports an operation on a command that has ended: its
// process is gone, so there is nothing to write to or stop. It wraps
// events.ErrRejected.
type EndedError struct {
	Op     string // "stdin", "stop", …
	ID     string // the command id
	Status string // its status: exited, abandoned, refused or evicted
}

// Error returns e.g. "stdin: command 01J… has exited".
func (e *EndedError) Error() string {
	return fmt.Sprintf("%s: command %s %s", e.Op, e.ID, endedPhrase(e.Status))
}

// Unwrap returns events.ErrRejected.
func (e *EndedError) Unwrap() error { return events.ErrRejected }

// endedPhrase says what a terminal status means.
func endedPhrase(status string) string {
	switch status {
	case command.StatusExited:
		return "has exited"
	case command.StatusAbandoned:
		return "was abandoned: its worker died"
	case command.StatusRefused:
		return "was refused and never ran"
	case command.StatusEvicted:
		return "was evicted before it started"
	}
	return "has ended (" + status + ")"
}

// onStdin answers one stdin request, on a goroutine of its own (a write
// blocks while the command does not read).
func (w *Worker) onStdin(m *nats.Msg) {
	id := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	w.bg.Go(func() {
		r := w.writeStdin(id, m.Data)
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	})
}

// writeStdin writes a stdin request's bytes to command id's process and
// records the write.
func (w *Worker) writeStdin(id string, body []byte) stdinReply {
	var req stdinRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return stdinReply{Error: fmt.Sprintf("stdin: command %s: %v: bad request: %v", id, events.ErrMalformed, err)}
	}
	w.mu.Lock()
	j := w.running[id]
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultAppendTimeout)
	defer cancel()
	// command.started lands before the process starts: a write that comes
	// in between waits for the process.
	for j != nil && !j.live.Load() && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		w.mu.Lock()
		j = w.running[id]
		w.mu.Unlock()
	}
	if j == nil || !j.live.Load() {
		st, err := w.load(ctx, id)
		if err == nil && st.Ended() {
			return stdinReply{Error: (&EndedError{Op: "stdin", ID: id, Status: st.Status}).Error(), Status: st.Status}
		}
		return stdinReply{Error: fmt.Sprintf("stdin: command %s does not run on worker %s", id, w.id.ID)}
	}
	p := j.process()
	j.stdin.Lock()
	defer j.stdin.Unlock()
	n := 0
	if len(req.Data) > 0 {
		var err error
		n, err = p.WriteStdin(req.Data)
		if errors.Is(err, sandbox.ErrExited) {
			return stdinReply{Bytes: n, Error: (&EndedError{Op: "stdin", ID: id, Status: command.StatusExited}).Error(), Status: command.StatusExited}
		}
		if err != nil {
			return stdinReply{Bytes: n, Error: fmt.Sprintf("stdin: command %s: write: %v", id, err)}
		}
	}
	if req.EOF {
		if err := p.CloseStdin(); err != nil {
			return stdinReply{Bytes: n, Error: fmt.Sprintf("stdin: command %s: close: %v", id, err)}
		}
	}
	if n == 0 {
		return stdinReply{}
	}
	sum := ""
	if !req.Withhold {
		h := sha256.Sum256(req.Data[:n])
		sum = hex.EncodeToString(h[:])
	}
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	cause := events.Cause{Kind: "worker", Event: "stdin", Detail: w.id.ID, Ref: id}
	_, _, err := w.cmds.Execute(ctx, agg, func(s command.State) (events.Decision, error) {
		return command.Decide(s, command.WriteStdin{Bytes: n, SHA256: sum, At: w.now(), Cause: cause})
	})
	if err != nil {
		// The bytes were written; only their record failed.
		w.log.Warn("record stdin", "command", id, "bytes", n, "err", err)
		return stdinReply{Bytes: n, Error: fmt.Sprintf("stdin: command %s: %d bytes written but not recorded: %v", id, n, err)}
	}
	return stdinReply{Bytes: n}
}
