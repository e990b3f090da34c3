package natscluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// judged is `replay --verify --json` on a host of a log that holds
// quarantined events (it exits 1 for them).
type judged struct {
	Seq        uint64 `json:"seq"`
	LiveHash   string `json:"live_hash"`
	ReplayHash string `json:"replay_hash"`
	Equal      bool   `json:"equal"`
	Unattested []struct {
		Seq    uint64 `json:"seq"`
		Status string `json:"status"`
	} `json:"unattested"`
}

// judgedAt runs replay --verify on h until its live checkpoint has
// reached seq (90 s at most) and returns the report, exit 0 or 1.
func judgedAt(t *testing.T, h *host, seq uint64) judged {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, stderr, err := h.cli("--json", "replay", "--verify")
		var j judged
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) && ee.ExitCode() == 1 {
			err = json.Unmarshal([]byte(out), &j)
		}
		if err == nil && j.Seq >= seq {
			if !j.Equal {
				t.Errorf("%s: live projection differs from a fresh replay: %+v", h.name, j)
			}
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replay --verify at seq %d, want %d: %v\n%s%s", h.name, j.Seq, seq, err, out, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// registerHost registers, with the admin's data dir, the keys h signs
// with in roles (as `logbook keys show` prints them on h); the command
// must say want.
func registerHost(t *testing.T, e *env, admin, want string, h *host, roles ...string) {
	t.Helper()
	out, stderr, err := h.cli("--json", "keys", "show")
	if err != nil {
		t.Fatalf("%s keys show: %v\n%s", h.name, err, stderr)
	}
	var keys []struct{ Role, Public, Principal string }
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatalf("%s keys show: %v\n%s", h.name, err, out)
	}
	for _, k := range keys {
		if !slices.Contains(roles, k.Role) {
			continue
		}
		out, stderr, err := e.as("admin", "--data", admin, "keys", "register", "--role", k.Role, "--principal", k.Principal+" on "+h.name, k.Public)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("register %s's %s key: %v\n%s%s", h.name, k.Role, err, out, stderr)
		}
	}
}

// forge publishes an event of p (with cause, when given) on agg's
// subject with a raw NATS connection, signed with key when not nil, and
// returns its sequence.
func forge(t *testing.T, nc *nats.Conn, reg *events.Registry, agg events.Aggregate, p events.Payload, key *attestation.Key, cause ...*events.Cause) uint64 {
	t.Helper()
	ev := reg.New(p)
	ev.ID, ev.Agg, ev.Ver, ev.At = ulid.Make(), agg, 1, time.Now().UTC().Truncate(time.Microsecond)
	for _, c := range cause {
		ev.Cause = c
	}
	ev.Actor = "forger"
	data, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: agg.Subject(), Header: nats.Header{}, Data: data}
	m.Header.Set(natslog.HeaderType, ev.Type)
	if key != nil {
		id, sig := key.Sign(m.Subject, "", m.Data)
		m.Header.Set(attestation.HeaderKey, id)
		m.Header.Set(attestation.HeaderSig, sig)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(t.Context(), m)
	if err != nil {
		t.Fatalf("forge %s on %s: %v", ev.Type, agg, err)
	}
	return ack.Sequence
}

