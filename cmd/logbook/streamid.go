package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// streamRecord is stream.json in the data dir: which incarnation of the
// LOGBOOK stream the projection in views/ was made from.
type streamRecord struct {
	Stream  string    `json:"stream"`  // natslog.StreamName
	Created time.Time `json:"created"` // the stream's creation time, as its server reports it
}

func (d dataDir) readStreamRecord() (streamRecord, bool, error) {
	var r streamRecord
	b, err := os.ReadFile(d.path("stream.json"))
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("stream record: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Created.IsZero() {
		return r, false, fmt.Errorf("stream record %s: malformed (remove it to adopt the stream the log has now)", d.path("stream.json"))
	}
	return r, true, nil
}

func (d dataDir) writeStreamRecord(id natslog.Identity) error {
	b, _ := json.MarshalIndent(streamRecord{Stream: natslog.StreamName, Created: id.Created}, "", "  ")
	return writeFileAtomic(d.path("stream.json"), b, 0o600)
}

// errStreamLoss reports a log that lost events a projection had seen.
var errStreamLoss = errors.New("the log lost events")

// streamLoss compares the stream the log has now (id) with the one the
// projection (checkpoint cp) was made from (rec, when have), and says
// what was lost, or "" when nothing was: a stream deleted and created
// again (another creation time), messages gone from its head (its first
// sequence is past 1), or from its tail (its last sequence is below cp).
func streamLoss(dd dataDir, id natslog.Identity, rec streamRecord, have bool, cp uint64) string {
	switch {
	case have && !rec.Created.Equal(id.Created):
		return fmt.Sprintf("stream %s was created at %s, but the projection in %s (checkpoint seq %d) was made from the stream created at %s: the stream was deleted and created again (it now holds seq %d to %d)",
			natslog.StreamName, id.Created.Format(time.RFC3339Nano), dd.path("views"), cp, rec.Created.Format(time.RFC3339Nano), id.FirstSeq, id.LastSeq)
	case id.LastSeq > 0 && id.FirstSeq > 1:
		return fmt.Sprintf("stream %s starts at seq %d: seq 1 to %d are gone from it (projection checkpoint seq %d)",
			natslog.StreamName, id.FirstSeq, id.FirstSeq-1, cp)
	case cp > id.LastSeq:
		return fmt.Sprintf("projection at seq %d is past the log's end (stream %s last seq %d): the log lost its tail (an OS crash under --fsync=interval) or was replaced",
			cp, natslog.StreamName, id.LastSeq)
	}
	return ""
}

// streamLost returns err, or, when err is a failure (not a cancellation)
// and the stream l was opened on is gone or replaced, the
// *natslog.StreamLostError that explains it: a feed that fails because
// its stream was deleted should say so.
func streamLost(l *natslog.Log, was natslog.Identity, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, natslog.ErrStreamLost) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now, ierr := l.Identity(ctx)
	switch {
	case errors.Is(ierr, natslog.ErrStreamLost):
		return &natslog.StreamLostError{Was: was}
	case ierr == nil && !now.Created.Equal(was.Created):
		return &natslog.StreamLostError{Was: was, Now: now}
	}
	return err
}
