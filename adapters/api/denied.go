package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"

	"github.com/nats-io/nats.go"
)

// A server refuses a publish its user's permissions do not allow without
// an answer to the publish itself: it reports the permissions violation
// asynchronously on the connection (nats.ErrPermissionViolation, text
// `Permissions Violation for Publish to "SUBJECT"`), and a request on
// that subject would only time out. Denials catches these reports so a
// command waiting on such a subject fails at once, saying which role was
// refused what.

// DeniedError is a permissions violation the server reported for a
// publish or subscription of this client.
type DeniedError struct {
	role    string // the role of the connection's credentials; "" when unknown
	op      string // "publish" or "subscribe"
	subject string // the subject refused
	action  string // what the command tried, in words ("end sessions"); "" when unknown
}

func (e *DeniedError) Error() string {
	who := "these credentials"
	if e.role != "" {
		who = "the " + e.role + " role"
	}
	what := e.action
	if what == "" {
		what = "do this"
	}
	ing := "publishing to"
	if e.op == "subscribe" {
		ing = "subscribing to"
	}
	return fmt.Sprintf("%s may not %s (permission denied %s %s); use writer credentials", who, what, ing, e.subject)
}

// Unwrap returns nats.ErrPermissionViolation.
func (e *DeniedError) Unwrap() error { return nats.ErrPermissionViolation }

// Doing returns a copy of e naming action.
func (e *DeniedError) Doing(action string) *DeniedError {
	c := *e
	c.action = action
	return &c
}

var violationRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)Permissions Violation for (Publish|Subscription) to "([^"]+)"`)
})

// denialWaiter is a wait that ends, with cancel's cause, on a violation
// match accepts.
type denialWaiter struct {
	match  func(op, subject string) bool
	cancel context.CancelCauseFunc
}

// Denials receives the asynchronous errors of one connection.
type Denials struct {
	role    string
	mu      sync.Mutex
	waiters map[*denialWaiter]struct{}
}

// connDenials maps a *nats.Conn given to Register to its *Denials.
var connDenials sync.Map

// Watch returns the nats.ErrHandler to give the connection about to be
// opened with the credentials of role ("" when unknown); once it is open,
// Register(nc) makes WatchDenied on nc see its refusals.
func Watch(role string) (*Denials, nats.ErrHandler) {
	d := &Denials{role: role}
	return d, d.handle
}

// Register makes WatchDenied on nc see the refusals d receives.
func (d *Denials) Register(nc *nats.Conn) { connDenials.Store(nc, d) }

// Forget undoes Register for nc, when it closes.
func Forget(nc *nats.Conn) { connDenials.Delete(nc) }

// handle is the connection's nats.ErrHandler: a permissions violation
// ends the waits it concerns; other errors are written to stderr as
// nats.go's default handler does.
func (d *Denials) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		fmt.Fprintf(os.Stderr, "logbook: %v\n", err)
		return
	}
	m := violationRe().FindStringSubmatch(err.Error())
	if m == nil {
		fmt.Fprintf(os.Stderr, "logbook: %v\n", err)
		return
	}
	op := "publish"
	if m[1] != "Publish" && m[1] != "publish" {
		op = "subscribe"
	}
	de := &DeniedError{role: d.role, op: op, subject: m[2]}
	d.mu.Lock()
	defer d.mu.Unlock()
	for w := range d.waiters {
		if w.match(op, de.subject) {
			w.cancel(de)
		}
	}
}

// WatchDenied returns a context derived from ctx that ends, with a
// *DeniedError as its cause (see DeniedCause), when the server reports a
// permissions violation on nc that match accepts. stop releases it. On a
// connection not registered it only derives ctx.
func WatchDenied(ctx context.Context, nc *nats.Conn, match func(op, subject string) bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	v, ok := connDenials.Load(nc)
	if !ok {
		return ctx, func() { cancel(nil) }
	}
	d := v.(*Denials)
	w := &denialWaiter{match: match, cancel: cancel}
	d.mu.Lock()
	if d.waiters == nil {
		d.waiters = map[*denialWaiter]struct{}{}
	}
	d.waiters[w] = struct{}{}
	d.mu.Unlock()
	return ctx, func() {
		d.mu.Lock()
		delete(d.waiters, w)
		d.mu.Unlock()
		cancel(nil)
	}
}

// DeniedCause returns the violation that ended ctx, or nil.
func DeniedCause(ctx context.Context) *DeniedError {
	var de *DeniedError
	if errors.As(context.Cause(ctx), &de) {
		return de
	}
	return nil
}

// AnyPublish matches every refused publish.
func AnyPublish(op, _ string) bool { return op == "publish" }

// VerbAction names, for a refusal, what an API verb does.
func VerbAction(verb string) string {
	switch verb {
	case VerbSessionEnd:
		return "end sessions"
	case VerbSessionAbandon:
		return "abandon entries of sessions"
	case VerbHook:
		return "send hook events"
	}
	return "call the API's " + verb
}
