package attestation

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

func TestBatchStatement(t *testing.T) {
	var root tlog.Hash
	for i := range root {
		root[i] = byte(i)
	}
	got := string(BatchStatement(17, root))
	want := "logbook batch signature v1\n17\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
	if got != want {
		t.Errorf("BatchStatement = %q, want %q", got, want)
	}
	if strings.HasPrefix(got, signedPrefix) || strings.HasPrefix(string(Signed("s", "", nil)), batchPrefix) {
		t.Error("the batch statement and the single signed form share a prefix")
	}
	if BatchLeaf("s", "3", []byte("d")) != tlog.RecordHash(Signed("s", "3", []byte("d"))) {
		t.Error("BatchLeaf is not the RFC 6962 leaf hash of Signed")
	}
	for _, d := range [][]byte{nil, []byte("d"), []byte(strings.Repeat("x", 5000))} { // on the stack, and past it
		for _, e := range []string{"", "0", "12345"} {
			if batchLeaf("lb.ev.session.s", e, d) != BatchLeaf("lb.ev.session.s", e, d) {
				t.Errorf("batchLeaf of %d bytes, expect %q: not BatchLeaf", len(d), e)
			}
		}
	}
}

// batchMsgs signs n messages with k as one batch and returns them as a
// reader has them.
func batchMsgs(t *testing.T, k *Key, n int) []Message {
	t.Helper()
	items := make([]Signable, n)
	for i := range items {
		items[i] = Signable{Subject: fmt.Sprintf("lb.ev.session.s%d", i), Expect: map[bool]string{true: "0"}[i == 0], Data: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	sigs, err := k.SignBatch(items)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Message, n)
	for i, s := range sigs {
		out[i] = Message{Seq: uint64(i + 1), Subject: items[i].Subject, Expect: items[i].Expect, Data: items[i].Data,
			KeyID: s.Key, Batch: s.Batch, Root: s.Root, BatchSig: s.Sig, Proof: s.Proof}
	}
	return out
}

// Every message of a batch of any size verifies alone, and the batch's
// statement is verified once however many of its messages are judged.
func TestSignBatch_EachMessageAlone(t *testing.T) {
	admin, err := NewKey("admin@h", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3, 4, 5, 7, 8, 9, 64, 1000} {
		v := NewVerifier(admin.Public())
		msgs := batchMsgs(t, admin, n)
		for i, m := range msgs {
			if got := v.Precheck(m); got != preGood {
				t.Fatalf("n=%d: message %d (%s): Precheck = %d, want verified", n, i, m.Batch, got)
			}
			if m.Batch != fmt.Sprintf("%d/%d", i, n) || m.Root != msgs[0].Root || m.BatchSig != msgs[0].BatchSig {
				t.Fatalf("n=%d: message %d carries %s %s %s", n, i, m.Batch, m.Root, m.BatchSig)
			}
		}
		if got := v.Checked(); got != 1 {
			t.Errorf("n=%d: %d Ed25519 verifications, want 1 (the statement, once)", n, got)
		}
	}
	if _, err := admin.SignBatch([]Signable{{Subject: "s"}}); err == nil {
		t.Error("SignBatch of one message: no error, want one (it is signed alone)")
	}
}

// A message whose batch headers were altered does not verify, and its
// verdict names what is wrong with them.
func TestBatchForm_Malformed(t *testing.T) {
	admin, err := NewKey("admin@h", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewKey("admin@elsewhere", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	proofLen := func(m Message) int { b, _ := base64.StdEncoding.DecodeString(m.Proof); return len(b) }
	for _, tt := range []struct {
		name string
		edit func(ms []Message) Message
		why  string // in parseBatch's error; "" when the headers parse
	}{
		{"one byte of the data", func(ms []Message) Message { m := ms[1]; m.Data = []byte(`{"n":9}`); return m }, ""},
		{"the subject", func(ms []Message) Message { m := ms[1]; m.Subject = "lb.ev.session.other"; return m }, ""},
		{"another message's proof", func(ms []Message) Message { m := ms[1]; m.Proof = ms[2].Proof; return m }, ""},
		{"another message's index", func(ms []Message) Message { m := ms[1]; m.Batch = ms[2].Batch; return m }, ""},
		{"a count one more", func(ms []Message) Message { m := ms[1]; m.Batch = "1/6"; return m }, ""},
		{"a count one less", func(ms []Message) Message { m := ms[1]; m.Batch = "1/4"; return m }, ""},
		{"a count of one", func(ms []Message) Message { m := ms[0]; m.Batch = "0/1"; return m }, "2 to"},
		{"an index past the count", func(ms []Message) Message { m := ms[1]; m.Batch = "5/5"; return m }, "index past"},
		{"an index with a leading zero", func(ms []Message) Message { m := ms[1]; m.Batch = "01/5"; return m }, "decimal"},
		{"a signed index", func(ms []Message) Message { m := ms[1]; m.Batch = "+1/5"; return m }, "decimal"},
		{"no slash", func(ms []Message) Message { m := ms[1]; m.Batch = "1"; return m }, "<index>/<n>"},
		{"a proof one hash too long", func(ms []Message) Message {
			m := ms[1]
			b, _ := base64.StdEncoding.DecodeString(m.Proof)
			m.Proof = base64.StdEncoding.EncodeToString(append(b, b[:32]...))
			return m
		}, ""},
		{"a proof one hash too short", func(ms []Message) Message {
			m := ms[1]
			b, _ := base64.StdEncoding.DecodeString(m.Proof)
			m.Proof = base64.StdEncoding.EncodeToString(b[:len(b)-32])
			return m
		}, ""},
		{"a proof not base64", func(ms []Message) Message { m := ms[1]; m.Proof = "!!" + m.Proof[2:]; return m }, "Lb-Proof"},
		{"a proof of part of a hash", func(ms []Message) Message {
			m := ms[1]
			m.Proof = base64.StdEncoding.EncodeToString(make([]byte, proofLen(m)-1))
			return m
		}, "Lb-Proof"},
		{"an empty proof", func(ms []Message) Message { m := ms[1]; m.Proof = ""; return m }, "Lb-Proof"},
		{"another root", func(ms []Message) Message {
			m := ms[1]
			m.Root = base64.StdEncoding.EncodeToString(make([]byte, 32))
			return m
		}, ""},
		{"a short root", func(ms []Message) Message { m := ms[1]; m.Root = "AAAA"; return m }, "Lb-Root"},
		{"a short signature", func(ms []Message) Message { m := ms[1]; m.BatchSig = "AAAA"; return m }, "Lb-Batch-Sig"},
		{"the batch signed by another key", func(ms []Message) Message {
			m := batchMsgs(t, other, 5)[1]
			m.KeyID = admin.ID
			return m
		}, ""},
		{"a single signature as the batch's", func(ms []Message) Message {
			m := ms[1]
			_, m.BatchSig = admin.Sign(m.Subject, m.Expect, m.Data)
			return m
		}, ""},
		{"the batch's signature as a single one", func(ms []Message) Message {
			m := ms[1]
			m.Sig, m.Batch, m.Root, m.BatchSig, m.Proof = m.BatchSig, "", "", "", ""
			return m
		}, ""},
		{"both forms", func(ms []Message) Message {
			m := ms[1]
			_, m.Sig = admin.Sign(m.Subject, m.Expect, m.Data)
			return m
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVerifier(admin.Public())
			ms := batchMsgs(t, admin, 5)
			m := tt.edit(ms)
			if got := v.Precheck(m); got != preBad {
				t.Errorf("Precheck = %d, want a bad signature", got)
			}
			if m.batchForm() {
				_, err := parseBatch(m)
				switch {
				case tt.why == "" && err != nil:
					t.Errorf("parseBatch: %v, want the headers to parse", err)
				case tt.why != "" && (err == nil || !strings.Contains(err.Error(), tt.why)):
					t.Errorf("parseBatch: %v, want an error naming %q", err, tt.why)
				}
			}
			// The batch's other messages still verify.
			if got := v.Precheck(ms[3]); got != preGood {
				t.Errorf("an untouched message: Precheck = %d, want verified", got)
			}
			// Met after every message of its batch was proven, with
			// each node of the batch tree proven: refused still.
			v = NewVerifier(admin.Public())
			for i, o := range ms {
				if got := v.Precheck(o); got != preGood {
					t.Fatalf("message %d: Precheck = %d, want verified", i, got)
				}
			}
			if got := v.Precheck(m); got != preBad {
				t.Errorf("after the batch was proven: Precheck = %d, want a bad signature", got)
			}
		})
	}
	// A public key and signature that verify a statement do not verify
	// the single form of the same bytes, and the reverse.
	ms := batchMsgs(t, admin, 2)
	sig, _ := base64.StdEncoding.DecodeString(ms[0].BatchSig)
	if ed25519.Verify(admin.Public(), Signed(ms[0].Subject, ms[0].Expect, ms[0].Data), sig) {
		t.Error("a batch signature verifies as a single one")
	}
}

// batchTree's root and proofs are tlog's for every size: the tree hash
// of tlog.TreeHash over the same leaves, each proof tlog.ProveRecord's.
func TestBatchTree_IsTlogs(t *testing.T) {
	for n := 1; n <= 70; n++ {
		leaves := make([]tlog.Hash, n)
		var stored []tlog.Hash
		r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				out[i] = stored[x]
			}
			return out, nil
		})
		for i := range leaves {
			leaves[i] = tlog.RecordHash(fmt.Appendf(nil, "leaf %d", i))
			hs, err := tlog.StoredHashesForRecordHash(int64(i), leaves[i], r)
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, hs...)
		}
		root, proofs := batchTree(leaves)
		want, err := tlog.TreeHash(int64(n), r)
		if err != nil {
			t.Fatal(err)
		}
		if root != want {
			t.Fatalf("n=%d: root %s, tlog's %s", n, root, want)
		}
		for i := range leaves {
			p, err := tlog.ProveRecord(int64(n), int64(i), r)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(proofs[i]) != fmt.Sprint(p) {
				t.Fatalf("n=%d leaf %d: proof %v, tlog's %v", n, i, proofs[i], p)
			}
		}
	}
}

