package natslog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestAttest_PreverifiedFoldQuarantinesTheSame reads, on the fast path
// of a judgment statement, a log with a forged signature before the
// statement's end and, past it, another forged signature and events
// signed after their key was revoked mid-log: a read that verifies the
// signatures past the statement ahead (preverify) folds and quarantines
// exactly what a read without it does, and makes no more Ed25519
// verifications than there are events past the statement.
func TestAttest_PreverifiedFoldQuarantinesTheSame(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t, "serve@h", attestation.RoleServe), mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k1, k2)
	reg := events.NewRegistry()
	ctx := t.Context()
	edit := func(data []byte) []byte { return bytes.Replace(data, []byte(`"fine"`), []byte(`"FINE"`), 1) }
	l.SetSigner(k1)
	a := mustAppend(t, l, decision(reg, session("a"), 0, 1, 40))
	headForged := forge(t, s.Conn(), verdict(reg, session("a"), 41), a.Last, k1, edit)
	through := lastSeq(t, l)

	b := mustAppend(t, l, decision(reg, session("b"), 0, 1, 30))
	tailForged := forge(t, s.Conn(), verdict(reg, session("b"), 31), b.Last, k1, edit)
	if err := l.RevokeKey(ctx, admin, k1.ID, "rotated", "h", testTime); err != nil {
		t.Fatal(err)
	}
	raw := openLog(t, s)
	raw.SetSigner(k1)
	revoked := mustAppend(t, raw, decision(reg, session("c"), 0, 1, 5))
	l.SetSigner(k2)
	mustAppend(t, l, decision(reg, session("d"), 0, 1, 20))
	past := lastSeq(t, l) - through

	jr := signedLog(t, s, admin).NewJudger(admin.Public())
	if err := jr.CatchUp(ctx, through); err != nil {
		t.Fatal(err)
	}
	j := &Judged{Through: through, Quarantined: jr.Quarantined(), Check: func(Msg) error { return nil }}

	folds, checked := foldBothWays(t, s, admin, j)
	for pre, n := range checked {
		if n > past {
			t.Errorf("preverify %v: %d Ed25519 verifications, more than the %d events past the statement", pre, n, past)
		}
	}
	if diff := cmp.Diff(folds[false], folds[true]); diff != "" {
		t.Errorf("fold (-without preverify +with):\n%s", diff)
	}
	want := map[uint64]attestation.Status{headForged: attestation.BadSignature, tailForged: attestation.BadSignature}
	for seq := revoked.First; seq <= revoked.Last; seq++ {
		want[seq] = attestation.UnknownKey
	}
	got := map[uint64]attestation.Status{}
	for _, q := range folds[true].Quarantined {
		got[q.Seq] = q.Verdict.Status
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quarantined with preverify (-want +got):\n%s", diff)
	}
}

// A tail past the statement signed in batches, one of its messages
// changed by a byte: a read that pre-verifies it (one message of each
// batch checked ahead, the batch's statement with it) folds and
// quarantines exactly what a read without it does, the changed message
// quarantined as not the leaf its proof puts under the root, and makes
// no more Ed25519 verifications.
func TestAttest_PreverifiedBatchTail(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 10))
	through := lastSeq(t, l)

	for i := range 3 {
		reqs := takenRequests(t, serve, decision(reg, session(fmt.Sprintf("b%d", i)), 0, 1, 4), decision(reg, session(fmt.Sprintf("c%d", i)), 0, 1, 3))
		l.commit(reqs)
		for _, r := range reqs {
			if o := <-r.done; o.err != nil {
				t.Fatal(o.err)
			}
		}
	}
	// The first message of a batch of its own, one byte of it changed:
	// the pre-verifier's check of it fails, and the batch's others are
	// left to the read.
	var msgs []*nats.Msg
	for _, id := range []string{"d", "e"} {
		r, err := newRequest(decision(reg, session(id), 0, 1, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, r.msgs...)
	}
	signMsgs(serve, msgs)
	edited := bytes.Replace(msgs[0].Data, []byte("/work"), []byte("/worK"), 1)
	if bytes.Equal(edited, msgs[0].Data) {
		t.Fatalf("no /work in %s", msgs[0].Data)
	}
	msgs[0].Data = edited
	var changed uint64
	for i, m := range msgs {
		seq := publishMsg(t, s.Conn(), m, "a batch")
		if i == 0 {
			changed = seq
		}
	}

	jr := signedLog(t, s, admin).NewJudger(admin.Public())
	if err := jr.CatchUp(ctx, through); err != nil {
		t.Fatal(err)
	}
	j := &Judged{Through: through, Quarantined: jr.Quarantined(), Check: func(Msg) error { return nil }}
	folds, checked := foldBothWays(t, s, admin, j)
	if diff := cmp.Diff(folds[false], folds[true]); diff != "" {
		t.Errorf("fold (-without preverify +with):\n%s", diff)
	}
	if checked[true] > checked[false] {
		t.Errorf("%d Ed25519 verifications with preverify, %d without", checked[true], checked[false])
	}
	if q := folds[true].Quarantined; len(q) != 1 || q[0].Seq != changed || q[0].Verdict.Status != attestation.BadSignature || !strings.Contains(q[0].Verdict.Why, "not the leaf") {
		t.Errorf("quarantined %+v, want seq %d alone, a bad batch signature", q, changed)
	}
	if got, want := len(folds[true].Read), int(lastSeq(t, l))-1; got != want {
		t.Errorf("folded %d events, want every one but the changed one, %d", got, want)
	}
}

