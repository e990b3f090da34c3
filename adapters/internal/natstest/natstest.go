// Package natstest holds what tests of the NATS adapters (adapters/natslog,
// adapters/merkle) share about a server's answers to a client. Only tests
// import it; it imports no package of this module, so natslog's own tests
// can use it.
package natstest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Violations collects the errors a NATS server reports asynchronously to
// one connection, permission violations among them. Its zero value is
// ready; it is safe for concurrent use.
type Violations struct {
	mu   sync.Mutex
	errs []error
}

// Handler records err; it is a nats.ErrHandler, given to a connection as
// nats.ErrorHandler(v.Handler).
func (v *Violations) Handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err)
}

// Errs returns a copy of the errors reported so far, in order.
func (v *Violations) Errs() []error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.errs)
}

// Wait returns the reported permission violation (nats.ErrPermissionViolation)
// that names subject, in quotes as the server writes it, polling every
// 10 ms for at most within; nil when none came by then.
func (v *Violations) Wait(subject string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		for _, err := range v.Errs() {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}
