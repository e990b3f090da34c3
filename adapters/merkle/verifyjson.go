package merkle

import (
	"errors"
	"fmt"
	"strings"
)

// ReportJSON is a Report as `logbook verify --json` prints it, with the
// inclusion proof asked for; its lists are never null.
type ReportJSON struct {
	Origin      string     `json:"origin"`
	Size        int64      `json:"size"`
	LastSeq     uint64     `json:"last_seq"`
	Stored      int64      `json:"stored"`
	Checkpoints []Verified `json:"checkpoints"`
	Untrusted   int        `json:"untrusted"`
	Problems    []Problem  `json:"problems"`
	// Proven is Report.Proven: false when nothing was compared with
	// the recomputed tree.
	Proven    bool       `json:"proven"`
	Inclusion *Inclusion `json:"inclusion,omitempty"`
}

// JSON returns r as ReportJSON, with inc (nil: none asked for or none
// made).
func (r Report) JSON(inc *Inclusion) ReportJSON {
	out := ReportJSON{Origin: r.Origin, Size: r.Size, LastSeq: r.LastSeq, Stored: r.Stored, Checkpoints: r.Checkpoints,
		Untrusted: r.Untrusted, Problems: r.Problems, Proven: r.Proven(), Inclusion: inc}
	if out.Checkpoints == nil {
		out.Checkpoints = []Verified{}
	}
	if out.Problems == nil {
		out.Problems = []Problem{} // an empty list, never null
	}
	return out
}

// Proven reports whether the recomputed tree was compared with anything:
// a stored hash or a checkpoint signed by a trusted key. A log no serve
// has run on (an import alone), or a follower's before its writer's
// checkpoint key is trusted, has neither: its tree agrees with nothing,
// so nothing is proven. An empty stream (Size 0) has nothing to prove.
func (r Report) Proven() bool {
	return r.Size == 0 || r.Stored > 0 || len(r.Checkpoints) > 0
}

// NothingProven returns the error that says r proved nothing (see
// Proven), naming what was missing; nil when r proved something.
func (r Report) NothingProven() error {
	if r.Proven() {
		return nil
	}
	if r.Untrusted > 0 {
		return fmt.Errorf("verify: nothing proven: seq 1..%d compared with no stored hash and no trusted checkpoint (%d signed by a key this data dir does not trust)", r.Size, r.Untrusted)
	}
	return fmt.Errorf("verify: nothing proven: seq 1..%d compared with no stored hash and no checkpoint", r.Size)
}

// Failure returns the error that names r's first problem (FirstBad):
// "verify: first bad sequence N: …" for one at a sequence, "verify: …"
// for one at none; nil when r has none.
func (r Report) Failure() error {
	p, ok := r.FirstBad()
	if !ok {
		return nil
	}
	if p.Seq > 0 {
		return fmt.Errorf("verify: first bad sequence %d: %s", p.Seq, strings.TrimPrefix(p.What, fmt.Sprintf("seq %d: ", p.Seq)))
	}
	return errors.New("verify: " + p.What)
}