// A tail past the statement shorter than hopMin, not of one long
// batch, is pre-verified by a get of each of its messages rather than a
// read of it: a forged signature and a batch one of whose messages was
// changed by a byte there are quarantined, and the read folds exactly
// what a read without pre-verification does, with no more Ed25519
// verifications.
func TestAttest_PreverifiedShortTailByGets(t *testing.T) {
	t.Parallel()
	k := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k)
	l.SetSigner(k)
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 10))
	through := lastSeq(t, l)

	b := mustAppend(t, l, decision(reg, session("b"), 0, 1, 3))
	forged := forge(t, s.Conn(), verdict(reg, session("b"), 4), b.Last, k,
		func(data []byte) []byte { return bytes.Replace(data, []byte(`"fine"`), []byte(`"FINE"`), 1) })
	r, err := newRequest(decision(reg, session("c"), 0, 1, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	signMsgs(k, r.msgs)
	// The batch's last message changed (none of its aggregate follows).
	last := len(r.msgs) - 1
	edited := bytes.Replace(r.msgs[last].Data, []byte("tool:4"), []byte("tool:5"), 1)
	if bytes.Equal(edited, r.msgs[last].Data) {
		t.Fatalf("no tool:4 in %s", r.msgs[last].Data)
	}
	r.msgs[last].Data = edited
	var changed uint64
	for i, m := range r.msgs {
		seq := publishMsg(t, s.Conn(), m, "a batch")
		if i == last {
			changed = seq
		}
	}
	if left := lastSeq(t, l) - through; left >= hopMin {
		t.Fatalf("%d messages past the statement, want fewer than hopMin (%d)", left, hopMin)
	}

	jr := signedLog(t, s, admin).NewJudger(admin.Public())
	if err := jr.CatchUp(ctx, through); err != nil {
		t.Fatal(err)
	}
	j := &Judged{Through: through, Quarantined: jr.Quarantined(), Check: func(Msg) error { return nil }}
	folds, checked := foldBothWays(t, s, admin, j)
	if diff := cmp.Diff(folds[false], folds[true]); diff != "" {
		t.Errorf("fold (-without preverify +with):\n%s", diff)
	}
	if checked[true] > checked[false] {
		t.Errorf("%d Ed25519 verifications with preverify, %d without", checked[true], checked[false])
	}
	got := map[uint64]attestation.Status{}
	for _, q := range folds[true].Quarantined {
		got[q.Seq] = q.Verdict.Status
	}
	want := map[uint64]attestation.Status{forged: attestation.BadSignature, changed: attestation.BadSignature}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quarantined with preverify (-want +got):\n%s", diff)
	}
}

// preFold is what one read of a signed log folded: the sequences it
// read and what it quarantined.
type preFold struct {
	Read        []uint64
	Quarantined []Quarantined
}

// foldBothWays reads the whole signed log on s judged by j twice, with
// pre-verification (true) and without (false), each on a log of its
// own, and returns each read's fold and its count of Ed25519
// verifications. The tail is pre-verified however short it is.
func foldBothWays(t *testing.T, s *Server, admin *attestation.Key, j *Judged) (map[bool]preFold, map[bool]uint64) {
	t.Helper()
	folds, checked := map[bool]preFold{}, map[bool]uint64{}
	for _, pre := range []bool{false, true} {
		r := signedLog(t, s, admin)
		r.preverifyFrom = 1 // the tests' tails are short
		r.preverifyOff = !pre
		r.SetJudged(j)
		var f preFold
		for _, rec := range readAll(t, r, 1) {
			f.Read = append(f.Read, rec.Seq)
		}
		f.Quarantined, _ = r.Quarantined()
		folds[pre], checked[pre] = f, r.Verifier().Checked()
	}
	return folds, checked
}

