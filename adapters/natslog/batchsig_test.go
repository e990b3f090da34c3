package natslog

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// rawMsgs returns the stored event messages from seq from on, by
// sequence.
func rawMsgs(t *testing.T, l *Log, from uint64) map[uint64]Msg {
	t.Helper()
	out := map[uint64]Msg{}
	for m, err := range l.ReadRaw(t.Context(), events.SubjectEvents+".>", from) {
		if err != nil {
			t.Fatal(err)
		}
		out[m.Seq] = m
	}
	return out
}

// statuses reads l's log from its start with a fresh reader judging
// against admin and returns each event's verdict by sequence, folded or
// quarantined, and the Ed25519 verifications the read made.
func statuses(t *testing.T, s *Server, admin *attestation.Key) (map[uint64]attestation.Status, uint64) {
	t.Helper()
	r := signedLog(t, s, admin)
	got := map[uint64]attestation.Status{}
	for _, rec := range readAll(t, r, 1) {
		got[rec.Seq] = attestation.Status(rec.Signer.Status)
	}
	qs, _ := r.Quarantined()
	for _, q := range qs {
		got[q.Seq] = q.Verdict.Status
	}
	return got, r.Verifier().Checked()
}

// takenRequests encodes batches as the committer takes them, each to be
// signed by s.
func takenRequests(t *testing.T, s Signer, batches ...events.Batch) []*request {
	t.Helper()
	var reqs []*request
	for _, b := range batches {
		r, err := newRequest(b, s)
		if err != nil {
			t.Fatal(err)
		}
		r.state.Store(taken)
		reqs = append(reqs, r)
	}
	return reqs
}

// A commit of several messages carries one batch signature: each
// message its index, the count, the root and its proof, no Lb-Sig; a
// lone one-event decision keeps the single signature. A reader from the
// start verifies one statement for the whole commit, and a load of one
// aggregate of it (a filtered read) attests its events from their own
// headers.
func TestBatchSig_CommitSignsOnce(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	before := lastSeq(t, l)

	reqs := takenRequests(t, serve, decision(reg, session("a"), 0, 1, 2), decision(reg, session("b"), 0, 1, 1), decision(reg, session("c"), 0, 1, 3))
	l.commit(reqs)
	for i, r := range reqs {
		if o := <-r.done; o.err != nil {
			t.Fatalf("request %d: %v", i, o.err)
		}
	}
	lone := mustAppend(t, l, decision(reg, session("d"), 0, 1, 1))

	raw := rawMsgs(t, l, before+1)
	if len(raw) != 7 {
		t.Fatalf("%d messages stored, want 7", len(raw))
	}
	var root, sig string
	for i := range 6 {
		m := raw[before+1+uint64(i)]
		h := m.Header
		if got, want := h.Get(attestation.HeaderBatch), fmt.Sprintf("%d/6", i); got != want {
			t.Errorf("seq %d: %s %q, want %q", m.Seq, attestation.HeaderBatch, got, want)
		}
		if h.Get(attestation.HeaderSig) != "" || h.Get(attestation.HeaderKey) != serve.ID || h.Get(attestation.HeaderProof) == "" {
			t.Errorf("seq %d: headers %v, want Lb-Key %s, a proof and no Lb-Sig", m.Seq, h, serve.ID)
		}
		if i == 0 {
			root, sig = h.Get(attestation.HeaderRoot), h.Get(attestation.HeaderBatchSig)
		} else if h.Get(attestation.HeaderRoot) != root || h.Get(attestation.HeaderBatchSig) != sig {
			t.Errorf("seq %d: another root or signature than the commit's first message", m.Seq)
		}
	}
	if h := raw[lone.Last].Header; h.Get(attestation.HeaderSig) == "" || h.Get(attestation.HeaderBatch) != "" {
		t.Errorf("a lone event: headers %v, want Lb-Sig alone", h)
	}

	got, checked := statuses(t, s, admin)
	for seq := before + 1; seq <= lone.Last; seq++ {
		if got[seq] != attestation.Attested {
			t.Errorf("seq %d: %s, want attested", seq, got[seq])
		}
	}
	// signing.began, key.registered, the commit's statement, the lone event.
	if checked != 4 {
		t.Errorf("the read made %d Ed25519 verifications, want 4", checked)
	}

	r := signedLog(t, s, admin)
	recs, _, err := r.Load(t.Context(), session("c"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("Load(c) = %d records, want 3", len(recs))
	}
	for _, rec := range recs {
		if rec.Signer.Status != string(attestation.Attested) {
			t.Errorf("Load(c) seq %d: %s, want attested", rec.Seq, rec.Signer.Status)
		}
	}
}

// When the server refuses a merged batch and its members go out alone,
// each is signed again for what it sends: a one-event member with the
// single signature, a longer one with a batch of its own messages.
func TestBatchSig_SplitMembersSignedAgain(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	a0 := mustAppend(t, l, decision(reg, session("m0"), 0, 1, 1))

	reqs := takenRequests(t, serve,
		decision(reg, session("m1"), 0, 1, 2),
		decision(reg, session("m0"), a0.Last+5, 2, 1), // stale expect: conflict
		decision(reg, session("m2"), 0, 1, 1),
	)
	l.commit(reqs)
	outs := make([]outcome, len(reqs))
	for i, r := range reqs {
		outs[i] = <-r.done
	}
	if outs[0].err != nil || outs[2].err != nil || outs[1].err == nil {
		t.Fatalf("outcomes %+v, want the stale member alone refused", outs)
	}
	raw := rawMsgs(t, l, a0.Last+1)
	for i, seq := range []uint64{outs[0].app.First, outs[0].app.Last} {
		if got, want := raw[seq].Header.Get(attestation.HeaderBatch), fmt.Sprintf("%d/2", i); got != want {
			t.Errorf("m1 seq %d: %s %q, want %q (its own two messages)", seq, attestation.HeaderBatch, got, want)
		}
	}
	if h := raw[outs[2].app.First].Header; h.Get(attestation.HeaderSig) == "" || h.Get(attestation.HeaderBatch) != "" {
		t.Errorf("m2, sent alone: headers %v, want Lb-Sig alone", h)
	}
	got, _ := statuses(t, s, admin)
	for _, seq := range []uint64{outs[0].app.First, outs[0].app.Last, outs[2].app.First} {
		if got[seq] != attestation.Attested {
			t.Errorf("seq %d: %s, want attested", seq, got[seq])
		}
	}
}

// singleSigner signs each message alone, as every writer did before
// batch signatures: a Signer that is not a BatchSigner.
type singleSigner struct{ k *attestation.Key }

func (s singleSigner) Sign(subject, expect string, data []byte) (string, string) {
	return s.k.Sign(subject, expect, data)
}

// A log written with a signature per event, in multi-event decisions and
// merged commits, is attested by today's reader.
func TestBatchSig_PerEventLogStillVerifies(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	old := singleSigner{serve}
	l.SetSigner(old)
	reg := events.NewRegistry()
	before := lastSeq(t, l)
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 4))
	reqs := takenRequests(t, old, decision(reg, session("b"), 0, 1, 2), decision(reg, session("c"), 0, 1, 1))
	l.commit(reqs)
	for _, r := range reqs {
		if o := <-r.done; o.err != nil {
			t.Fatal(o.err)
		}
	}
	raw := rawMsgs(t, l, before+1)
	for seq, m := range raw {
		if m.Header.Get(attestation.HeaderSig) == "" || m.Header.Get(attestation.HeaderBatch) != "" {
			t.Errorf("seq %d: headers %v, want a signature of its own", seq, m.Header)
		}
	}
	got, checked := statuses(t, s, admin)
	for seq := range raw {
		if got[seq] != attestation.Attested {
			t.Errorf("seq %d: %s, want attested", seq, got[seq])
		}
	}
	if want := uint64(2 + len(raw)); checked != want {
		t.Errorf("%d verifications, want %d (one per event)", checked, want)
	}
}

