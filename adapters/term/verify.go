package term

import (
	"fmt"
	"io"
	"strings"

	"github.com/logbook-dev/logbook/adapters/merkle"
)

// Verify writes what `logbook verify` found: the leaves recomputed, how
// many stored hashes there were (stored names the folder they are kept
// in, said when there are none), the checkpoints, the inclusion proof inc
// (nil: none asked for or none found) and every problem. Errors are w's.
func Verify(w io.Writer, rep merkle.Report, inc *merkle.Inclusion, stored string) error {
	fmt.Fprintf(w, "log %s: seq 1..%d recomputed (last seq %d)\n", Field(rep.Origin), rep.Size, rep.LastSeq)
	switch {
	case rep.Stored >= rep.Size:
		fmt.Fprintf(w, "stored hashes: %s\n", Plural(int(rep.Stored), "leaf", "leaves"))
	case rep.Stored > 0:
		// The stored hashes are serve's cache of the tree: a prefix
		// is what a serve that has not caught up (or a damaged
		// file cut to its whole leaves) leaves; the rest is
		// recomputed from the log and checked against the
		// checkpoints alone.
		fmt.Fprintf(w, "stored hashes: %s, seq 1..%d; seq %d..%d not stored (checked against the checkpoints only; a running serve stores them)\n",
			Plural(int(rep.Stored), "leaf", "leaves"), rep.Stored, rep.Stored+1, rep.Size)
	default:
		fmt.Fprintf(w, "stored hashes: none for this stream in %s\n", stored)
	}
	witnessed := 0
	for _, v := range rep.Checkpoints {
		if len(v.Witnesses) > 0 {
			witnessed++
		}
	}
	fmt.Fprintf(w, "checkpoints: %d signed by a trusted key, %d of them witnessed; %d untrusted\n", len(rep.Checkpoints), witnessed, rep.Untrusted)
	if inc != nil {
		c := inc.Checkpoint
		by := "no trusted witness"
		if len(c.Witnesses) > 0 {
			by = "witnessed by " + Field(strings.Join(c.Witnesses, ", "))
		}
		fmt.Fprintf(w, "seq %d: leaf %s is in checkpoint %d (size %d, root %s, %s); proof:\n",
			inc.Seq, inc.Leaf, c.Seq, c.Checkpoint.Size, c.Checkpoint.Root, by)
		for _, h := range inc.Proof {
			fmt.Fprintf(w, "  %s\n", h)
		}
	}
	var err error
	for _, p := range rep.Problems {
		_, err = fmt.Fprintf(w, "BAD: %s\n", Field(p.What))
	}
	return err
}

// VerifyOK writes the line of a verify that found nothing wrong: what the
// stored log agrees with and the sequences that covers (those past it,
// recomputed and compared with nothing, named as such), or, when there was nothing to compare it with
// (no stored hashes, no trusted checkpoint: merkle.Report.Proven), that
// nothing was proven and what would prove it. Errors are w's.
func VerifyOK(w io.Writer, rep merkle.Report) error {
	if !rep.Proven() {
		how := "serve stores each leaf's hash as it appends and signs checkpoints; an imported log no serve has run on has neither"
		if rep.Untrusted > 0 {
			how = fmt.Sprintf("%s signed by a key this data dir does not trust: pin the writer's with `logbook checkpoint trust KEY`, KEY from `logbook checkpoint key` on it",
				Plural(rep.Untrusted, "checkpoint", "checkpoints"))
		}
		_, err := fmt.Fprintf(w, "NOTHING PROVEN: no stored hashes and no trusted checkpoint to compare the recomputed tree with (%s)\n", how)
		return err
	}
	var with []string
	covered := max(rep.Stored, 0)
	if n := len(rep.Checkpoints); n > 0 {
		var latest int64
		for _, v := range rep.Checkpoints {
			latest = max(latest, v.Checkpoint.Size)
		}
		covered = max(covered, latest)
		with = append(with, fmt.Sprintf("every trusted checkpoint (%s, the latest of seq 1..%d)", Plural(n, "checkpoint", "checkpoints"), latest))
	}
	switch {
	case rep.Stored <= 0:
	case rep.Stored < rep.Size:
		with = append(with, fmt.Sprintf("the stored hashes of seq 1..%d", rep.Stored))
	default:
		with = append(with, "the stored hashes")
	}
	line := "ok: the stored log agrees with " + strings.Join(with, " and ")
	if covered < rep.Size {
		// The rest was recomputed and compared with nothing: saying ok
		// of it would claim more than was proven.
		line += fmt.Sprintf("; seq %d..%d recomputed only: no stored hash or trusted checkpoint covers them yet", covered+1, rep.Size)
	}
	switch {
	case len(rep.Checkpoints) == 0 && rep.Untrusted > 0:
		// Checkpoints there are, none trusted: a checkpoint.key lost or
		// replaced leaves this too, and the stored hashes lie beside the
		// log, so they prove only that the two agree.
		line += fmt.Sprintf("; but no checkpoint is signed by a key this data dir trusts: %s signed by one it does not (its checkpoint.key lost or replaced, or another writer's): the stored hashes lie beside the log and show only that the two agree; trust the signer with `logbook checkpoint trust KEY` if it is yours",
			Plural(rep.Untrusted, "checkpoint is", "checkpoints are"))
	case len(rep.Checkpoints) == 0:
		line += " (no trusted checkpoint yet: serve signs one every --checkpoint-every messages or --checkpoint-interval)"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
