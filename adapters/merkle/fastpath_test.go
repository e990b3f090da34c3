package merkle

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// signed is a host whose log is signed: the admin key began signing and
// registered a serve key, which signs every append.
type signed struct {
	*host
	admin, serve *attestation.Key
}

// startSigned starts a host on a fresh dir and begins signing on it.
func startSigned(t testing.TB) *signed {
	t.Helper()
	h := start(t, t.TempDir())
	admin, err := attestation.NewKey("admin@test", attestation.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	serve, err := attestation.NewKey("serve@test", attestation.RoleServe)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := h.log.BeginSigning(ctx, admin, "test", testTime); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.RegisterKey(ctx, admin, serve, "test", testTime); err != nil {
		t.Fatal(err)
	}
	h.log.SetSigner(serve)
	return &signed{host: h, admin: admin, serve: serve}
}

// forgeStarted publishes a session.started of session id unsigned, or
// signed by k and then changed (a bad signature): a forgery.
func forgeStarted(t testing.TB, h *host, id string, k *attestation.Key) {
	t.Helper()
	e := events.NewRegistry().New(events.SessionStarted{Agent: "cli", Cwd: "/work/forged"})
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: id}, 1, testTime
	e.Cause = &events.Cause{Kind: "cli", Event: "start", Ref: "r1"}
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(e.Agg.Subject())
	m.Data = data
	if k != nil {
		kid, sig := k.Sign(m.Subject, "", []byte("not these bytes"))
		m.Header.Set(attestation.HeaderKey, kid)
		m.Header.Set(attestation.HeaderSig, sig)
	}
	if _, err := h.js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}

