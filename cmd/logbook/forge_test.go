package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// cliExit runs the CLI and returns its stdout, stderr and exit code.
func cliExit(t *testing.T, data string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := runCLIAgain(t.Context(), append([]string{"--data", data}, args...), &out, &errb)
	code := 0
	if err != nil {
		code = 1
		if ee, ok := errors.AsType[*exitError](err); ok {
			code = ee.code
		}
		fmt.Fprintf(&errb, "%v\n", err)
	}
	return out.String(), errb.String(), code
}

// connectAs connects to the data dir's serve with the data dir's
// credentials of role, as anything running as the user can.
func connectAs(t *testing.T, dd dataDir, role natslog.Role) (*natslog.Log, *nats.Conn) {
	t.Helper()
	c, err := dd.dir().RoleCredentials(role)
	if err != nil {
		t.Fatal(err)
	}
	si, ok := dd.readServeInfo()
	if !ok {
		t.Fatal("no serve.json")
	}
	nc, err := natslog.Connect(si.URL, nats.UserInfo(c.User, c.Password), natslog.InboxOption(role))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return natslogtest.Open(t, nc), nc
}

// TestForgedVerdict_Quarantined forges the verdict a gated hook waits
// for on a `git push` review: a review.decided by a person, published
// straight to the stream with the expected-sequence check, once with the
// worker's credentials (unsigned) and once with the writer's credentials
// signed by the data dir's writer key (whose role may not decide). The
// hook does not take either: it keeps waiting and answers as for no
// verdict (timed out, deny). audit shows both as unattested with who
// appended them, /metrics counts them, replay --verify exits 1 naming
// their sequences, and replay --rederive reports them.
func TestForgedVerdict_Quarantined(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	addr := freeLoopbackPort(t)
	r := newGateRig(t, "f0a9ed00-0000-4000-8000-00000000f0a9", map[string]string{
		"policy.toml": "review = [\"Bash(git push:*)\"]\n",
	}, "--http", addr)
	dd := dataDir(r.data)
	answered := make(chan string, 1)
	go func() {
		out, _ := r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "p1", "tool_input": map[string]any{"command": "git push origin main"}})
		answered <- out
	}()
	worker, wnc := connectAs(t, dd, natslog.RoleWorker)
	_, rnc := connectAs(t, dd, natslog.RoleWriter)
	agg := events.Aggregate{Kind: events.KindSession, ID: r.sid}
	var review string
	var last, ver uint64
	for deadline := time.Now().Add(20 * time.Second); review == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no review.requested for the push")
		}
		recs, l, err := worker.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rq, ok := rec.Data.(events.ReviewRequested); ok {
				review, last, ver = rq.ReviewID, l, recs[len(recs)-1].Ver
			}
		}
	}
	wkey, err := dd.principalKey("writer.key", attestation.RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	var forged []uint64
	for _, f := range []struct {
		nc  *nats.Conn
		key *attestation.Key
	}{{wnc, nil}, {rnc, wkey}} {
		e := newEvent(agg, ver+1, time.Time{}, events.CauseGate, "answer", events.ReviewDecided{ReviewID: review, Verdict: events.VerdictAllow, Outcome: events.ReviewApproved,
			DecidedBy: &events.DecidedBy{Kind: events.DecidedByUser, Name: "alice@example.com"}, Reason: "looks fine"})
		e.Actor = "person:alice@example.com"
		m := eventMsg(t, e, last)
		m.Header.Set(natslog.HeaderType, e.Type)
		if f.key != nil {
			id, sig := f.key.Sign(m.Subject, m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), m.Data)
			m.Header.Set(attestation.HeaderKey, id)
			m.Header.Set(attestation.HeaderSig, sig)
		}
		ack := publish(t, f.nc, m)
		forged = append(forged, ack.Sequence)
		last = ack.Sequence
	}

	out := <-answered
	if strings.Contains(out, `"permissionDecision":"allow"`) || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Fatalf("the hook answered %s; want the deny of a review with no verdict", out)
	}
	audit := cli(t, r.data, "audit", r.sid)
	for i, seq := range forged {
		line := ""
		for l := range strings.Lines(audit) {
			if strings.HasPrefix(l, fmt.Sprintf("#%d ", seq)) {
				line = l
			}
		}
		want := []string{"UNATTESTED", "unsigned"}
		if i == 1 {
			want = []string{"UNATTESTED", "out-of-role", wkey.Principal, wkey.ID}
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("audit line of forged seq %d %q lacks %q:\n%s", seq, line, w, audit)
			}
		}
	}
	if !strings.Contains(audit, "timed_out") {
		t.Errorf("audit shows no timeout verdict:\n%s", audit)
	}
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(metrics, "logbook_events_quarantined_total 2"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics does not count 2 quarantined events:\n%s", metrics)
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
	}
	vout, verr, code := cliExit(t, r.data, "replay", "--verify")
	if code != 1 {
		t.Errorf("replay --verify exit %d, want 1:\n%s%s", code, vout, verr)
	}
	for _, seq := range forged {
		if !strings.Contains(vout, fmt.Sprintf("seq %d", seq)) {
			t.Errorf("replay --verify does not name seq %d:\n%s%s", seq, vout, verr)
		}
	}
	rout, rerr, code := cliExit(t, r.data, "replay", "--rederive", "--session", r.sid)
	if code != 1 || !strings.Contains(rout, fmt.Sprintf("seq %d", forged[0])) {
		t.Errorf("replay --rederive exit %d, want 1 naming seq %d:\n%s%s", code, forged[0], rout, rerr)
	}
}

