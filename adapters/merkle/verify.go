package merkle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Problem is one disagreement Verify found, at the stream sequence where
// it starts.
type Problem struct {
	Seq  uint64 `json:"seq"`  // the first stream sequence concerned (1-based); 0: none in particular
	What string `json:"what"` // a sentence
}

// Verified is one checkpoint as Verify found it.
type Verified struct {
	Seq        uint64     `json:"seq"`        // its sequence in CheckpointStream
	Checkpoint Checkpoint `json:"checkpoint"` // as signed
	Signer     string     `json:"signer"`     // name of the checkpoint key that signed it
	Witnesses  []string   `json:"witnesses"`  // names of the trusted witnesses that co-signed it (never null)
	Agrees     bool       `json:"agrees"`     // its root is the stored log's root at its size
}

// Report is what Verify found.
type Report struct {
	Origin      string     // the stream's origin now
	Size        int64      // leaves recomputed from the stream (sequences 1..Size)
	LastSeq     uint64     // the stream's last sequence
	Stored      int64      // leaves in the locally stored hashes of Origin (-1: none)
	Checkpoints []Verified // checkpoints signed by a trusted key, in stream order
	Untrusted   int        // checkpoints whose signature no trusted key verifies
	Problems    []Problem  // sorted by Seq, those at no sequence (Seq 0) last
	Tree        *Tree      // the recomputed tree (in memory)
}

// FirstBad returns the problem at the lowest sequence, and false when
// there is none.
func (r Report) FirstBad() (Problem, bool) {
	if len(r.Problems) == 0 {
		return Problem{}, false
	}
	return r.Problems[0], true
}

