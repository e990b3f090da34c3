package natslog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestAttest_CausesAndActorsAreTheirRoles: an event whose cause
// (attestation.Causes: each kind, and each event of kind system) or
// whose actor (attestation.Actors) only other roles' code appends —
// a writer's session.ended caused by system/restart or by the
// notifier, a worker's claiming the gate, a writer's by actor
// logbook-worker, a worker's command start by actor logbook-notify —
// is refused before it is sent, and published straight to the stream
// with the wrong role's signature (as anything holding keys/writer.key
// or keys/worker.key can) it is quarantined out-of-role by every reader.
// The same events signed by a role whose code appends them (serve for
// every cause, a writer for its own) stay attested.
func TestAttest_CausesAndActorsAreTheirRoles(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	writer := mustKey(t, "writer@h", attestation.RoleWriter)
	worker := mustKey(t, "worker@h", attestation.RoleWorker)
	s, admin, l := startSigning(t, serve, writer, worker)
	reg := events.NewRegistry()
	ctx := t.Context()
	keys := map[attestation.Role]*attestation.Key{attestation.RoleServe: serve, attestation.RoleWriter: writer, attestation.RoleWorker: worker}

	// Every row's cause, and a kind no row names (serve's alone).
	type form struct {
		name  string
		cause events.Cause
		actor string
		roles []attestation.Role // the roles that may append it
	}
	var forms []form
	for _, r := range attestation.Causes {
		ev := r.Event
		if ev == "" {
			ev = "anything"
		}
		forms = append(forms, form{name: "cause " + r.Kind + "/" + ev, cause: events.Cause{Kind: r.Kind, Event: ev, Ref: "r1"}, roles: r.Roles})
	}
	forms = append(forms,
		form{name: "cause system/unnamed", cause: events.Cause{Kind: "system", Event: "unnamed", Ref: "r1"}, roles: []attestation.Role{attestation.RoleServe}},
		form{name: "cause unknown", cause: events.Cause{Kind: "bogus", Event: "x", Ref: "r1"}, roles: []attestation.Role{attestation.RoleServe}})
	for actor, roles := range attestation.Actors {
		if !slices.Contains(roles, attestation.RoleAdmin) {
			forms = append(forms, form{name: "actor " + actor, cause: events.Cause{Kind: "cli", Event: "session.end", Ref: "r1"}, actor: actor, roles: roles})
		}
	}
	forms = append(forms, form{name: "actor admin", cause: events.Cause{Kind: "cli", Event: "session.end", Ref: "r1"}, actor: "admin", roles: nil})

	// A session a key started (cause cli, any but a worker's to append),
	// then its end with f's cause and actor.
	n := 0
	start := func(k *attestation.Key) (events.Aggregate, uint64) {
		n++
		a := session(fmt.Sprintf("s%d", n))
		l.SetSigner(k)
		return a, mustAppend(t, l, decision(reg, a, 0, 1, 1)).Last
	}
	end := func(a events.Aggregate, f form) events.Envelope {
		e := envelope(reg, a, 2, events.SessionEnded{From: events.PhaseWorking, Reason: "x"})
		c := f.cause
		e.Cause, e.Actor = &c, f.actor
		return e
	}

	attested := map[uint64]string{}
	forged := map[uint64]string{}
	for _, f := range forms {
		for _, role := range []attestation.Role{attestation.RoleServe, attestation.RoleWriter} {
			a, last := start(keys[role])
			e := end(a, f)
			allowed := slices.Contains(f.roles, role)
			app, err := l.Append(ctx, events.Batch{Agg: a, Expect: last, Events: []events.Envelope{e}})
			if allowed {
				if err != nil {
					t.Fatalf("%s appends the session end of %s: %v", role, f.name, err)
				}
				attested[app.Last] = string(role) + ": " + f.name
				continue
			}
			var re *RoleRefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "role "+string(role)) {
				t.Errorf("%s appends the session end of %s: %v, want a RoleRefusedError naming role %s", role, f.name, err, role)
			}
			if err == nil {
				forged[app.Last] = string(role) + ": " + f.name // stored: judged below
				continue
			}
			forged[forge(t, s.Conn(), e, last, keys[role], nil)] = string(role) + ": " + f.name
		}
		// A worker's own form of each: a command's start, which
		// WorkerPermits allows with cause worker/command.requested
		// naming it, here with f's cause and actor.
		if slices.Contains(f.roles, attestation.RoleWorker) {
			continue // the worker's own: WorkerPermits judges them (TestAttest_WorkerRole)
		}
		n++
		cmd := events.Aggregate{Kind: events.KindCommand, ID: fmt.Sprintf("c%d", n)}
		e := envelope(reg, cmd, 1, events.CommandStarted{Worker: "w1", Host: "h"})
		c := f.cause
		if f.actor != "" {
			c = events.Cause{Kind: attestation.CauseWorker, Event: "command.requested", Ref: cmd.ID}
		}
		e.Cause, e.Actor = &c, f.actor
		l.SetSigner(worker)
		app, err := l.Append(ctx, events.Batch{Agg: cmd, Events: []events.Envelope{e}})
		if !errors.Is(err, ErrRoleRefused) {
			t.Errorf("worker appends a command start of %s: %v, want refused", f.name, err)
		}
		if err == nil {
			forged[app.Last] = "worker: " + f.name
			continue
		}
		forged[forge(t, s.Conn(), e, 0, worker, nil)] = "worker: " + f.name
	}
	// The worker's own start, by its own actor, is attested.
	cmd := events.Aggregate{Kind: events.KindCommand, ID: "own"}
	own := envelope(reg, cmd, 1, events.CommandStarted{Worker: "w1", Host: "h"})
	own.Cause, own.Actor = &events.Cause{Kind: attestation.CauseWorker, Event: "command.requested", Ref: cmd.ID}, "logbook-worker"
	l.SetSigner(worker)
	attested[mustAppend(t, l, events.Batch{Agg: cmd, Events: []events.Envelope{own}}).Last] = "worker: its own start"
	if len(forged) < len(forms) {
		t.Fatalf("%d forgeries of %d forms", len(forged), len(forms))
	}

	l2 := signedLog(t, s, admin)
	seen := map[uint64]bool{}
	for r, err := range l2.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if what, bad := forged[r.Seq]; bad {
			t.Errorf("Read folded the forgery at seq %d (%s)", r.Seq, what)
		}
		if what, ok := attested[r.Seq]; ok {
			seen[r.Seq] = true
			if r.Signer.Status != string(attestation.Attested) {
				t.Errorf("seq %d (%s) read as %+v, want attested", r.Seq, what, r.Signer)
			}
		}
	}
	if len(seen) != len(attested) {
		t.Errorf("Read folded %d of the %d events their roles may append", len(seen), len(attested))
	}
	qs, nq := l2.Quarantined()
	if nq != uint64(len(forged)) {
		t.Errorf("quarantined %d, want the %d forgeries", nq, len(forged))
	}
	for _, q := range qs {
		what, ok := forged[q.Seq]
		if !ok || q.Verdict.Status != attestation.OutOfRole {
			t.Errorf("seq %d: %s (%s), want no quarantine", q.Seq, q.Verdict.Status, q.Verdict.Why)
			continue
		}
		role, _, _ := strings.Cut(what, ":")
		if !strings.Contains(q.Verdict.Why, "role "+role) {
			t.Errorf("seq %d (%s): out-of-role %q does not name role %s", q.Seq, what, q.Verdict.Why, role)
		}
	}
}