// Every way a holder of the stream's credentials can misuse a batch
// signature: each tampered message is quarantined, named, and the
// batch's other messages, published untouched, are attested.
func TestBatchSig_Forgeries(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	writer := mustKey(t, "writer@h", attestation.RoleWriter)
	stranger := mustKey(t, "serve@elsewhere", attestation.RoleServe)
	s, admin, _ := startSigning(t, serve, writer)
	reg := events.NewRegistry()
	nc := s.Conn()

	// batch returns 3 messages, one event each on aggregates of its own
	// (verdicts when verdicts is set), signed together by k.
	n := 0
	batch := func(k *attestation.Key, verdicts bool) []*nats.Msg {
		var msgs []*nats.Msg
		for range 3 {
			n++
			agg := session(fmt.Sprintf("f%d", n))
			b := decision(reg, agg, 0, 1, 1)
			if verdicts {
				b.Events = []events.Envelope{verdict(reg, agg, 1)}
			}
			r, err := newRequest(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, r.msgs...)
		}
		signMsgs(k, msgs)
		return msgs
	}
	batchHeaders := []string{attestation.HeaderBatch, attestation.HeaderRoot, attestation.HeaderBatchSig, attestation.HeaderProof}
	moveSig := func(from, to *nats.Msg) {
		for _, h := range append(batchHeaders, attestation.HeaderKey, attestation.HeaderSig) {
			delete(to.Header, h)
			if v := from.Header.Get(h); v != "" {
				to.Header.Set(h, v)
			}
		}
	}
	proof := func(m *nats.Msg) []byte {
		b, err := base64.StdEncoding.DecodeString(m.Header.Get(attestation.HeaderProof))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	type forged struct {
		seqs   []uint64
		status attestation.Status
		why    string
	}
	var cases []forged
	for _, tt := range []struct {
		name     string
		k        *attestation.Key
		verdicts bool
		edit     func(ms []*nats.Msg) []int // the messages it quarantines
		status   attestation.Status
		why      string
	}{
		{"one byte of one message", serve, false, func(ms []*nats.Msg) []int {
			edited := strings.Replace(string(ms[1].Data), "/work", "/worK", 1)
			if edited == string(ms[1].Data) {
				t.Fatalf("no /work in %s", ms[1].Data)
			}
			ms[1].Data = []byte(edited)
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a message's proof and signature on another of its batch", serve, false, func(ms []*nats.Msg) []int {
			moveSig(ms[0], ms[2])
			return []int{2}
		}, attestation.BadSignature, "not the leaf"},
		{"a message's proof and signature on a message of another batch", serve, false, func(ms []*nats.Msg) []int {
			moveSig(batch(serve, false)[1], ms[1])
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a wrong index", serve, false, func(ms []*nats.Msg) []int {
			ms[1].Header.Set(attestation.HeaderBatch, "2/3")
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a wrong count", serve, false, func(ms []*nats.Msg) []int {
			ms[1].Header.Set(attestation.HeaderBatch, "1/4")
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a count of one", serve, false, func(ms []*nats.Msg) []int {
			ms[1].Header.Set(attestation.HeaderBatch, "0/1")
			return []int{1}
		}, attestation.BadSignature, "Lb-Batch"},
		{"a proof too long", serve, false, func(ms []*nats.Msg) []int {
			p := proof(ms[1])
			ms[1].Header.Set(attestation.HeaderProof, base64.StdEncoding.EncodeToString(append(p, p[:32]...)))
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a proof too short", serve, false, func(ms []*nats.Msg) []int {
			p := proof(ms[1])
			ms[1].Header.Set(attestation.HeaderProof, base64.StdEncoding.EncodeToString(p[:len(p)-32]))
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a proof not base64", serve, false, func(ms []*nats.Msg) []int {
			ms[1].Header.Set(attestation.HeaderProof, "not base64!")
			return []int{1}
		}, attestation.BadSignature, "Lb-Proof"},
		{"a batch signed by a key not registered", stranger, false, func(ms []*nats.Msg) []int {
			return []int{0, 1, 2}
		}, attestation.UnknownKey, "not registered"},
		{"verdicts in a batch signed by a key out of its role", writer, true, func(ms []*nats.Msg) []int {
			return []int{0, 1, 2}
		}, attestation.OutOfRole, "may not append review.decided"},
		{"a single signature replayed as a batch one", serve, false, func(ms []*nats.Msg) []int {
			m := ms[1]
			_, single := serve.Sign(m.Subject, m.Header.Get("Nats-Expected-Last-Subject-Sequence"), m.Data)
			m.Header.Set(attestation.HeaderBatchSig, single)
			return []int{1}
		}, attestation.BadSignature, "not the leaf"},
		{"a batch signature replayed as a single one", serve, false, func(ms []*nats.Msg) []int {
			m := ms[1]
			m.Header.Set(attestation.HeaderSig, m.Header.Get(attestation.HeaderBatchSig))
			for _, h := range batchHeaders {
				delete(m.Header, h)
			}
			return []int{1}
		}, attestation.BadSignature, "does not verify"},
		{"both forms on one message", serve, false, func(ms []*nats.Msg) []int {
			m := ms[1]
			_, single := serve.Sign(m.Subject, m.Header.Get("Nats-Expected-Last-Subject-Sequence"), m.Data)
			m.Header.Set(attestation.HeaderSig, single)
			return []int{1}
		}, attestation.BadSignature, "both"},
	} {
		ms := batch(tt.k, tt.verdicts)
		bad := tt.edit(ms)
		seqs := make([]uint64, len(ms))
		for i, m := range ms {
			seqs[i] = publishMsg(t, nc, m, tt.name)
		}
		f := forged{status: tt.status, why: tt.why}
		for _, i := range bad {
			f.seqs = append(f.seqs, seqs[i])
		}
		cases = append(cases, f)
		for i, seq := range seqs {
			if !slices.Contains(bad, i) {
				cases = append(cases, forged{seqs: []uint64{seq}, status: attestation.Attested, why: tt.name + ": untouched"})
			}
		}
	}

	got, _ := statuses(t, s, admin)
	r := signedLog(t, s, admin)
	readAll(t, r, 1)
	for _, c := range cases {
		for _, seq := range c.seqs {
			if got[seq] != c.status {
				t.Errorf("seq %d (%s): %s, want %s", seq, c.why, got[seq], c.status)
				continue
			}
			if c.status == attestation.Attested {
				continue
			}
			q, ok := quarantinedAt(r, seq)
			if !ok || !strings.Contains(q.Verdict.Why, c.why) {
				t.Errorf("seq %d: quarantined because %q, want it to say %q", seq, q.Verdict.Why, c.why)
			}
		}
	}
}
