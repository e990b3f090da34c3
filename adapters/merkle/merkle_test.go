package merkle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
)

// waitCosigned waits for the witness's next cosignature.
func waitCosigned(t *testing.T, cosigned chan Checkpoint, refused chan Refusal) Checkpoint {
	t.Helper()
	select {
	case c := <-cosigned:
		return c
	case r := <-refused:
		t.Fatalf("refused: %v", r)
	case <-time.After(time.Minute):
		t.Fatal("no cosignature in a minute")
	}
	return Checkpoint{}
}

// wantFirstBad fails the test unless rep's first problem is at stream
// sequence seq.
func wantFirstBad(t *testing.T, rep Report, seq uint64) {
	t.Helper()
	p, ok := rep.FirstBad()
	if !ok || p.Seq != seq {
		t.Fatalf("first bad %+v (%v), want seq %d", p, ok, seq)
	}
}

// verify runs Verify with h's stored hashes under origin.
func verify(t *testing.T, h *host, k Keys, stored map[string]*Tree) Report {
	t.Helper()
	rep, err := Verify(t.Context(), h.log, h.js, k, stored)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range rep.Problems {
		t.Logf("problem at seq %d: %s", p.Seq, p.What)
	}
	return rep
}

// setup fills a log on a fresh host, publishes a checkpoint of it and has
// a witness (another data dir, its own connection) co-sign it; the
// witness then stops.
func setup(t *testing.T) (h *host, cp *Checkpointer, wdir string) {
	h = start(t, t.TempDir())
	fill(t, h)
	cp = checkpointer(t, h)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	wdir = t.TempDir()
	if _, err := LoadWitnessKey(wdir); err != nil {
		t.Fatal(err)
	}
	nc, err := h.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	wl := natslogtest.Open(t, nc)
	cos, ref, stop := witnessing(t, wdir, wl, nc, keys(t, h.dir))
	if got := waitCosigned(t, cos, ref); got.Size != 7 {
		t.Fatalf("co-signed size %d, want 7", got.Size)
	}
	stop()
	return h, cp, wdir
}

func TestVerifyAgreesOnAnUntouchedLog(t *testing.T) {
	h, cp, wdir := setup(t)
	rep := verify(t, h, keys(t, h.dir, wdir), map[string]*Tree{cp.Origin: cp.Tree})
	if len(rep.Problems) > 0 || rep.Size != 7 || len(rep.Checkpoints) != 1 {
		t.Fatalf("got size %d, %d checkpoints, problems %v; want 7, 1, none", rep.Size, len(rep.Checkpoints), rep.Problems)
	}
	if v := rep.Checkpoints[0]; !v.Agrees || len(v.Witnesses) != 1 {
		t.Fatalf("checkpoint %+v: want agreeing, one witness", v)
	}
	for seq := uint64(1); seq <= 7; seq++ {
		inc, err := rep.Prove(seq)
		if err != nil {
			t.Fatalf("Prove(%d): %v", seq, err)
		}
		if err := tlog.CheckRecord(inc.Proof, 7, inc.Checkpoint.Checkpoint.Root, int64(seq)-1, inc.Leaf); err != nil {
			t.Fatalf("proof of %d: %v", seq, err)
		}
	}
	if _, err := rep.Prove(8); err == nil {
		t.Fatal("Prove(8) of a 7-message log: no error")
	}
}

func TestVerifyNamesAFlippedByteInABlockFile(t *testing.T) {
	h, cp, wdir := setup(t)
	origin := cp.Origin
	h.stop()
	flipByte(t, h.blockFile(), "MARKER-s4") // seq 5
	h = start(t, h.dir)
	rep := verify(t, h, keys(t, h.dir, wdir), map[string]*Tree{origin: cp.Tree})
	wantFirstBad(t, rep, 5)
}

func TestVerifyNamesADeletedMessage(t *testing.T) {
	h, cp, wdir := setup(t)
	// The stream denies message deletes, and the server refuses to turn
	// that off. An admin can still lower max_msgs_per_subject: the server
	// then drops the older of lb.out.c1's two messages (seq 3), and the
	// limit goes back to unlimited.
	ctx := t.Context()
	cfg := natslog.Config{}.StreamConfig()
	cfg.MaxMsgsPerSubject = 1
	if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.MaxMsgsPerSubject = -1
	if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, h, keys(t, h.dir, wdir), map[string]*Tree{cp.Origin: cp.Tree})
	p, ok := rep.FirstBad()
	if !ok || p.Seq != 3 || !strings.Contains(p.What, "missing") {
		t.Fatalf("first bad %+v (%v), want seq 3 missing", p, ok)
	}
	// And a tree built from the stream now signs no checkpoint over the
	// hole.
	fresh := &Checkpointer{Log: cp.Log, JS: cp.JS, Tree: NewTree(), Signer: cp.Signer, Origin: cp.Origin}
	if _, _, err := fresh.Once(ctx); err == nil || !strings.Contains(err.Error(), "seq 3: missing") {
		t.Fatalf("Once over a log with a hole: %v, want seq 3 missing", err)
	}
}

