package term

import (
	"bytes"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/merkle"
)

// TestVerifyOKSaysWhatWasProven: a report that compared the recomputed
// tree with nothing (a follower before its writer's checkpoint key is
// trusted: an empty stored hashes file, every checkpoint untrusted; or an
// import alone) says nothing was proven, never "ok" over "seq 1..0"; one
// with stored hashes or a trusted checkpoint says what it agrees with;
// one with stored hashes and untrusted checkpoints alone says that no
// trusted key signed any (a lost checkpoint.key leaves that too).
func TestVerifyOKSaysWhatWasProven(t *testing.T) {
	for _, c := range []struct {
		name   string
		rep    merkle.Report
		proven bool
		want   string
	}{
		{"follower before trust", merkle.Report{Size: 120, Stored: 0, Untrusted: 49}, false, "NOTHING PROVEN: no stored hashes and no trusted checkpoint to compare the recomputed tree with (49 checkpoints signed by a key this data dir does not trust: pin the writer's with `logbook checkpoint trust KEY`"},
		{"import alone", merkle.Report{Size: 12, Stored: -1}, false, "NOTHING PROVEN: no stored hashes and no trusted checkpoint to compare the recomputed tree with (serve stores"},
		{"stored hashes cut short", merkle.Report{Size: 12, Stored: 2}, true, "ok: the stored log agrees with the stored hashes of seq 1..2; seq 3..12 recomputed only: no stored hash or trusted checkpoint covers them yet (no trusted checkpoint yet"},
		{"checkpoints", merkle.Report{Size: 12, Stored: 0, Checkpoints: checkpoints(5, 12)}, true, "ok: the stored log agrees with every trusted checkpoint (2 checkpoints, the latest of seq 1..12)\n"},
		{"checkpoints of a prefix", merkle.Report{Size: 12, Stored: 0, Checkpoints: checkpoints(5, 9)}, true, "ok: the stored log agrees with every trusted checkpoint (2 checkpoints, the latest of seq 1..9); seq 10..12 recomputed only: no stored hash or trusted checkpoint covers them yet\n"},
		{"stored hashes past the checkpoints", merkle.Report{Size: 12, Stored: 12, Checkpoints: checkpoints(9)}, true, "ok: the stored log agrees with every trusted checkpoint (1 checkpoint, the latest of seq 1..9) and the stored hashes\n"},
		{"stored hashes, every checkpoint untrusted", merkle.Report{Size: 12, Stored: 12, Untrusted: 43}, true, "ok: the stored log agrees with the stored hashes; but no checkpoint is signed by a key this data dir trusts: 43 checkpoints are signed by one it does not (its checkpoint.key lost or replaced"},
		{"empty", merkle.Report{Stored: -1}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rep.Proven(); got != c.proven {
				t.Errorf("Proven() = %v, want %v", got, c.proven)
			}
			if err := c.rep.NothingProven(); (err == nil) != c.proven {
				t.Errorf("NothingProven() = %v, want an error: %v", err, !c.proven)
			}
			var out bytes.Buffer
			if err := VerifyOK(&out, c.rep); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), c.want) || strings.Contains(out.String(), "1..0") {
				t.Errorf("VerifyOK:\n%s\nwant it to hold %q", out.String(), c.want)
			}
			out.Reset()
			if err := Verify(&out, c.rep, nil, "merkle"); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "stored hashes: 0") {
				t.Errorf("Verify says the stored hashes cover no sequence as a range:\n%s", out.String())
			}
		})
	}
}

// checkpoints returns verified checkpoints of the sizes given, in order.
func checkpoints(sizes ...int64) []merkle.Verified {
	var vs []merkle.Verified
	for _, n := range sizes {
		vs = append(vs, merkle.Verified{Checkpoint: merkle.Checkpoint{Size: n}})
	}
	return vs
}