// TestForgedReconcilerEnd_Quarantined forges, as anything that reads the
// data dir can, the reconciler's end of a live session: a session.ended
// caused by the reconciler (cause reconciler/tick, actor
// logbook-reconciler, reason agent_gone), published straight to the
// stream with the writer's credentials and signed by keys/writer.key.
// Only serve decides what its reconciler found: the session is not
// ended, audit shows the end UNATTESTED out-of-role with who appended
// it, replay --rederive exits 1 naming it, and verify, which said ok of
// the log before, says NOT OK naming it (seq, type, subject, why) and
// exits 1.
func TestForgedReconcilerEnd_Quarantined(t *testing.T) {
	t.Parallel()
	// A checkpoint at least every second: the verify before the forgery
	// waits for serve's first one, not the default 10 s.
	r := newGateRig(t, "f0a9ed00-0000-4000-8000-00000000f0d1", nil, "--checkpoint-interval", "1s")
	dd := dataDir(r.data)
	// Before the forgery the log is ok, once serve stored the hashes of
	// what it appended.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, errOut, code := cliExit(t, r.data, "verify")
		if code == 0 && strings.Contains(out, "ok: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify of the log before the forgery: exit %d:\n%s%s", code, out, errOut)
		}
	}
	writer, wnc := connectAs(t, dd, natslog.RoleWriter)
	agg := events.Aggregate{Kind: events.KindSession, ID: r.sid}
	recs, last, err := writer.Load(t.Context(), agg)
	if err != nil || len(recs) == 0 {
		t.Fatalf("Load(%s) = %d records, %v", agg, len(recs), err)
	}
	wkey, err := dd.principalKey("writer.key", attestation.RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent(agg, recs[len(recs)-1].Ver+1, time.Time{}, "reconciler", "tick",
		events.SessionEnded{From: events.PhaseReady, Reason: "agent_gone", Evidence: "pid 4242 is gone"})
	e.Cause.Detail, e.Actor = "agent_gone", "logbook-reconciler"
	m := eventMsg(t, e, last)
	m.Header.Set(natslog.HeaderType, e.Type)
	id, sig := wkey.Sign(m.Subject, m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), m.Data)
	m.Header.Set(attestation.HeaderKey, id)
	m.Header.Set(attestation.HeaderSig, sig)
	seq := publish(t, wnc, m).Sequence

	out, errOut, code := cliExit(t, r.data, "audit", r.sid)
	if line := auditLine(out, seq); code != 0 || !strings.Contains(line, "UNATTESTED (out-of-role)") || !strings.Contains(line, wkey.ID) || !strings.Contains(line, "reconciler") {
		t.Errorf("audit: exit %d, line of the forged end %q; want it UNATTESTED out-of-role, the writer's key %s, naming the reconciler:\n%s%s", code, line, wkey.ID, out, errOut)
	}
	if out, _, _ := cliExit(t, r.data, "session", "show", r.sid); strings.Contains(out, "ended") {
		t.Errorf("session show after the forged end says ended:\n%s", out)
	}
	out, errOut, code = cliExit(t, r.data, "replay", "--rederive", "--session", r.sid)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("seq %d session.ended", seq)) || strings.Contains(out, "all agree") || !strings.Contains(out, "1 unattested event") {
		t.Errorf("replay --rederive: exit %d, want 1 naming seq %d session.ended, one unattested event, and no \"all agree\":\n%s%s", code, seq, out, errOut)
	}
	// --json counts it as verify --json does.
	out, errOut, code = cliExit(t, r.data, "--json", "replay", "--rederive", "--session", r.sid)
	var rj struct {
		Unattested      *int `json:"unattested"`
		FirstUnattested *struct {
			Seq    uint64 `json:"seq"`
			Status string `json:"status"`
		} `json:"first_unattested"`
	}
	if err := json.Unmarshal([]byte(out), &rj); err != nil || code != 1 || rj.Unattested == nil || *rj.Unattested != 1 ||
		rj.FirstUnattested == nil || rj.FirstUnattested.Seq != seq || rj.FirstUnattested.Status != "out-of-role" {
		t.Errorf("replay --rederive --json: exit %d, %v, want 1 with \"unattested\": 1 and first_unattested seq %d out-of-role:\n%s%s", code, err, seq, out, errOut)
	}
	// verify --seq of it says why every fold leaves it out, from the
	// one read that counts the unattested events.
	out, errOut, code = cliExit(t, r.data, "verify", "--seq", fmt.Sprint(seq))
	if want := fmt.Sprintf("seq %d: the event message is in the log but QUARANTINED (out-of-role: role writer", seq); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "NOT OK: 1 event is") {
		t.Errorf("verify --seq %d: exit %d, want 1 with %q and the unattested count:\n%s%s", seq, code, want, out, errOut)
	}
	out, errOut, code = cliExit(t, r.data, "verify")
	want := fmt.Sprintf("NOT OK: 1 event is in the log unattested (quarantined: left out of every fold), the first at seq %d: session.ended on %s, out-of-role: role writer", seq, agg.Subject())
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "ok: ") || !strings.Contains(errOut, "1 unattested event") {
		t.Errorf("verify: exit %d, want 1 with %q and no ok:\n%s%s", code, want, out, errOut)
	}
	// --json says so too: its overall verdict, whatever the tree says.
	out, errOut, code = cliExit(t, r.data, "--json", "verify")
	var v struct {
		OK         *bool  `json:"ok"`
		Unattested uint64 `json:"unattested"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 || v.OK == nil || *v.OK || v.Unattested != 1 {
		t.Errorf("verify --json: exit %d, %v, want 1 with \"ok\": false and 1 unattested:\n%s%s", code, err, out, errOut)
	}
}

// TestAudit_SessionOfForgeriesOnly: a session whose every event is a
// forgery (appended with the worker's credentials, unsigned) is in no
// view; audit of its id shows each forged event as unattested instead of
// saying there is no such session.
func TestAudit_SessionOfForgeriesOnly(t *testing.T) {
	t.Parallel()
	r := newGateRig(t, "f0a9ed00-0000-4000-8000-00000000f0b1", nil)
	_, wnc := connectAs(t, dataDir(r.data), natslog.RoleWorker)
	const sid = "f0a9ed00-0000-4000-8000-00000000f0b2"
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	e := newEvent(agg, 1, time.Time{}, "hook", "SessionStart", events.SessionStarted{Agent: "claude", Cwd: "/work"})
	m := eventMsg(t, e, 0)
	m.Header.Set(natslog.HeaderType, e.Type)
	ack := publish(t, wnc, m)
	out, errOut, code := cliExit(t, r.data, "audit", sid)
	if code != 0 {
		t.Fatalf("audit %s: exit %d:\n%s%s", sid, code, out, errOut)
	}
	if line := auditLine(out, ack.Sequence); !strings.Contains(line, "UNATTESTED") || !strings.Contains(line, "unsigned") {
		t.Errorf("audit of a session of forgeries only: line of seq %d is %q; want it unattested, unsigned:\n%s", ack.Sequence, line, out)
	}
	// A read that does not show unattested events (events tail, replay
	// of the session) says it left some out: it never passes for the
	// whole log. audit, which shows them, does not say it twice.
	for _, args := range [][]string{{"events", "tail", "--from", "1"}, {"replay", "--session", sid}} {
		out, errOut, _ := cliExit(t, r.data, args...)
		if want := fmt.Sprintf("left out as unattested (not shown, not folded), the first seq %d (unsigned: ", ack.Sequence); !strings.Contains(errOut, want) {
			t.Errorf("%s: stderr %q, want %q in it (stdout:\n%s)", strings.Join(args, " "), errOut, want, out)
		}
	}
	if _, errOut, _ := cliExit(t, r.data, "audit", sid); strings.Contains(errOut, "left out as unattested") {
		t.Errorf("audit, which shows unattested events, warns of them too: %q", errOut)
	}
	// An id nothing was ever appended for is still not found.
	if _, errOut, code := cliExit(t, r.data, "audit", "f0a9ed00-0000-4000-8000-00000000f0b3"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("audit of an unknown session: exit %d, %q; want not found", code, errOut)
	}
	// Nor a workspace: the message says audit looked for both.
	if _, errOut, code := cliExit(t, r.data, "audit", "etc"); code == 0 || !strings.Contains(errOut, "neither a session nor a workspace") {
		t.Errorf("audit etc: exit %d, %q; want neither a session nor a workspace", code, errOut)
	}
}

// TestSigning_BeginsOnALogWrittenUnsigned writes a log as a build
// without signing did (no keys in the data dir, no signature headers),
// then starts serve: serve begins signing (an admin-signed
// signing.began) and registers its key. The events before it are folded
// as "before signing" and the state hash is what it was; an unsigned
// event appended after it is quarantined even when it is dated before
// signing began.
func TestSigning_BeginsOnALogWrittenUnsigned(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	dd := dataDir(data)
	if err := dd.ensure(); err != nil {
		t.Fatal(err)
	}
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: dd.path("jetstream")})
	if err != nil {
		t.Fatal(err)
	}
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sid := "0b5e55ed-0000-4000-8000-000000000001"
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	old := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	mk := func(ver uint64, p events.Payload) events.Envelope {
		return newEvent(agg, ver, old, "hook", "SessionStart", p)
	}
	app, err := l.Append(t.Context(), events.Batch{Agg: agg, Events: []events.Envelope{
		mk(1, events.SessionStarted{Agent: "claude-code", Cwd: "/w"}),
		mk(2, events.SessionDescribed{Model: "before-signing"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := srv.Shutdown(); err != nil {
		t.Fatal(err)
	}
	hash := func(out string) string {
		_, h, _ := strings.Cut(out, "state hash ")
		h, _, _ = strings.Cut(h, "\n")
		return h
	}
	before := hash(cli(t, data, "replay"))
	if before == "" {
		t.Fatal("replay printed no state hash")
	}

	serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--fsync", "interval")
	if out, errOut, code := cliExit(t, data, "replay", "--verify"); code != 0 {
		t.Fatalf("replay --verify on the unforged log: exit %d\n%s%s", code, out, errOut)
	}
	if after := hash(cli(t, data, "replay")); after != before {
		t.Errorf("state hash %s after signing began, %s before", after, before)
	}
	if audit := cli(t, data, "audit", sid); strings.Contains(audit, "UNATTESTED") || !strings.Contains(audit, "session.described") {
		t.Errorf("audit of the events before signing:\n%s", audit)
	}
	if audit := cli(t, data, "audit", sid); strings.Count(audit, "signed=") != strings.Count(audit, "signed=before-signing") || rows(audit, "#") != strings.Count(audit, "signed=before-signing") {
		t.Errorf("audit of the events before signing: want each to say signed=before-signing:\n%s", audit)
	}

	// An unsigned event dated before signing began, appended after it.
	_, nc := connectAs(t, dd, natslog.RoleWriter)
	e := mk(3, events.SessionDescribed{Model: "backdated"})
	m := eventMsg(t, e, app.Last)
	ack := publish(t, nc, m)
	// replay --verify reads up to the live projection's checkpoint: it
	// names the forgery once serve's projector has passed it, which under
	// a loaded machine takes more than a moment.
	out, _ := verifyNames(t, data, fmt.Sprintf("seq %d", ack.Sequence))
	for _, seq := range []uint64{app.First, app.Last} {
		if strings.Contains(out, fmt.Sprintf("seq %d ", seq)) {
			t.Errorf("replay --verify names seq %d, written before signing:\n%s", seq, out)
		}
	}
	if !strings.Contains(out, "unsigned") {
		t.Errorf("replay --verify does not say unsigned:\n%s", out)
	}
}

// TestCredsIssue_CarriesARegisteredKey: `creds issue --role worker`
// writes a file with a signing key of its own, registered on the log for
// the worker role, and the pinned admin key. A verdict signed with it is
// out of the worker's role: replay --verify names it and its principal.
func TestCredsIssue_CarriesARegisteredKey(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--fsync", "interval")
	dd := dataDir(data)
	out := filepath.Join(t.TempDir(), "worker.json")
	cli(t, data, "creds", "issue", "--role", "worker", "--out", out)
	c, err := datadir.ReadCreds(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Key == nil || c.Key.Role != attestation.RoleWorker || c.Admin == "" {
		t.Fatalf("issued worker credentials carry key %+v, admin %q; want a worker key and the admin key", c.Key, c.Admin)
	}
	if pin, err := attestation.ReadPin(dd.keyPath("admin.pub")); err != nil || !pin.Equal(mustPublic(t, c.Admin)) {
		t.Errorf("issued admin key %s is not the data dir's pin (%v)", c.Admin, err)
	}
	l, nc := connectAs(t, dd, natslog.RoleWorker)
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindKey, ID: c.Key.ID})
	if err != nil || len(recs) != 1 || recs[0].Data.(events.KeyRegistered).Role != "worker" {
		t.Fatalf("key.registered of the issued key: %v, %v", recs, err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "c0ffee00-0000-4000-8000-000000000001"}
	e := newEvent(agg, 1, time.Time{}, events.CauseGate, "answer", events.ReviewDecided{ReviewID: "x", Verdict: events.VerdictAllow, Outcome: events.ReviewApproved})
	m := eventMsg(t, e, 0)
	id, sig := c.Key.Sign(m.Subject, "0", m.Data)
	m.Header.Set(attestation.HeaderKey, id)
	m.Header.Set(attestation.HeaderSig, sig)
	ack := publish(t, nc, m)
	// replay --verify reads up to the live projection's checkpoint: it
	// names the event once serve's projector has passed it.
	vout, _ := verifyNames(t, data, fmt.Sprintf("seq %d", ack.Sequence))
	if !strings.Contains(vout, "out-of-role") || !strings.Contains(vout, c.Key.Principal) {
		t.Errorf("replay --verify does not name out-of-role and %s:\n%s", c.Key.Principal, vout)
	}
}

func mustPublic(t *testing.T, s string) ed25519.PublicKey {
	t.Helper()
	pub, err := attestation.ParsePublic(s)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestSigning_LostPinNotMadeAgainByAReader: a data dir whose log is
// signed, its keys/admin.key and admin.pub lost (or taken away). A
// command that only reads makes no admin key in their place, which
// would judge the log as never signed and a forgery as a real event:
// it reads unjudged, and `verify` and `replay --verify` say the log is
// signed and was read unjudged, and exit 1.
func TestSigning_LostPinNotMadeAgainByAReader(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	dd := dataDir(data)
	_, stop := serveStoppable(t, data, "--workers", "0", "--reconcile-every", "0", "--http", "off", "--no-watch")
	sid := "10575e55-0000-4000-8000-000000000001"
	promptSession(t, t.Context(), data, sid, t.TempDir())
	stop()
	for _, name := range []string{"admin.key", "admin.pub"} {
		if err := os.Remove(dd.keyPath(name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"sessions"}, {"session", "show", sid}, {"audit", sid}, {"events", "tail"}} {
		if out, errOut, code := cliExit(t, data, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	for _, name := range []string{"admin.key", "admin.pub"} {
		if _, err := os.Stat(dd.keyPath(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the reads, %s: %v; want it still missing", name, err)
		}
	}
	for _, args := range [][]string{{"verify"}, {"replay", "--verify"}} {
		out, errOut, code := cliExit(t, data, args...)
		if code != 1 || !strings.Contains(out+errOut, "unjudged") {
			t.Errorf("%v with the pin lost: exit %d, want 1 saying the log was read unjudged\n%s%s", args, code, out, errOut)
		}
	}
}