// A tail signed in long batches is pre-verified by a get of the first
// message of each batch (hopBatches), the rest of each hopped over and
// not read a second time, up to the first event that is not of a long
// batch; the read then folds and quarantines what a read without
// pre-verification does: a message changed inside a batch whose first
// message was checked is still caught by its own proof.
func TestAttest_PreverifiedLongBatchesHopped(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 10))
	through := lastSeq(t, l)
	for i := range 3 {
		mustAppend(t, l, decision(reg, session(fmt.Sprintf("b%d", i)), 0, 1, 20))
	}
	r, err := newRequest(decision(reg, session("f"), 0, 1, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	signMsgs(serve, r.msgs)
	// The batch's last message changed (none of its aggregate follows).
	last := len(r.msgs) - 1
	edited := bytes.Replace(r.msgs[last].Data, []byte("tool:20"), []byte("tool:21"), 1)
	if bytes.Equal(edited, r.msgs[last].Data) {
		t.Fatalf("no tool:20 in %s", r.msgs[last].Data)
	}
	r.msgs[last].Data = edited
	var changed uint64
	for i, m := range r.msgs {
		seq := publishMsg(t, s.Conn(), m, "a batch")
		if i == last {
			changed = seq
		}
	}
	mustAppend(t, l, decision(reg, session("g"), 0, 1, 1)) // signed alone
	single := lastSeq(t, l)
	mustAppend(t, l, decision(reg, session("h"), 0, 1, 20))

	jr := signedLog(t, s, admin).NewJudger(admin.Public())
	if err := jr.CatchUp(ctx, through); err != nil {
		t.Fatal(err)
	}
	before := jr.v.Checked()
	if got := hopBatches(ctx, l, jr.v, through+1, lastSeq(t, l)); got != single {
		t.Errorf("hopBatches stopped at seq %d, want %d (the event signed alone)", got, single)
	}
	if got := jr.v.Checked() - before; got != 4 {
		t.Errorf("hopBatches made %d Ed25519 verifications, want 4 (one a batch)", got)
	}

	j := &Judged{Through: through, Quarantined: jr.Quarantined(), Check: func(Msg) error { return nil }}
	folds, checked := foldBothWays(t, s, admin, j)
	if diff := cmp.Diff(folds[false], folds[true]); diff != "" {
		t.Errorf("fold (-without preverify +with):\n%s", diff)
	}
	if checked[true] > checked[false] {
		t.Errorf("%d Ed25519 verifications with preverify, %d without", checked[true], checked[false])
	}
	if q := folds[true].Quarantined; len(q) != 1 || q[0].Seq != changed || q[0].Verdict.Status != attestation.BadSignature || !strings.Contains(q[0].Verdict.Why, "not the leaf") {
		t.Errorf("quarantined %+v, want seq %d alone, a bad batch signature", q, changed)
	}
	if got, want := len(folds[true].Read), int(lastSeq(t, l))-1; got != want {
		t.Errorf("folded %d events, want every one but the changed one, %d", got, want)
	}
}

// A verified read keeps in the Log's cache the order state of each
// aggregate it judged as of its last event judged, what a load that
// takes up from it needs (aggStates), and moves the Verifier's horizon
// to its last event: through a whole read of several chunks, and through
// one stopped mid-chunk.
func TestAttest_ReadKeepsOrderStates(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	ver := map[string]uint64{}
	expect := map[string]uint64{}
	for i := range 12 { // 3 aggregates, 600 events: decodeChunk runs straddling them
		agg := session(fmt.Sprint("a", i%3))
		app := mustAppend(t, l, decision(reg, agg, expect[agg.ID], ver[agg.ID]+1, 50))
		expect[agg.ID], ver[agg.ID] = app.Last, ver[agg.ID]+50
	}
	end := lastSeq(t, l)
	for _, stop := range []int{0, 300} { // 0: read to the end
		r := signedLog(t, s, admin)
		want := map[string]attestation.AggState{}
		n := 0
		for rec, err := range r.Read(t.Context(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			if rec.Agg.Kind == events.KindSession {
				want[rec.Subject] = attestation.AggState{Through: rec.Seq, Ver: rec.Ver, Seq: rec.Seq, ID: rec.ID}
			}
			if n++; n == stop {
				break
			}
		}
		if stop == 0 && r.cfg.Verifier.Horizon() != end {
			t.Errorf("after a whole read: horizon %d, want %d", r.cfg.Verifier.Horizon(), end)
		}
		if len(want) != 3 {
			t.Fatalf("stop %d: read %d aggregates, want 3", stop, len(want))
		}
		for subject, w := range want {
			got, ok := r.orders.get(subject)
			if !ok {
				t.Errorf("stop %d: no order state kept for %s", stop, subject)
				continue
			}
			got.Entry, got.Session, got.Claim = events.Cause{}, "", ""
			if got != w {
				t.Errorf("stop %d: order state of %s %+v, want %+v", stop, subject, got, w)
			}
		}
	}
}