// Signing on a cluster of one's own: the admin key is made on an admin
// host; each host pins its public part and its keys are registered on
// the log by the admin. A host whose key is not registered refuses to
// serve, naming the command that registers it. Two writers, a worker and
// a follower then sign what they append; forgeries published straight to
// the stream with a raw NATS client (unsigned, signed by a key the
// forger registered for itself, signed by a registered writer key out of
// its role) are quarantined on every host alike: one state hash at one
// sequence everywhere, and the same quarantined sequences. The writer's
// checkpoints over the signed log are co-signed by the follower, and
// verify agrees with them, yet names the forgeries the log holds.
func TestSigningAcrossHosts(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	adminDir := filepath.Join(e.dir, "admin")
	out, stderr, err := e.logbook(t.Context(), "--data", adminDir, "--json", "keys", "admin")
	if err != nil {
		t.Fatalf("keys admin: %v\n%s", err, stderr)
	}
	var adm struct{ ID, Public string }
	if err := json.Unmarshal([]byte(out), &adm); err != nil {
		t.Fatal(err)
	}
	a := e.newHost("writer-a", "writer", "serve", "--checkpoint-every", "1", "--checkpoint-interval", "1s")
	a.url = e.c.Nodes[0].URL()
	b := e.newHost("writer-b", "writer", "serve")
	b.url = e.c.Nodes[1].URL()
	r := e.newHost("reader-c", "reader", "serve", "--role", "reader")
	r.url = e.c.Nodes[2].URL()
	w := e.newHost("worker-d", "worker", "worker")
	for _, h := range []*host{a, b, r, w} {
		if out, stderr, err := h.cli("keys", "pin", adm.Public); err != nil || !strings.Contains(out, "pinned admin key "+adm.ID) {
			t.Fatalf("%s keys pin: %v\n%s%s", h.name, err, out, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(b.data, "keys", "admin.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a host that pins holds the admin key: %v", err)
	}

	// Before the admin registers it, a host's serve refuses to start.
	_, stderr, err = e.logbook(t.Context(), "--data", b.data, "--nats-url", b.url, "--creds", e.credsFile("serve"), "serve")
	if err == nil || !strings.Contains(stderr, "is not registered on the log") || !strings.Contains(stderr, "logbook keys register") {
		t.Fatalf("serve with an unregistered key: %v, want a refusal naming keys register:\n%s", err, stderr)
	}

	registerHost(t, e, adminDir, "registered key", a, "serve", "writer")
	registerHost(t, e, adminDir, "registered key", b, "serve", "writer")
	registerHost(t, e, adminDir, "registered key", w, "worker")
	// Registering again is no new event.
	before := e.lastSeq()
	registerHost(t, e, adminDir, "registered already", a, "serve")
	if after := e.lastSeq(); after != before {
		t.Fatalf("a second registration moved the log from %d to %d", before, after)
	}

	a.start()
	ck, stderr, err := a.cli("--json", "checkpoint", "key")
	if err != nil {
		t.Fatalf("checkpoint key: %v\n%s", err, stderr)
	}
	var cks struct{ Checkpoint, Witness string }
	if err := json.Unmarshal([]byte(ck), &cks); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := r.cli("checkpoint", "trust", cks.Checkpoint); err != nil {
		t.Fatalf("checkpoint trust: %v\n%s", err, stderr)
	}
	b.start()
	r.start()
	w.start()
	for _, h := range []*host{a, b} {
		if !strings.Contains(h.output(), "signing with key") {
			t.Fatalf("%s does not say it signs:\n%s", h.name, h.output())
		}
	}
	startSessions(t, a, []string{"sig-1"}, ws)
	startSessions(t, b, []string{"sig-2"}, ws)
	// --wait as the other tests on the cluster give it: exec's default
	// 10 s is a wait, not a bound this test may assume a command on a
	// loaded three-node cluster keeps to.
	out, stderr, err = b.cli("exec", "--session", "sig-2", "--mode", "workspace_write", "--workspace", ws, "--wait", "50s", "--", "sh", "-c", "echo signed-by-a-worker")
	if err != nil || !strings.Contains(out, "signed-by-a-worker") {
		t.Fatalf("exec: %v\n%s%s", err, out, stderr)
	}

	// Forgeries with the writer's NATS credentials.
	reg := events.NewRegistry()
	nc := e.connect("writer")
	mallory, err := attestation.NewKey("mallory@nowhere", attestation.RoleServe)
	if err != nil {
		t.Fatal(err)
	}
	wkey, err := attestation.ReadKey(filepath.Join(a.data, "keys", "writer.key"))
	if err != nil {
		t.Fatal(err)
	}
	verdict := func(sess string) (events.Aggregate, events.Payload) {
		return events.Aggregate{Kind: events.KindSession, ID: sess}, events.ReviewDecided{ReviewID: "r-" + sess, Verdict: events.VerdictAllow,
			Outcome: events.ReviewApproved, DecidedBy: &events.DecidedBy{Kind: events.DecidedByUser, Name: "alice@example.com"}, Reason: "forged"}
	}
	want := map[uint64]string{}
	agg, p := verdict("forged-unsigned")
	want[forge(t, nc, reg, agg, p, nil)] = string(attestation.Unsigned)
	want[forge(t, nc, reg, events.Aggregate{Kind: events.KindKey, ID: mallory.ID},
		events.KeyRegistered{Public: mallory.PublicText(), Principal: mallory.Principal, Role: string(attestation.RoleServe)}, mallory)] = string(attestation.UnknownKey)
	agg, p = verdict("forged-mallory")
	want[forge(t, nc, reg, agg, p, mallory)] = string(attestation.UnknownKey)
	agg, p = verdict("forged-writer")
	want[forge(t, nc, reg, agg, p, wkey, &events.Cause{Kind: events.CauseGate, Event: "answer", Ref: ulid.Make().String()})] = string(attestation.OutOfRole)
	// Signed by a registered writer key, but no valid event (a verdict
	// without its cause): no role may append what does not decode.
	agg, p = verdict("forged-junk")
	want[forge(t, nc, reg, agg, p, wkey)] = string(attestation.OutOfRole)
	startSessions(t, b, []string{"sig-3"}, ws) // an honest append after them

	// Every host quarantines the same events and reaches one state.
	last := e.lastSeq()
	var first judged
	for i, h := range []*host{a, b, r} {
		j := judgedAt(t, h, last)
		got := map[uint64]string{}
		for _, u := range j.Unattested {
			got[u.Seq] = u.Status
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s quarantined %v, want %v", h.name, got, want)
		}
		t.Logf("%s: seq %d live %s", h.name, j.Seq, j.LiveHash)
		if i == 0 {
			first = j
		} else if j.Seq != first.Seq || j.LiveHash != first.LiveHash {
			t.Errorf("%s at seq %d hash %s; writer-a at seq %d hash %s", h.name, j.Seq, j.LiveHash, first.Seq, first.LiveHash)
		}
	}
	out, _, _ = b.cli("sessions")
	if strings.Contains(out, "forged-") || !strings.Contains(out, "sig-1") || !strings.Contains(out, "sig-3") {
		t.Errorf("writer-b's sessions: want sig-1..3 and no forged one:\n%s", out)
	}

	// The follower co-signs the writer's checkpoints over the signed
	// log; verify on the writer, trusting the follower, agrees.
	st := witnessState(t, r, fmt.Sprintf("cosignature at size %d", last), func(s merkle.WitnessState) bool {
		return s.Last != nil && s.Last.Size >= int64(last)
	})
	if st.Refused != 0 {
		t.Fatalf("refused an honest checkpoint: %s", st.Refusal)
	}
	rk, stderr, err := r.cli("--json", "checkpoint", "key")
	if err != nil {
		t.Fatalf("checkpoint key: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal([]byte(rk), &cks); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := a.cli("checkpoint", "trust", cks.Witness); err != nil {
		t.Fatalf("checkpoint trust: %v\n%s", err, stderr)
	}
	// The stored log agrees with the witnessed checkpoints; it holds the
	// forgeries all the same, so verify is not ok: it names the first
	// and exits 1.
	out, stderr, err = a.cli("verify")
	firstForged := slices.Min(slices.Collect(maps.Keys(want)))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(out, " 0 of them witnessed") || !strings.Contains(out, "the stored log agrees with every trusted checkpoint") ||
		!strings.Contains(out, fmt.Sprintf("NOT OK: %d events are in the log unattested", len(want))) || !strings.Contains(out, fmt.Sprintf("the first at seq %d:", firstForged)) {
		t.Fatalf("verify on the writer: %v, want exit 1, the checkpoints witnessed and agreed with, NOT OK naming %d unattested events, the first seq %d\n%s%s", err, len(want), firstForged, out, stderr)
	}
}
