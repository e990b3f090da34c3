package api

import (
	"context"
	"fmt"
)

// HooksSettled returns nil once every hook payload acknowledged to its
// sender before the call is in the log and the projection has applied
// the log as of then: what a decision on a session from what was not
// observed (its agent process gone, nothing heard for a while) waits
// for, so that it never overtakes a hook the agent sent before it went.
//
// A hook is acknowledged in one of three ways, and each is looked at:
// one the server's Intake took is waited for (CaughtUp: at most
// IntakeWait, or until ctx ends); one the hook verb took is in the log
// when it is answered; one kept in the spool is only delivered by the
// spool's drain (DrainSpool), so any entry pending there (not set aside
// in rejected/) fails the call at once rather than wait for the drain.
// Errors say which hooks are not in the log yet, or are the log's and
// the projection's (CaughtUp); the caller decides nothing on them and
// asks again later.
func (s *Service) HooksSettled(ctx context.Context) error {
	// The spool first: an entry delivered since the call is in the log
	// (the drain removes it once its batch is), and one put since was
	// acknowledged after the call.
	waiting, err := s.Spool.HasPending()
	if err != nil {
		return err
	}
	if waiting {
		return fmt.Errorf("hook payloads wait to be delivered from the spool %s", s.Spool.Dir())
	}
	return s.CaughtUp(ctx)
}