// Verify recomputes every leaf from l's stream, compares them with the
// hashes stored while the log was appended (stored, by origin: the
// stream now and any it replaced; none to skip), and
// checks every checkpoint in CheckpointStream signed by a key of keys:
// its root against the recomputed tree at its size, each pair of
// checkpoints for consistency, and its cosignatures by keys' witnesses.
// Disagreements are Problems; an error is a failure to read.
func Verify(ctx context.Context, l *natslog.Log, js jetstream.JetStream, keys Keys, stored map[string]*Tree) (Report, error) {
	rep := Report{Stored: -1, Tree: NewTree()}
	// The checkpoints are read before the log: each covers messages the
	// stream held when it was signed, so a live log's tree, read after,
	// reaches every one (one published meanwhile is not seen).
	held, err := checkpointsHeld(ctx, js)
	if err != nil {
		return rep, err
	}
	all, err := ReadAll(ctx, js)
	if err != nil {
		return rep, err
	}
	// The checkpoint stream keeps every message (it denies delete and
	// purge): one it no longer gives was lost under the server, and a
	// checkpoint lost so would leave nothing to say it ever was.
	if what := checkpointHoles(all, held); what != "" {
		rep.Problems = append(rep.Problems, Problem{What: what})
	}
	id, err := l.Identity(ctx)
	if err != nil {
		return rep, err
	}
	rep.Origin, rep.LastSeq = Origin(id), id.LastSeq
	if err := Extend(ctx, l, rep.Tree, false, nil); err != nil {
		var gap *GapError
		if !errors.As(err, &gap) {
			return rep, err
		}
		rep.Problems = append(rep.Problems, Problem{Seq: gap.Seq, What: gap.Error()})
	}
	rep.Size = rep.Tree.Size()
	origins := slices.Sorted(maps.Keys(stored))
	hashProblem := -1 // the stored hashes' disagreement with this stream, if any
	for _, o := range origins {
		st := stored[o]
		of := ""
		if o != rep.Origin {
			of = fmt.Sprintf(" of %s, a stream since deleted and made again", o)
		} else {
			rep.Stored = st.Size()
		}
		for i := range min(rep.Size, st.Size()) {
			a, err := rep.Tree.Leaf(i)
			if err != nil {
				return rep, err
			}
			b, err := st.Leaf(i)
			if err != nil {
				return rep, err
			}
			if a != b {
				if o == rep.Origin {
					hashProblem = len(rep.Problems)
				}
				rep.Problems = append(rep.Problems, Problem{Seq: uint64(i) + 1, What: fmt.Sprintf(
					"seq %d: the stored message hashes to %s, not to %s as when it was appended (locally stored hashes%s)", i+1, a, b, of)})
				break
			}
		}
		if st.Size() > rep.Size {
			rep.Problems = append(rep.Problems, Problem{Seq: uint64(rep.Size) + 1, What: fmt.Sprintf(
				"seq %d: the locally stored hashes%s cover seq 1..%d, the stream only 1..%d", rep.Size+1, of, st.Size(), rep.Size)})
		}
	}
	cosigs := map[uint64][]Stored{}
	for _, m := range all {
		if m.IsCosignature() {
			cosigs[m.CheckpointSeq()] = append(cosigs[m.CheckpointSeq()], m)
		}
	}
	for _, m := range all {
		if !m.IsCheckpoint() {
			continue
		}
		n, err := note.Open(m.Data, note.VerifierList(keys.Checkpoint...))
		if err != nil {
			rep.Untrusted++
			continue
		}
		cp, err := ParseCheckpoint(n.Text)
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{What: fmt.Sprintf("checkpoint %d: %v", m.Seq, err)})
			continue
		}
		v := Verified{Seq: m.Seq, Checkpoint: cp, Signer: n.Sigs[0].Name, Witnesses: []string{}}
		for _, c := range cosigs[m.Seq] {
			cn, err := note.Open(c.Data, note.VerifierList(keys.Witness...))
			if err != nil || cn.Text != n.Text {
				continue
			}
			for _, s := range cn.Sigs {
				v.Witnesses = append(v.Witnesses, s.Name)
			}
		}
		slices.Sort(v.Witnesses)
		v.Witnesses = slices.Compact(v.Witnesses)
		rep.checkpoint(&v, stored[cp.Origin])
		rep.Checkpoints = append(rep.Checkpoints, v)
	}
	// A leaf that disagrees with the locally stored hashes while a trusted
	// checkpoint covering it agrees with the stored log: the log is as
	// signed, and the hashes file is what changed.
	if hashProblem >= 0 {
		p := &rep.Problems[hashProblem]
		for _, v := range rep.Checkpoints {
			if v.Agrees && v.Checkpoint.Origin == rep.Origin && uint64(v.Checkpoint.Size) >= p.Seq {
				p.What = fmt.Sprintf("seq %d: the locally stored hash of the message differs from the message's, but the stored log agrees with %s: the stored hashes file (%s in the data dir) is what changed, damaged or edited; move it aside and serve rebuilds it from the log",
					p.Seq, v.name(), TreePath("", rep.Origin))
				break
			}
		}
	}
	rep.consistency(stored)
	slices.SortStableFunc(rep.Problems, func(a, b Problem) int { return cmpSeq(a.Seq-1, b.Seq-1) }) // 0 wraps to the end
	return rep, nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// name names v for a problem, e.g. "witnessed checkpoint 7 (size 12,
// co-signed by [w])" or "checkpoint 7 (size 12, no trusted witness)".
func (v Verified) name() string {
	if len(v.Witnesses) > 0 {
		return fmt.Sprintf("witnessed checkpoint %d (size %d, co-signed by %v)", v.Seq, v.Checkpoint.Size, v.Witnesses)
	}
	return fmt.Sprintf("checkpoint %d (size %d, no trusted witness)", v.Seq, v.Checkpoint.Size)
}