// judging returns a Checkpointer of s that judges the log, its tree
// stored where serve keeps it (OpenStoredTree of s.dir).
func judging(t testing.TB, s *signed) *Checkpointer {
	t.Helper()
	cp := checkpointer(t, s.host)
	tree, err := OpenStoredTree(s.dir, cp.Origin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	cp.Tree, cp.Judge = tree, s.log.NewJudger(s.admin.Public())
	return cp
}

// fillSigned writes seq 3 s1, 4 s2, 5 output, 6 s3 (cwd
// /work/MARKER-s3), 7 an unsigned forgery s9, 8 s4.
func fillSigned(t *testing.T, s *signed) {
	t.Helper()
	appendStarted(t, s.log, "s1", "/work/a")
	appendStarted(t, s.log, "s2", "/work/b")
	output(t, s.js, "c1", "chunk\n")
	appendStarted(t, s.log, "s3", "/work/MARKER-s3")
	forgeStarted(t, s.host, "s9", nil)
	appendStarted(t, s.log, "s4", "/work/d")
}

// reader opens s's log with a Verifier of its own trusting s's admin key.
func reader(t testing.TB, s *signed) *natslog.Log {
	t.Helper()
	l, err := natslog.Open(t.Context(), s.srv.Conn(), natslog.Config{Verifier: attestation.NewVerifier(s.admin.Public())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// readLine is what a test compares of one record a read yields.
type readLine struct {
	Seq         uint64
	Quarantined bool
	Signer      events.Signer
}

// readAll reads l whole, quarantined events marked, and returns what it
// yielded and the error that ended it.
func readAll(ctx context.Context, l *natslog.Log) ([]readLine, error) {
	var out []readLine
	ctx = events.WithQuarantined(ctx)
	for r, err := range l.Read(ctx, 1) {
		if err != nil {
			return out, err
		}
		out = append(out, readLine{r.Seq, r.Quarantined, r.Signer})
	}
	return out, nil
}

// fastPath takes the fast path of s's last statement on l, trusting s's
// checkpoint key, and counts the messages it checks.
func fastPath(t *testing.T, s *signed, l *natslog.Log) (*natslog.Judged, *atomic.Int64) {
	t.Helper()
	j, why, err := FastPath(t.Context(), l, s.js, keys(t, s.dir), s.dir)
	if err != nil || j == nil {
		t.Fatalf("FastPath: %v, %q; want one", err, why)
	}
	var n atomic.Int64
	check := j.Check
	j.Check = func(m natslog.Msg) error { n.Add(1); return check(m) }
	if checkHeader := j.CheckHeader; checkHeader != nil {
		j.CheckHeader = func(m natslog.Msg, h *natslog.RawHeader) error { n.Add(1); return checkHeader(m, h) }
	}
	l.SetJudged(j)
	return j, &n
}

func TestFastPath_AgreesWithEverySignatureVerified(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	if _, _, err := judging(t, s).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	slow, err := readAll(t.Context(), reader(t, s))
	if err != nil {
		t.Fatal(err)
	}
	fl := reader(t, s)
	j, checked := fastPath(t, s, fl)
	if j.Through != 8 || len(j.Quarantined) != 1 || j.Quarantined[7].Status != attestation.Unsigned {
		t.Fatalf("statement: through %d, quarantined %+v; want 8, seq 7 unsigned", j.Through, j.Quarantined)
	}
	fast, err := readAll(t.Context(), fl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fast) != len(slow) {
		t.Fatalf("fast path read %d records, every signature verified %d", len(fast), len(slow))
	}
	for i := range fast {
		if fast[i] != slow[i] {
			t.Errorf("record %d: fast path %+v, every signature verified %+v", i, fast[i], slow[i])
		}
	}
	if got := checked.Load(); got != 8 { // every message of seq 1..8, the output at seq 5 too
		t.Errorf("fast path checked %d messages against the tree, want 8", got)
	}
	qs, _ := fl.Quarantined()
	if len(qs) != 1 || qs[0].Seq != 7 || qs[0].Verdict.Status != attestation.Unsigned || qs[0].Type != "session.started" {
		t.Errorf("quarantined %+v, want seq 7 unsigned", qs)
	}
	// A session's streamed load (audit's) on the fast path loads what a
	// load verifying every signature does.
	for _, id := range []string{"s1", "s3", "s9", "s4"} {
		agg := events.Aggregate{Kind: events.KindSession, ID: id}
		want, wantLast, err := reader(t, s).Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		sl := reader(t, s)
		fastPath(t, s, sl)
		got, gotLast, err := sl.LoadStreamed(t.Context(), agg)
		if err != nil || gotLast != wantLast || !slices.EqualFunc(got, want, func(a, b events.Record) bool { return a.Seq == b.Seq && a.ID == b.ID && a.Signer == b.Signer }) {
			t.Errorf("streamed load of %s on the fast path = %+v, last %d, %v; every signature verified: %+v, last %d", agg, got, gotLast, err, want, wantLast)
		}
	}
}

// A message the server dropped as damaged (a byte flipped in its block
// file) inside the statement's range is named at its sequence by a read
// on the fast path, which folds nothing from it on.
func TestFastPath_DroppedMessageInRangeNamedAtItsSequence(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	if _, _, err := judging(t, s).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.host.stop()
	flipByte(t, s.blockFile(), "MARKER-s3") // seq 6
	s.host = start(t, s.dir)
	l := reader(t, s)
	fastPath(t, s, l)
	got, err := readAll(t.Context(), l)
	if err == nil || !strings.Contains(err.Error(), "seq 6: missing") {
		t.Fatalf("read %+v: %v, want seq 6 named missing", got, err)
	}
	for _, r := range got {
		if r.Seq >= 6 {
			t.Errorf("read yielded seq %d past the missing message", r.Seq)
		}
	}
}

// rewritten makes s's stream hold the same messages with seq's body
// edited, as a store rewritten under the server would, and states serve's
// judgment of the log as it was (its tree and root) for the stream now:
// the statement and stored hashes a reader then finds.
func rewritten(t *testing.T, s *signed, cp *Checkpointer, seq uint64, edit func([]byte) []byte) {
	t.Helper()
	rewrittenMsg(t, s, cp, seq, func(m *nats.Msg) { m.Data = edit(m.Data) })
}

// rewrittenMsg is rewritten with seq's message, headers and body, edited
// by edit.
func rewrittenMsg(t *testing.T, s *signed, cp *Checkpointer, seq uint64, edit func(*nats.Msg)) {
	t.Helper()
	ctx := t.Context()
	var msgs []natslog.Msg
	for m, err := range s.log.ReadRaw(ctx, natslog.StreamSubjects, 1) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if err := s.js.DeleteStream(ctx, natslog.StreamName); err != nil {
		t.Fatal(err)
	}
	if _, err := s.js.CreateStream(ctx, natslog.Config{}.StreamConfig()); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		nm := nats.NewMsg(m.Subject)
		nm.Header, nm.Data = m.Header, m.Data
		if m.Seq == seq {
			edit(nm)
		}
		if _, err := s.js.PublishMsg(ctx, nm); err != nil {
			t.Fatal(err)
		}
	}
	id, err := s.log.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root, err := cp.Tree.Root(cp.Tree.Size())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := OpenStoredTree(s.dir, Origin(id))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cp.Tree.Size() {
		h, err := cp.Tree.Leaf(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.AppendHash(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tree.Close(); err != nil {
		t.Fatal(err)
	}
	j := Judgment{Checkpoint: Checkpoint{Origin: Origin(id), Size: cp.Tree.Size(), Root: root}, Quarantined: cp.Judge.Quarantined()}
	signedJ, err := j.Sign(cp.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := PublishJudgment(ctx, s.js, 1, signedJ); err != nil {
		t.Fatal(err)
	}
}

// A byte changed in an event the statement covers is not the leaf the
// signed root binds: a read on the fast path stops there, naming its
// sequence, and folds nothing from it on; so does a load of its subject
// (audit's read).
func TestFastPath_ChangedByteInRangeNamedAtItsSequence(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	cp := judging(t, s)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	rewritten(t, s, cp, 6, func(b []byte) []byte { return bytes.Replace(b, []byte("MARKER-s3"), []byte("MARKER-s7"), 1) })
	l := reader(t, s)
	fastPath(t, s, l)
	got, err := readAll(t.Context(), l)
	if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") {
		t.Fatalf("read %+v: %v, want seq 6 named", got, err)
	}
	for _, r := range got {
		if r.Seq >= 6 {
			t.Errorf("read yielded seq %d past the changed message", r.Seq)
		}
	}
	_, _, err = l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s3"})
	if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") {
		t.Fatalf("load of s3: %v, want seq 6 named", err)
	}
	recs, _, err := l.LoadStreamed(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s3"})
	if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") || recs != nil {
		t.Fatalf("streamed load of s3: %d records, %v; want none, seq 6 named", len(recs), err)
	}
}

// A load of a subject started before the fast path was set (audit
// starts its read while it proves the tree: natslog.Log.StartLoad)
// judges every message with the fast path set by the time it reads
// them: the changed byte is named at its sequence, nothing from it on is
// handed over, and every message before it was checked against the
// tree.
func TestFastPath_LoadStartedBeforeItNamesAChangedByte(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	cp := judging(t, s)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	rewritten(t, s, cp, 6, func(b []byte) []byte { return bytes.Replace(b, []byte("MARKER-s3"), []byte("MARKER-s7"), 1) })
	l := reader(t, s)
	st := l.StartLoad(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s3"})
	defer st.Close()
	_, checked := fastPath(t, s, l)
	var got []uint64
	_, err := st.LoadEach(t.Context(), nil, func(r events.Record) error {
		got = append(got, r.Seq)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") {
		t.Fatalf("started load of s3: %v (handed %v), want seq 6 named", err, got)
	}
	for _, seq := range got {
		if seq >= 6 {
			t.Errorf("started load handed seq %d, past the changed message", seq)
		}
	}
	if checked.Load() == 0 {
		t.Error("no message was checked against the tree")
	}
}

// The stored tree is read while the statement is: a tree read before a
// statement it does not yet hold the leaves of (serve stored them and
// stated them in between) is read again after it, and the fast path is
// taken, as when the tree was read after the statement.
func TestFastPath_TreeReadBeforeTheStatementIsReadAgain(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	cp := judging(t, s)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	l := reader(t, s)
	var reads []int64
	j, why, err := lastStatement(t.Context(), l, s.js, keys(t, s.dir), func(origin string) (*Tree, error) {
		full, err := LoadTree(TreePath(s.dir, origin))
		if err != nil {
			return nil, err
		}
		if len(reads) > 0 {
			reads = append(reads, full.Size())
			return full, nil
		}
		// As read before the last leaf was stored.
		short := NewTree()
		for i := range full.Size() - 1 {
			h, err := full.Leaf(i)
			if err != nil {
				return nil, err
			}
			if err := short.AppendHash(h); err != nil {
				return nil, err
			}
		}
		reads = append(reads, short.Size())
		return short, nil
	})
	if err != nil || j == nil {
		t.Fatalf("lastStatement = %v, %q, %v; want the fast path", j, why, err)
	}
	if len(reads) != 2 || reads[1] != int64(j.Through) {
		t.Errorf("tree read %d times, sizes %v; want a short one, then one of %d leaves", len(reads), reads, j.Through)
	}
}

// A statement no trusted checkpoint key signed gives no fast path: the
// reader verifies every signature, and a log with no statement at all
// (checkpointed before serve stated its judgments) reads as before.
func TestFastPath_StatementOfAnUntrustedKeyGivesNone(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	cp := checkpointer(t, s.host) // no Judge: a checkpoint without a statement
	cp.Tree, _ = OpenStoredTree(s.dir, cp.Origin)
	t.Cleanup(func() { cp.Tree.Close() })
	_, cpSeq, err := cp.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l := reader(t, s)
	if j, why, err := FastPath(t.Context(), l, s.js, keys(t, s.dir), s.dir); err != nil || j != nil || !strings.Contains(why, "no judgment statement") {
		t.Fatalf("FastPath of a log without statements: %v, %q, %v; want none, no statement", j, why, err)
	}
	// Another key's statement, the checkpoint's size and root, which
	// leaves the forgery at seq 7 out.
	skey, _, err := note.GenerateKey(rand.Reader, "logbook-checkpoint/intruder")
	if err != nil {
		t.Fatal(err)
	}
	other, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	root, err := cp.Tree.Root(8)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := Judgment{Checkpoint: Checkpoint{Origin: cp.Origin, Size: 8, Root: root}}.Sign(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := PublishJudgment(t.Context(), s.js, cpSeq, forged); err != nil {
		t.Fatal(err)
	}
	j, why, err := FastPath(t.Context(), l, s.js, keys(t, s.dir), s.dir)
	if err != nil || j != nil || !strings.Contains(why, "judgment") {
		t.Fatalf("FastPath of a statement by an untrusted key: %v, %q, %v; want none", j, why, err)
	}
	got, err := readAll(t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.Seq == 7 && !r.Quarantined {
			t.Fatalf("seq 7, the unsigned forgery, folded: %+v", r)
		}
	}
}

// An event past the statement's size is verified by its signature.
func TestFastPath_EventPastTheStatementVerifiedBySignature(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	if _, _, err := judging(t, s).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	forgeStarted(t, s.host, "s10", s.serve)  // seq 9: serve's key, a signature of other bytes
	appendStarted(t, s.log, "s5", "/work/e") // seq 10
	l := reader(t, s)
	_, checked := fastPath(t, s, l)
	got, err := readAll(t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 || !got[7].Quarantined || got[7].Seq != 9 || got[8].Quarantined || got[8].Signer.Status != string(attestation.Attested) {
		t.Fatalf("read %+v; want seq 9 quarantined, seq 10 attested", got)
	}
	q, _ := l.Quarantined()
	if len(q) != 2 || q[1].Seq != 9 || q[1].Verdict.Status != attestation.BadSignature {
		t.Fatalf("quarantined %+v; want seq 7 (stated) and seq 9 bad-signature", q)
	}
	if got := checked.Load(); got != 8 {
		t.Errorf("fast path checked %d messages, want the 8 of seq 1..8", got)
	}
}

// The statement's text round-trips, and bad text is refused naming the
// line.
func TestJudgmentText(t *testing.T) {
	j := Judgment{Checkpoint: Checkpoint{Origin: OriginPrefix + "x", Size: 12},
		Quarantined: map[uint64]attestation.Verdict{
			9: {Status: attestation.BadSignature, Key: "k\n", Why: "the signature \"x\" does not verify"},
			3: {Status: attestation.Unsigned, Why: "no Lb-Key and Lb-Sig headers"},
		}}
	back, err := ParseJudgment(j.String())
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != j.String() || len(back.Quarantined) != 2 || back.Quarantined[9].Key != "k\n" {
		t.Fatalf("round trip:\n%s\nback:\n%s", j, back)
	}
	for _, bad := range []struct{ text, want string }{
		{strings.Replace(j.String(), "quarantined 2", "quarantined 3", 1), "line 5"},
		{strings.Replace(j.String(), "\n9 ", "\n2 ", 1), "line 7"},
		{strings.Replace(j.String(), "\n9 ", "\n13 ", 1), "line 7"},
		{strings.Replace(j.String(), `"unsigned"`, `"attested"`, 1), "line 6"},
		{strings.Replace(j.String(), "logbook-judgment/v1", "logbook-judgment/v2", 1), "logbook-judgment/v1"},
	} {
		if _, err := ParseJudgment(bad.text); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseJudgment(%q): %v, want an error naming %s", bad.text, err, bad.want)
		}
	}
}

// Prove refuses stored hashes that do not make the signed root, and a
// leaf changed in the stored hashes under an unchanged subtree hash is
// caught when its chunk is first used.
func TestProveRefusesChangedStoredHashes(t *testing.T) {
	tree := NewTree()
	for i := range 2*1024 + 5 {
		if err := tree.AppendHash(LeafHash(natslog.Msg{Seq: uint64(i + 1), Subject: "lb.out.c", Data: []byte("x")})); err != nil {
			t.Fatal(err)
		}
	}
	n := tree.Size()
	root, err := tree.Root(n)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prove(tree, n, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(natslog.Msg{Seq: 1030, Subject: "lb.out.c", Data: []byte("x")}); err != nil {
		t.Fatalf("Check of an unchanged leaf: %v", err)
	}
	if err := p.Check(natslog.Msg{Seq: 1030, Subject: "lb.out.c", Data: []byte("y")}); err == nil || !strings.Contains(err.Error(), "seq 1030:") {
		t.Fatalf("Check of a changed leaf: %v, want seq 1030 named", err)
	}
	if _, err := Prove(tree, n, tlogHash("other root")); err == nil {
		t.Fatal("Prove against another root: no error")
	}
	// Change leaf 3's stored hash (chunk 0) and nothing above it.
	tree.hashes[3] = tlogHash("changed")
	p, err = Prove(tree, n, root)
	if err != nil {
		t.Fatalf("Prove with a changed leaf under its chunk's hash: %v (the chunk hash still binds)", err)
	}
	if err := p.Check(natslog.Msg{Seq: 1, Subject: "lb.out.c", Data: []byte("x")}); err == nil || !strings.Contains(err.Error(), "were changed or damaged: move merkle/ aside") {
		t.Fatalf("Check in a chunk whose stored leaves were changed: %v", err)
	}
}

// A chunk's root made level by level (chunkRoot) is the one rootOf
// makes, and the stored subtree hash of the chunk, for each chunk of a
// tree, with one stored leaf changed in one of them.
func TestChunkRootIsRootOf(t *testing.T) {
	tree := NewTree()
	for i := range 3*256 + 7 {
		if err := tree.AppendHash(tlogHash(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	tree.hashes[tlog.StoredHashIndex(0, 300)] = tlogHash("changed")
	n := tree.Size()
	p := &Proven{t: tree, hashes: tree.hashes, n: n, full: n >> chunkLevel}
	for c := range p.full {
		lo := c << chunkLevel
		got, err := p.chunkRoot(lo)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.rootOf(lo, lo+1<<chunkLevel, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("chunk %d: chunkRoot %s, rootOf %s", c, got, want)
		}
		if stored, err := p.stored(chunkLevel, c); err != nil || (got == stored) != (c != 1) {
			t.Errorf("chunk %d: chunkRoot %s, stored subtree hash %s (%v)", c, got, stored, err)
		}
	}
}

// A Proven checks the leaves it was proven for while the tree it was
// proven from grows past them (its hashes moved to a larger array), from
// several goroutines at once.
func TestProvenWhileTreeGrows(t *testing.T) {
	leaf := func(seq uint64) natslog.Msg {
		return natslog.Msg{Seq: seq, Subject: "lb.out.c", Data: []byte(fmt.Sprint(seq))}
	}
	tree := NewTree()
	for i := range 1024 + 3 {
		if err := tree.AppendHash(LeafHash(leaf(uint64(i + 1)))); err != nil {
			t.Fatal(err)
		}
	}
	n := tree.Size()
	root, err := tree.Root(n)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prove(tree, n, root)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 4096 {
			if err := tree.AppendHash(LeafHash(leaf(uint64(n) + uint64(i) + 1))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for seq := uint64(1); seq <= uint64(n); seq++ {
				if err := p.Check(leaf(seq)); err != nil {
					t.Errorf("Check while the tree grows: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.Check(leaf(uint64(n) + 1)); err == nil {
		t.Fatal("Check of a leaf past the proven size: no error")
	}
	if err := p.Check(natslog.Msg{Seq: 7, Subject: "lb.out.c", Data: []byte("8")}); err == nil || !strings.Contains(err.Error(), "seq 7:") {
		t.Fatalf("Check of a changed leaf: %v, want seq 7 named", err)
	}
}

func tlogHash(s string) (h [32]byte) {
	copy(h[:], base64.StdEncoding.EncodeToString([]byte(s)))
	return h
}

// LeafHash hashes what LeafData returns, as tlog.RecordHash does.
func TestLeafHashIsRecordHashOfLeafData(t *testing.T) {
	m := natslog.Msg{Seq: 42, Subject: "lb.ev.session.s1", Data: []byte(`{"id":"x"}`),
		Header: nats.Header{"Lb-Sig": {"c2ln"}, "Lb-Key": {"k1"}, "Nats-Msg-Id": {"x"}, "Lb-Type": {"a", "b"}}}
	if got, want := LeafHash(m), tlog.RecordHash(LeafData(m)); got != want {
		t.Fatalf("LeafHash %s, RecordHash(LeafData) %s", got, want)
	}
}

// An event the statement covers changed so that it no longer decodes is
// refused as a message that is not its leaf, naming its sequence, not
// passed over as an undecodable event: a read on the fast path checks
// each message it decodes against its leaf, and the leaf's refusal is
// the one the read stops with, whichever of the two it came to first.
// The messages before it, in the same run of messages the read decodes
// at once, are handed over; none from it on.
func TestFastPath_ChangedByteThatBreaksDecodingNamedAtItsSequence(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	cp := judging(t, s)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	rewritten(t, s, cp, 6, func(b []byte) []byte { return b[:len(b)/2] })
	l := reader(t, s)
	fastPath(t, s, l)
	got, err := readAll(t.Context(), l)
	if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") {
		t.Fatalf("read %+v: %v, want seq 6 named as not its leaf", got, err)
	}
	var seqs []uint64
	for _, r := range got {
		seqs = append(seqs, r.Seq)
	}
	if want := []uint64{1, 2, 3, 4}; !slices.Equal(seqs, want) {
		t.Errorf("read handed seqs %v, want %v (those before the changed message)", seqs, want)
	}
	if _, q := l.Quarantined(); q != 0 {
		t.Errorf("the read quarantined %d events; the changed one is refused, not quarantined", q)
	}
}