// The record of batch statements keeps the last rootSlots verdicts: a
// statement met again within them is not verified again, one dropped
// is, and a bad signature is never taken for a good one.
func TestRoots_KeepsTheLast(t *testing.T) {
	k, err := NewKey("admin@h", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	var rs roots
	var count atomic.Uint64
	statement := func(i int) ([]byte, []byte) {
		var root tlog.Hash
		root[0], root[1] = byte(i), byte(i>>8)
		st := BatchStatement(2, root)
		return st, ed25519.Sign(k.Private, st)
	}
	for i := range rootSlots + 1 {
		st, sig := statement(i)
		if !rs.verify(k.Public(), sig, st, &count) {
			t.Fatalf("statement %d does not verify", i)
		}
	}
	if len(rs.m) != rootSlots || count.Load() != rootSlots+1 {
		t.Fatalf("%d kept, %d verified; want %d kept, %d verified", len(rs.m), count.Load(), rootSlots, rootSlots+1)
	}
	st, sig := statement(rootSlots) // the newest: kept
	rs.verify(k.Public(), sig, st, &count)
	st, sig = statement(0) // the oldest: dropped
	rs.verify(k.Public(), sig, st, &count)
	if got := count.Load(); got != rootSlots+2 {
		t.Errorf("%d verifications, want %d (the dropped one again only)", got, rootSlots+2)
	}
	bad := append([]byte(nil), sig...)
	bad[0] ^= 1
	if rs.verify(k.Public(), bad, st, &count) {
		t.Error("a changed signature verifies")
	}
}

// A batch whose proof holds for one message and not for another is
// caught however much of its tree earlier proofs proved: a second
// message forged under the same root, signature and proof as a real
// one (its data, its subject or its expected sequence changed, or it
// claims another message's index) does not verify, before or after the
// real one, and the real one still does.
func TestBatchNodes_ForgedMemberCaught(t *testing.T) {
	admin, err := NewKey("admin@h", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3, 5, 8, 64, 1000} {
		ms := batchMsgs(t, admin, n)
		forgeries := map[string]Message{}
		m := ms[1]
		m.Data = append([]byte(nil), m.Data...)
		m.Data[len(m.Data)-2] ^= 1
		forgeries["data"] = m
		m = ms[1]
		m.Subject += "x"
		forgeries["subject"] = m
		m = ms[1]
		m.Expect = "7"
		forgeries["expect"] = m
		m = ms[1]
		m.Batch = fmt.Sprintf("0/%d", n) // the first message's index, its own proof
		forgeries["index"] = m
		m = ms[0]
		m.Proof = ms[1].Proof // its neighbour's proof
		forgeries["proof"] = m
		for name, f := range forgeries {
			v := NewVerifier(admin.Public())
			if got := v.Precheck(f); got != preBad {
				t.Errorf("n=%d, %s changed, met first: Precheck = %d, want a bad signature", n, name, got)
			}
			for i, o := range ms {
				if got := v.Precheck(o); got != preGood {
					t.Fatalf("n=%d: message %d: Precheck = %d, want verified", n, i, got)
				}
			}
			if got := v.Precheck(f); got != preBad {
				t.Errorf("n=%d, %s changed, met once every message was proven: Precheck = %d, want a bad signature", n, name, got)
			}
			if got := v.Checked(); got != 1 {
				t.Errorf("n=%d: %d Ed25519 verifications, want 1", n, got)
			}
		}
	}
}

// batchNodes.check answers as tlog.CheckRecord for every proof of every
// leaf of batch trees of 2 to 70 leaves, whole or with one hash changed,
// dropped or added, against the right leaf or another, whatever the
// nodes proven by the proofs checked before it.
func TestBatchNodes_IsCheckRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 2; n <= 70; n++ {
		leaves := make([]tlog.Hash, n)
		for i := range leaves {
			leaves[i] = tlog.RecordHash(fmt.Appendf(nil, "leaf %d", i))
		}
		root, proofs := batchTree(leaves)
		type try struct {
			proof tlog.RecordProof
			index int
			leaf  tlog.Hash
		}
		var tries []try
		for i, p := range proofs {
			tries = append(tries, try{p, i, leaves[i]}, try{p, i, leaves[(i+1)%n]}, try{p, (i + 1) % n, leaves[i]})
			for j := range p {
				q := append(tlog.RecordProof(nil), p...)
				q[j][rng.IntN(32)] ^= 1 << rng.IntN(8)
				tries = append(tries, try{q, i, leaves[i]})
			}
			tries = append(tries, try{p[:len(p)-1], i, leaves[i]}, try{append(append(tlog.RecordProof(nil), p...), leaves[i]), i, leaves[i]})
		}
		rng.Shuffle(len(tries), func(a, b int) { tries[a], tries[b] = tries[b], tries[a] })
		var rs roots
		for _, tr := range tries {
			want := tlog.CheckRecord(tr.proof, int64(n), root, int64(tr.index), tr.leaf) == nil
			if got := rs.tree(int64(n), root).check(tr.proof, int64(tr.index), tr.leaf); got != want {
				t.Fatalf("n=%d, leaf %d: check = %v, CheckRecord says %v", n, tr.index, got, want)
			}
		}
		bn := rs.tree(int64(n), root)
		for i, k := range bn.known {
			if !k && int64(i) != inorder(0, int64(n)) { // the root is compared, not kept
				t.Fatalf("n=%d: node %d not proven once every leaf was", n, i)
			}
		}
	}
}

// canonicalInt takes a decimal as strconv writes a non-negative int64,
// and nothing else.
func TestCanonicalInt(t *testing.T) {
	for _, s := range []string{"0", "1", "9", "10", "1000", "65536", "9223372036854775807"} {
		if v, err := canonicalInt(s); err != nil || fmt.Sprint(v) != s {
			t.Errorf("canonicalInt(%q) = %d, %v", s, v, err)
		}
	}
	for _, s := range []string{"", "00", "01", "+1", "-1", "-0", " 1", "1 ", "1_000", "0x10", "9223372036854775808", "1e3", "١"} {
		if v, err := canonicalInt(s); err == nil {
			t.Errorf("canonicalInt(%q) = %d, want an error", s, v)
		}
	}
}
