package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// TestReplayedCopy_Quarantined: a writer-signed event that is a member
// of an atomic batch after its first (no expected sequence; its
// signature, the batch's, covers "-"), published again exactly as stored with the
// writer's credentials, still verifies; it is quarantined as replayed,
// naming the original's sequence: audit marks it, replay --verify exits
// 1 naming it. Then an unsigned junk message published last is named by
// replay --verify (exit 1) rather than taken for a log that ends before
// the live checkpoint.
func TestReplayedCopy_Quarantined(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--fsync", "interval")
	dd := dataDir(data)
	wl, wnc := connectAs(t, dd, natslog.RoleWriter)
	wkey, err := dd.principalKey("writer.key", attestation.RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	wl.SetSigner(wkey)
	const sid = "5e9ea7ed-0000-4000-8000-000000000001"
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	mk := func(ver uint64, p events.Payload) events.Envelope {
		return newEvent(agg, ver, time.Time{}, "hook", "SessionStart", p)
	}
	app, err := wl.Append(t.Context(), events.Batch{Agg: agg, Events: []events.Envelope{
		mk(1, events.SessionStarted{Agent: "claude-code", Cwd: "/w"}),
		mk(2, events.SessionDescribed{Model: "m2"}),
		mk(3, events.SessionDescribed{Model: "m3"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	orig := app.Last // ver 3, the last attested event of the session
	var stored natslog.Msg
	for m, err := range wl.ReadRaw(t.Context(), agg.Subject(), orig) {
		if err != nil {
			t.Fatal(err)
		}
		stored = m
		break
	}
	signed := stored.Header.Get(attestation.HeaderSig) != "" || stored.Header.Get(attestation.HeaderBatchSig) != ""
	if stored.Seq != orig || !signed || stored.Header.Get(jetstream.ExpectedLastSubjSeqHeader) != "" {
		t.Fatalf("stored seq %d: %v; want a signed batch member with no expected sequence", stored.Seq, stored.Header)
	}
	m := &nats.Msg{Subject: stored.Subject, Header: nats.Header{}, Data: stored.Data}
	for k, vs := range stored.Header {
		if k == "Nats-Msg-Id" || strings.HasPrefix(k, "Nats-Batch-") {
			continue
		}
		m.Header[k] = vs
	}
	ack := publish(t, wnc, m)
	out, _ := verifyNames(t, data, fmt.Sprintf("live projection at seq %d:", ack.Sequence), fmt.Sprintf("seq %d", ack.Sequence), string(attestation.Replayed), fmt.Sprintf("seq %d", orig))
	if strings.Contains(out, fmt.Sprintf("UNATTESTED: seq %d ", orig)) {
		t.Errorf("replay --verify names the original seq %d unattested:\n%s", orig, out)
	}
	var aout, aerr bytes.Buffer
	if err := runCLIAgain(t.Context(), []string{"--data", data, "audit", sid}, &aout, &aerr); err != nil {
		t.Fatalf("audit: %v\n%s", err, aerr.String())
	}
	audit := aout.String()
	if line := auditLine(audit, ack.Sequence); !strings.Contains(line, "UNATTESTED") || !strings.Contains(line, string(attestation.Replayed)) {
		t.Errorf("audit line of the copy at seq %d is %q; want it unattested, replayed:\n%s", ack.Sequence, line, audit)
	}
	// And says so on stderr, beside a timeline a person may not read whole.
	if want := fmt.Sprintf("shown UNATTESTED (not folded), the first seq %d (replayed)", ack.Sequence); !strings.Contains(aerr.String(), want) {
		t.Errorf("audit's stderr %q; want %q", aerr.String(), want)
	}

	// Junk, unsigned, last in the log.
	_, knc := connectAs(t, dd, natslog.RoleWorker)
	junk := publish(t, knc, &nats.Msg{Subject: agg.Subject(), Data: []byte("not an event")})
	out, errOut := verifyNames(t, data, fmt.Sprintf("live projection at seq %d:", junk.Sequence), fmt.Sprintf("UNATTESTED: seq %d ", junk.Sequence), fmt.Sprintf("UNATTESTED: seq %d ", ack.Sequence))
	if strings.Contains(out+errOut, "before the live checkpoint") {
		t.Errorf("replay --verify with junk last:\n%s%s", out, errOut)
	}
}
