package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/events"
)

// Caller calls a verb of the server's API: req is sent as JSON and the
// answer decoded into resp (api.Caller has this shape).
type Caller func(ctx context.Context, verb string, req, resp any) error

// Elevate asks the gate (VerbGateRequest through call) to let command id
// of req's session, argv run in workspace with working directory cwd,
// run full_access for reason, and returns the review whose allow grants
// it. A call that fails is an error "exec --elevate: …"; a verdict other
// than an allow granting full_access (outside auto mode, a deny) is one
// wrapping events.ErrRejected that says who decided and what it means
// (Explain).
func Elevate(ctx context.Context, call Caller, session, id string, argv []string, workspace, cwd, reason string) (string, error) {
	gr, err := ElevateRequest(session, id, argv, workspace, cwd, reason, ulid.Make().String())
	if err != nil {
		return "", err
	}
	var v Verdict
	if err := call(ctx, VerbGateRequest, gr, &v); err != nil {
		return "", fmt.Errorf("exec --elevate: %w", err)
	}
	if v.Decision != DecideAllow || v.Grant != events.ModeFullAccess {
		return "", fmt.Errorf("exec --elevate: %w: %s", events.ErrRejected, Explain(v))
	}
	return v.ReviewID, nil
}

// AskStdin asks the gate (VerbGateRequest through call) about input
// data for command id of session: in a session in auto mode, or where a
// policy rule for "stdin" speaks, the input is reviewed first; it is
// never elevated. The text goes to the gate (and a reviewer program) but
// not into the log, unless secret not even to them (StdinRequest). While
// the review is open, waiting is told once, from another goroutine, the
// review's id and how long it may take ("" when the server's own
// budget; AwaitOpen watches VerbReviews for it); AskStdin returns after
// that goroutine. A call that fails is an error "command stdin: the gate
// gave no verdict: …"; a deny is one wrapping events.ErrRejected.
func AskStdin(ctx context.Context, call Caller, session, id string, data []byte, secret bool, waiting func(rid string, budget time.Duration)) error {
	req, err := StdinRequest(session, id, data, secret, ulid.Make().String())
	if err != nil {
		return err
	}
	// A request without an id is reviewed, if at all, under the id its
	// ref gives.
	rid := claude.PermissionID(req.Ref)
	done := make(chan struct{})
	announced := make(chan struct{})
	go func() {
		defer close(announced)
		list := func(ctx context.Context) (ReviewsReply, error) {
			var open ReviewsReply
			err := call(ctx, VerbReviews, ReviewsRequest{}, &open)
			return open, err
		}
		r, ok := AwaitOpen(ctx, list, session, rid, done)
		if !ok {
			return
		}
		select {
		case <-done:
			return // answered meanwhile: nothing waits any more
		default:
		}
		waiting(rid, time.Duration(r.BudgetMS)*time.Millisecond)
	}()
	var v Verdict
	err = call(ctx, VerbGateRequest, req, &v)
	close(done)
	<-announced
	if err != nil {
		return fmt.Errorf("command stdin: the gate gave no verdict: %w", err)
	}
	if v.Decision == DecideDeny {
		return fmt.Errorf("command stdin: %w: %s", events.ErrRejected, Explain(v))
	}
	return nil
}