func TestVerifyNamesAReorderedStream(t *testing.T) {
	h, cp, wdir := setup(t)
	ctx := t.Context()
	var msgs []natslog.Msg
	for m, err := range h.log.ReadRaw(ctx, natslog.StreamSubjects, 1) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	msgs[3], msgs[4] = msgs[4], msgs[3] // seq 4 and 5 swap
	if err := h.js.DeleteStream(ctx, natslog.StreamName); err != nil {
		t.Fatal(err)
	}
	if _, err := h.js.CreateStream(ctx, natslog.Config{}.StreamConfig()); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		nm := nats.NewMsg(m.Subject)
		nm.Header, nm.Data = m.Header, m.Data
		if _, err := h.js.PublishMsg(ctx, nm); err != nil {
			t.Fatal(err)
		}
	}
	l, err := natslog.Open(ctx, h.srv.Conn(), natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := Verify(ctx, l, h.js, keys(t, h.dir, wdir), map[string]*Tree{cp.Origin: cp.Tree})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Logf("problem at seq %d: %s", p.Seq, p.What)
	}
	wantFirstBad(t, rep, 4)
}

func TestWitnessRefusesAForkedCheckpoint(t *testing.T) {
	h, cp, wdir := setup(t)
	ctx := t.Context()
	appendStarted(t, h.log, "s6", "/work/f") // seq 8
	appendStarted(t, h.log, "s7", "/work/g") // seq 9
	// The fork: seq 1..7 as stored, 8 and 9 another log's, signed with
	// the right key.
	fork := NewTree()
	for i := range int64(7) {
		lh, err := cp.Tree.Leaf(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := fork.AppendHash(lh); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"forged 8", "forged 9"} {
		if err := fork.AppendHash(tlog.RecordHash([]byte(s))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := fork.Root(9)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := Checkpoint{Origin: cp.Origin, Size: 9, Root: root}.Sign(cp.Signer)
	if err != nil {
		t.Fatal(err)
	}
	// A witness on its own connection sees the honest checkpoint, then
	// the fork.
	nc, err := h.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	wl, err := natslog.Open(ctx, nc, natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wl.Close() })
	w2 := t.TempDir()
	// Its Cleanup, made after those above, stops the witness before its
	// connection closes under it.
	cos, ref, _ := witnessing(t, w2, wl, nc, keys(t, h.dir))
	waitCosigned(t, cos, ref) // the honest checkpoint of size 7
	if _, err := PublishCheckpoint(ctx, h.js, signed); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ref:
		if r.From != 8 || r.To != 9 || !strings.Contains(r.Error(), "first differing sequence in 8..9") {
			t.Fatalf("refusal %v: want seq 8..9", r)
		}
	case c := <-cos:
		t.Fatalf("co-signed the fork %+v", c)
	case <-time.After(time.Minute):
		t.Fatal("no refusal in a minute")
	}
	st, err := ReadWitnessState(filepath.Join(w2, "witness.json"))
	if err != nil || st.Refused != 1 || st.Cosigned != 1 {
		t.Fatalf("state %+v, %v: want 1 refused, 1 co-signed", st, err)
	}
	// The honest checkpoint of size 9 is co-signed.
	if _, _, err := cp.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := waitCosigned(t, cos, ref); got.Size != 9 {
		t.Fatalf("co-signed size %d, want 9", got.Size)
	}
	// verify names the fork: a signed checkpoint the log disagrees with.
	rep := verify(t, h, keys(t, h.dir, wdir, w2), map[string]*Tree{cp.Origin: cp.Tree})
	wantFirstBad(t, rep, 8)
}

// TestTreeSyncAfterAFullDisk: a Sync that cannot write (a full disk)
// changes nothing it relies on: once the disk takes writes again, the
// next Sync writes every hash at its place, and the file holds the tree.
func TestTreeSyncAfterAFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.hashes")
	tr, err := OpenTree(path)
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	file := tr.f
	tr.f = full
	for i := range 5 {
		if err := tr.AppendHash(tlog.RecordHash([]byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Sync(); err == nil {
		t.Fatal("Sync on a full disk: no error")
	}
	if err := tr.AppendHash(tlog.RecordHash([]byte{5})); err != nil {
		t.Fatalf("append while the disk is full: %v", err)
	}
	tr.f = file
	if err := tr.Sync(); err != nil {
		t.Fatalf("Sync once the disk takes writes: %v", err)
	}
	want, err := tr.Root(6)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := LoadTree(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := back.Root(6); err != nil || got != want {
		t.Fatalf("the file's tree: root %v, %v; want %v", got, err, want)
	}
}

// TestVerifyBlamesADamagedStoredHashesFile: a locally stored leaf hash
// changed while the log still agrees with a trusted checkpoint over it:
// the problem names the stored hashes file as what changed, not the log.
func TestVerifyBlamesADamagedStoredHashesFile(t *testing.T) {
	h, cp, wdir := setup(t)
	bad := NewTree()
	for i := range cp.Tree.Size() {
		lh, err := cp.Tree.Leaf(i)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			lh[0] ^= 1
		}
		if err := bad.AppendHash(lh); err != nil {
			t.Fatal(err)
		}
	}
	rep := verify(t, h, keys(t, h.dir, wdir), map[string]*Tree{cp.Origin: bad})
	wantFirstBad(t, rep, 3)
	if p, _ := rep.FirstBad(); !strings.Contains(p.What, "the stored hashes file") || !strings.Contains(p.What, "is what changed") {
		t.Errorf("problem %q; want the stored hashes file named as what changed", p.What)
	}
}
