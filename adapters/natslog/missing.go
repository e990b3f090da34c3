package natslog

import (
	"context"
	"fmt"
	"strings"
)

// Missing is what a walk of the whole LOGBOOK stream found gone from it:
// the sequences from 1 to Through it no longer holds. The stream denies
// deletes and purges and has no age or per-subject limits, so it never
// has a hole of its own making: each one is a message lost under the
// server (a block file cut short or damaged). A message damaged in place
// shows in none of the server's counts (StreamInfo's Msgs, NumDeleted,
// Lost): only a read finds it gone.
type Missing struct {
	Through uint64   // the stream's last sequence when the walk began
	Count   uint64   // how many of seq 1..Through the stream does not hold
	Seqs    []uint64 // the first of them (at most MissingNamed), in order
}

// MissingNamed is how many missing sequences a Missing names one by one.
const MissingNamed = 10

// Whole reports whether the walk found every sequence from 1 to Through.
func (m Missing) Whole() bool { return m.Count == 0 }

// String says how many sequences are gone and names the first, e.g.
// "stream LOGBOOK lost 1 of seq 1..205: seq 103"; "" when Whole.
func (m Missing) String() string {
	if m.Whole() {
		return ""
	}
	names := make([]string, len(m.Seqs))
	for i, s := range m.Seqs {
		names[i] = fmt.Sprint(s)
	}
	s := fmt.Sprintf("stream %s lost %d of seq 1..%d: seq %s", StreamName, m.Count, m.Through, strings.Join(names, ", "))
	if more := m.Count - uint64(len(m.Seqs)); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// FindMissing reads every message of the stream, from seq 1 to its last
// sequence at the time of the call, and returns the sequences it does
// not hold. The read ends at the last message that still reads
// (TailHeld): a lost tail is counted, never waited for. It costs a read
// of the whole log (raw, nothing decoded); an error is the read's,
// naming where it stopped.
func (l *Log) FindMissing(ctx context.Context) (Missing, error) {
	var m Missing
	id, err := l.Identity(ctx)
	if err != nil {
		return m, fmt.Errorf("find missing messages: %w", err)
	}
	held, err := l.TailHeld(ctx, id)
	if err != nil {
		return m, fmt.Errorf("find missing messages: %w", err)
	}
	m.Through = id.LastSeq
	gone := func(from, to uint64) { // seq from..to are missing
		m.Count += to - from + 1
		for s := from; s <= to && len(m.Seqs) < MissingNamed; s++ {
			m.Seqs = append(m.Seqs, s)
		}
	}
	next := uint64(1)
	if held > 0 {
		var stop error
		l.resumeAcrossHeals(ctx, 1, held, func(msg Msg, err error) bool {
			if err != nil {
				stop = err
				return false
			}
			if msg.Seq > next {
				gone(next, msg.Seq-1)
			}
			next = msg.Seq + 1
			return msg.Seq < held
		}, func(ctx context.Context, from uint64, y func(Msg, error) bool) {
			l.consume(ctx, StreamSubjects, from, held, y)
		})
		if stop != nil {
			return m, fmt.Errorf("find missing messages of %s (read up to seq %d): %w", StreamName, next-1, stop)
		}
	}
	if next <= m.Through { // a lost tail: the stream keeps its last sequence
		gone(next, m.Through)
	}
	return m, nil
}
