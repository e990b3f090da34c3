// Package hookgate is the client side of a gated hook: it asks a running
// Logbook server's gate for the verdict on one Claude Code hook payload,
// within a budget, and fails closed. A payload the server did not take
// is kept in the hook spool with the verdict the hook answered on its
// own, for the server to record when it delivers the payload.
//
// The binary parses the hook's flags, finds the data dir and the
// server, and prints the verdict in Claude Code's contract; this
// package does the waiting and the asking.
package hookgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Margin is how much longer than its budget the hook waits for the
// server's answer (which decides timed_out at the budget).
const Margin = 5 * time.Second

// Server is how a hook reaches the Logbook server whose gate it asks.
type Server struct {
	URL  string        // the NATS URL
	Opts []nats.Option // the credentials' options; nil: none
	// Role is the role the hook connects as, "" when unknown; a server
	// that refuses it names it.
	Role string
	// Prefix is the API's subject prefix; "": api.AnyPrefix.
	Prefix string
}

// Asker asks a server's gate for gated hooks' verdicts. Its fields are
// set before the first Ask and not changed after; an Asker is used by
// one hook process at a time.
type Asker struct {
	// SpoolDir is the data dir's hook spool, where a payload the server
	// did not take is kept.
	SpoolDir string
	// MaxPayload is the most bytes of a payload asked about; a larger
	// one is refused, not kept.
	MaxPayload int
	// Budget is how long the gate may take to decide; the hook waits
	// Budget+Margin for the answer. 0: gate.DefaultBudget.
	Budget time.Duration
	// Server says how to reach the server, or why none can be asked
	// (no credentials, no server running): that error's words are the
	// reason of the deny, and the payload is kept in the spool.
	Server func() (Server, error)
	// Redact redacts a reason that may quote the payload before it is
	// kept beside it; nil: kept as it is.
	Redact func(msg string) string
	// Warnf reports what could not be kept (one line, no newline); nil:
	// not reported.
	Warnf func(format string, args ...any)
	// Message is an error's message as a person reads it, for a fault
	// Ask has no words of its own for; nil: err.Error().
	Message func(err error) string
}

// budget returns a.Budget, or gate.DefaultBudget when it is not set.
func (a *Asker) budget() time.Duration {
	if a.Budget <= 0 {
		return gate.DefaultBudget
	}
	return a.Budget
}

func (a *Asker) warnf(format string, args ...any) {
	if a.Warnf != nil {
		a.Warnf(format, args...)
	}
}