// checkpoint checks v against the recomputed tree and records problems.
func (r *Report) checkpoint(v *Verified, stored *Tree) {
	cp := v.Checkpoint
	if cp.Origin != r.Origin {
		r.Problems = append(r.Problems, Problem{What: fmt.Sprintf(
			"%s is of origin %s, but the stream now is %s: the stream was deleted and made again", v.name(), cp.Origin, r.Origin)})
	}
	if cp.Size > r.Size {
		r.Problems = append(r.Problems, Problem{Seq: uint64(r.Size) + 1, What: fmt.Sprintf(
			"seq %d: %s covers seq 1..%d, the stream holds only 1..%d in order", r.Size+1, v.name(), cp.Size, r.Size)})
		return
	}
	root, err := r.Tree.Root(cp.Size)
	if err != nil {
		return
	}
	if root == cp.Root {
		v.Agrees = true
		return
	}
	// Which leaf: the locally stored hashes, when they match the
	// checkpoint, name it; else the checkpoints that agree bound it.
	seq, how := r.firstDiffering(cp, stored)
	r.Problems = append(r.Problems, Problem{Seq: seq, What: fmt.Sprintf(
		"seq %d: the stored log's root of seq 1..%d is %s, %s says %s (%s)", seq, cp.Size, root, v.name(), cp.Root, how)})
}

// firstDiffering returns the first sequence where the recomputed tree
// and the tree cp was made from differ, and how it was found.
func (r *Report) firstDiffering(cp Checkpoint, stored *Tree) (uint64, string) {
	if stored != nil && stored.Size() >= cp.Size {
		if sr, err := stored.Root(cp.Size); err == nil && sr == cp.Root {
			for i := range cp.Size {
				a, _ := r.Tree.Leaf(i)
				b, _ := stored.Leaf(i)
				if a != b {
					return uint64(i) + 1, "the first leaf that differs from the locally stored hashes, which match the checkpoint"
				}
			}
		}
	}
	// Bisect on leaves with inclusion proofs is impossible without the
	// checkpoint's tree; the agreeing checkpoints bound the sequence.
	var lo int64
	for _, v := range r.Checkpoints {
		if v.Agrees && v.Checkpoint.Size < cp.Size && v.Checkpoint.Origin == cp.Origin {
			lo = max(lo, v.Checkpoint.Size)
		}
	}
	return uint64(lo) + 1, fmt.Sprintf("the first sequence after the largest agreeing checkpoint; the difference lies in seq %d..%d", lo+1, cp.Size)
}

// consistency checks every pair of consecutive trusted checkpoints of
// one origin (by size) for consistency, with proofs from the recomputed
// tree or, failing it, the locally stored hashes.
func (r *Report) consistency(stored map[string]*Tree) {
	byOrigin := map[string][]Verified{}
	for _, v := range r.Checkpoints {
		byOrigin[v.Checkpoint.Origin] = append(byOrigin[v.Checkpoint.Origin], v)
	}
	for o, vs := range byOrigin {
		slices.SortStableFunc(vs, func(a, b Verified) int { return cmpSeq(uint64(a.Checkpoint.Size), uint64(b.Checkpoint.Size)) })
		for i := 1; i < len(vs); i++ {
			a, b := vs[i-1], vs[i]
			if a.Checkpoint.Size == b.Checkpoint.Size {
				if a.Checkpoint.Root != b.Checkpoint.Root {
					r.Problems = append(r.Problems, Problem{What: fmt.Sprintf(
						"%s and %s have the same size and different roots: a fork", a.name(), b.name())})
				}
				continue
			}
			var own *Tree
			if o == r.Origin {
				own = r.Tree
			}
			if ok, tried := consistent(a.Checkpoint, b.Checkpoint, own); tried && ok {
				continue
			} else if ok2, tried2 := consistent(a.Checkpoint, b.Checkpoint, stored[o]); tried2 && ok2 {
				continue
			} else if tried || tried2 {
				r.Problems = append(r.Problems, Problem{Seq: uint64(a.Checkpoint.Size) + 1, What: fmt.Sprintf(
					"%s is not consistent with %s: no proof from the stored log or the stored hashes links them", b.name(), a.name())})
			}
		}
	}
}

