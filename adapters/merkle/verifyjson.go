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
	Inclusion   *Inclusion `json:"inclusion,omitempty"`
}

// JSON returns r as ReportJSON, with inc (nil: none asked for or none
// made).
func (r Report) JSON(inc *Inclusion) ReportJSON {
	out := ReportJSON{Origin: r.Origin, Size: r.Size, LastSeq: r.LastSeq, Stored: r.Stored, Checkpoints: r.Checkpoints,
		Untrusted: r.Untrusted, Problems: r.Problems, Inclusion: inc}
	if out.Checkpoints == nil {
		out.Checkpoints = []Verified{}
	}
	if out.Problems == nil {
		out.Problems = []Problem{} // an empty list, never null
	}
	return out
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