// Ask sends payload, one Claude Code hook payload of a gated event, to
// the server's gate, which records it and decides. With payloads waiting
// in the spool it must not overtake them: it spools its own behind them
// and waits (within the budget) for the server to deliver them before it
// asks. The error, when there is one, says in words the agent and the
// user read why no verdict came; the caller denies with them. A payload
// the server did not take is left in the spool, as the recording hook
// leaves it, with the deny as its local verdict.
func (a *Asker) Ask(ctx context.Context, payload []byte) (gate.Verdict, error) {
	budget := a.budget()
	if len(payload) > a.MaxPayload {
		return gate.Verdict{}, fmt.Errorf("payload over %d MiB refused", a.MaxPayload>>20)
	}
	prepared, err := claude.PrepareHook(payload)
	if err != nil {
		return gate.Verdict{}, fmt.Errorf("unusable hook payload: %w", err)
	}
	// A payload over claude.MaxHookSend is recorded cut: its whole tool
	// input goes beside it for the gate to judge, or, over
	// gate.MaxJudgedInput, the call is denied here, unjudged.
	input, err := gate.HookInput(payload)
	tooLarge, _ := errors.AsType[*gate.TooLargeError](err)
	if err != nil && tooLarge == nil {
		return gate.Verdict{}, fmt.Errorf("unusable hook payload: %w", err)
	}
	sum := gate.InputDigest([]byte(input)) // "": the payload is whole
	if tooLarge != nil {
		sum = tooLarge.Digest
	}
	sp, err := claude.Open(a.SpoolDir)
	if err != nil {
		return gate.Verdict{}, err
	}
	host, _ := os.Hostname()
	agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
	id := claude.NewSpoolID()
	spooled := false
	// failKept keeps the payload in the spool with the verdict the hook
	// answers for it on its own (gate.FailClosed with err's words), the
	// verdict first so a server draining the spool never takes the
	// payload without it; it records both when it delivers the payload.
	// A payload spooled before (behind waiting ones) gets its verdict
	// after: recorded if the server has not delivered it yet. The
	// verdict of a cut payload names the whole input's digest.
	//
	// When the spool takes neither, the deny's reason says the call is
	// not kept, rather than that it is.
	var spoolErr error // the spool's refusal of this payload, when it was spooled ahead
	failKept := func(err error) (gate.Verdict, error) {
		why := err.Error()
		if a.Redact != nil {
			why = a.Redact(why)
		}
		lv := gate.LocalVerdict(why, time.Now(), budget)
		lv.ArgsDigest = sum
		notKept := spoolErr
		if perr := sp.PutVerdict(id, lv); perr != nil {
			a.warnf("verdict not kept: %v", perr)
			notKept = cmp.Or(notKept, perr)
		}
		if !spooled {
			if perr := sp.PutAs(id, prepared, agent); perr != nil {
				a.warnf("not kept: %v", perr)
				notKept = cmp.Or(notKept, perr)
			}
		}
		if notKept != nil {
			err = fmt.Errorf("%s; the call is not kept: the spool took no write (%v)", strings.TrimSuffix(err.Error(), keptNote), notKept)
		}
		return gate.Verdict{}, err
	}
	if tooLarge != nil {
		// Not asked: the server would judge what it cannot read whole.
		return failKept(tooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, budget+Margin)
	defer cancel()
	srv, err := a.Server()
	if err != nil {
		return failKept(err)
	}
	// Credentials that may not ask the gate (a reader's) are refused by
	// the server at once: the refusal ends the wait, naming the role.
	d, handle := api.Watch(srv.Role)
	nc, err := natslog.Connect(srv.URL, append(srv.Opts, nats.Timeout(time.Second), nats.MaxReconnects(0), nats.NoReconnect(), nats.ErrorHandler(handle))...)
	if err != nil {
		return failKept(errors.New(a.Fault(err)))
	}
	d.Register(nc)
	defer api.Forget(nc)
	defer nc.Close()
	prefix := api.AnyPrefix
	if srv.Prefix != "" {
		prefix = srv.Prefix
	}
	req := gate.HookGateRequest{ID: id, Text: string(prepared), Input: input, Process: agent, BudgetMS: budget.Milliseconds()}
	if input != "" {
		// One NATS message carries the request: the whole input, its JSON
		// text escaped, beside the cut payload must fit it.
		if b, err := hooksock.Marshal(req); err == nil && int64(len(b)) > nc.MaxPayload() {
			return failKept(fmt.Errorf("the tool input is too large to judge (%d bytes; with the payload, a request of %d bytes, over the server's maximum payload of %d)", len(input), len(b), nc.MaxPayload()))
		}
	}
	if waiting, err := sp.HasPending(); err != nil || waiting {
		if err := sp.PutAs(id, prepared, agent); err != nil {
			a.warnf("not kept: %v", err)
			spoolErr = err
		}
		spooled = true
		mine := filepath.Join(sp.Dir(), id+".json")
		for {
			if _, err := os.Stat(mine); errors.Is(err, os.ErrNotExist) {
				break
			}
			select {
			case <-ctx.Done():
				return failKept(fmt.Errorf("the server did not take the spooled hooks before this one within the budget of %s", budget))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	var v gate.Verdict
	if err := api.Call(ctx, nc, prefix, gate.VerbGate, req, &v); err != nil {
		if !api.IsInputError(err) {
			return failKept(errors.New(a.Fault(err)))
		}
		return gate.Verdict{}, errors.New(a.Fault(err))
	}
	return v, nil
}

// keptNote ends the reason of a deny whose call is kept in the spool for
// serve to record.
const keptNote = "; the call is kept in the spool"

// Fault says why the server gave a gated hook no verdict, in words the
// agent and the user read (never the NATS client's own): err is what
// connecting or asking the server's gate failed with.
func (a *Asker) Fault(err error) string {
	const kept = keptNote
	var de *api.DeniedError
	if errors.As(err, &de) {
		// The role the server refused, and the credentials to use.
		return "the gate gave no verdict: " + de.Doing("ask the gate for a verdict").Error() + kept
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Sprintf("the gate gave no verdict: none came within the budget of %s", a.budget())
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionDraining):
		return "the gate gave no verdict: the Logbook server went away (it stopped or restarted) before it decided" + kept
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrNoResponders):
		return "the gate gave no verdict: the Logbook server named in the data dir's serve.json does not answer (it is not running)" + kept
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return "the gate gave no verdict: the Logbook server refused the hook's credentials (the data dir's creds.json, or --creds)" + kept
	case errors.Is(err, nats.ErrPermissionViolation):
		return "the gate gave no verdict: the hook's credentials may not ask the gate" + kept
	}
	var re *api.RemoteError
	if errors.As(err, &re) {
		return "the gate gave no verdict: " + re.Error()
	}
	msg := err.Error()
	if a.Message != nil {
		msg = a.Message(err)
	}
	if strings.Contains(msg, "nats: ") || strings.Contains(msg, "natslog: ") {
		return "the gate gave no verdict: the hook could not reach the Logbook server" + kept
	}
	return "the gate gave no verdict: " + msg
}
