package notify_test

import (
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/events"
)

// What the notifier appends, its cause and its actor, is serve's alone
// by the role rule (attestation.Causes, attestation.Actors): serve runs
// the notifier.
func TestNotifierCauseAndActorAreServes(t *testing.T) {
	t.Parallel()
	c := &events.Cause{Kind: notify.CauseKind, Event: "review.requested", Ref: "r"}
	if got := attestation.CauseRoles(c); !slices.Equal(got, []attestation.Role{attestation.RoleServe}) {
		t.Errorf("cause kind %s: roles %v, want serve alone", notify.CauseKind, got)
	}
	if got := attestation.Actors[notify.Actor]; !slices.Equal(got, []attestation.Role{attestation.RoleServe}) {
		t.Errorf("actor %s: roles %v, want serve alone", notify.Actor, got)
	}
}