// consistent reports whether t proves b extends a (tried: t could make
// a proof at all).
func consistent(a, b Checkpoint, t *Tree) (ok, tried bool) {
	if t == nil || t.Size() < b.Size || a.Size == 0 {
		return false, false
	}
	p, err := tlog.ProveTree(b.Size, a.Size, t)
	if err != nil {
		return false, false
	}
	return tlog.CheckTree(p, b.Size, b.Root, a.Size, a.Root) == nil, true
}

// Inclusion is a proof that the message at Seq is leaf Seq-1 of a
// checkpoint's tree.
type Inclusion struct {
	Seq        uint64           `json:"seq"`
	Leaf       tlog.Hash        `json:"leaf"`
	Checkpoint Verified         `json:"checkpoint"`
	Proof      tlog.RecordProof `json:"proof"`
}

// Prove returns the inclusion proof of seq in the smallest checkpoint
// that covers it and agrees with the stored log, preferring a witnessed
// one, checked with tlog.CheckRecord. It fails when none covers seq.
func (r Report) Prove(seq uint64) (Inclusion, error) {
	if seq == 0 || int64(seq) > r.Size {
		return Inclusion{}, fmt.Errorf("seq %d: the stream holds seq 1..%d in order", seq, r.Size)
	}
	var best *Verified
	for i := range r.Checkpoints {
		v := &r.Checkpoints[i]
		if !v.Agrees || v.Checkpoint.Size < int64(seq) || v.Checkpoint.Origin != r.Origin {
			continue
		}
		better := best == nil || (len(v.Witnesses) > 0 && len(best.Witnesses) == 0) ||
			((len(v.Witnesses) > 0) == (len(best.Witnesses) > 0) && v.Checkpoint.Size < best.Checkpoint.Size)
		if better {
			best = v
		}
	}
	if best == nil {
		return Inclusion{}, fmt.Errorf("seq %d: no checkpoint that agrees with the stored log covers it yet", seq)
	}
	leaf, err := r.Tree.Leaf(int64(seq) - 1)
	if err != nil {
		return Inclusion{}, err
	}
	p, err := tlog.ProveRecord(best.Checkpoint.Size, int64(seq)-1, r.Tree)
	if err != nil {
		return Inclusion{}, fmt.Errorf("seq %d: %w", seq, err)
	}
	if err := tlog.CheckRecord(p, best.Checkpoint.Size, best.Checkpoint.Root, int64(seq)-1, leaf); err != nil {
		return Inclusion{}, fmt.Errorf("seq %d: %w", seq, err)
	}
	return Inclusion{Seq: seq, Leaf: leaf, Checkpoint: *best, Proof: p}, nil
}

// checkpointsHeld returns the last sequence of the checkpoint stream, 0
// when there is none (read before its messages: one published meanwhile
// is past it).
func checkpointsHeld(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	st, err := js.Stream(ctx, CheckpointStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", CheckpointStream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", CheckpointStream, err)
	}
	return info.State.LastSeq, nil
}

// checkpointHoles names the sequences from 1 to last that all, the
// checkpoint stream's messages in sequence order, lacks; "" when none.
func checkpointHoles(all []Stored, last uint64) string {
	var holes []string
	n := uint64(0)
	hole := func(from, to uint64) {
		n += to - from + 1
		if len(holes) < 8 {
			if from == to {
				holes = append(holes, fmt.Sprintf("seq %d", from))
			} else {
				holes = append(holes, fmt.Sprintf("seq %d..%d", from, to))
			}
		}
	}
	next := uint64(1)
	for _, m := range all {
		if m.Seq > last {
			break
		}
		if m.Seq > next {
			hole(next, m.Seq-1)
		}
		next = m.Seq + 1
	}
	if last >= next {
		hole(next, last)
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("stream %s is missing %d of its %d messages (%s): lost under the server (a damaged block file) or removed; a checkpoint or cosignature among them can no longer be checked",
		CheckpointStream, n, last, strings.Join(holes, ", "))
}
