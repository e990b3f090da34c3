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
// LOGBOOK stream the projection in views/ was made from, and how many of
// its sequences were already gone (natslog.Identity.Gone) when the
// projection was made from it: 0 but after `serve --accept-stream-loss`.
type streamRecord struct {
	Stream  string    `json:"stream"`         // natslog.StreamName
	Created time.Time `json:"created"`        // the stream's creation time, as its server reports it
	Gone    uint64    `json:"gone,omitempty"` // sequences missing from the stream, accepted
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
	b, _ := json.MarshalIndent(streamRecord{Stream: natslog.StreamName, Created: id.Created, Gone: id.Gone()}, "", "  ")
	return writeFileAtomic(d.path("stream.json"), b, 0o600)
}

// errStreamLoss reports a log that lost events a projection had seen.
var errStreamLoss = errors.New("the log lost events")

// streamLoss compares the stream the log has now (id, whose newest
// message still held is seq end) with the one the projection (checkpoint
// cp) was made from (rec, when have), and says what was lost, or "" when
// nothing was: a stream deleted and created again (another creation
// time), messages gone from its head (its first sequence is past 1), from
// its tail or its middle (sequences up to its last one it no longer
// holds, beyond those rec accepted: a block file cut short or damaged,
// which the server drops while keeping its last sequence), or a tail
// lost with its last sequence (that is below cp).
func streamLoss(dd dataDir, id natslog.Identity, end uint64, rec streamRecord, have bool, cp uint64) string {
	gone := id.Gone()
	switch {
	case have && !rec.Created.Equal(id.Created):
		return fmt.Sprintf("stream %s was created at %s, but the projection in %s (checkpoint seq %d) was made from the stream created at %s: the stream was deleted and created again (it now holds seq %d to %d)",
			natslog.StreamName, id.Created.Format(time.RFC3339Nano), dd.path("views"), cp, rec.Created.Format(time.RFC3339Nano), id.FirstSeq, id.LastSeq)
	case id.LastSeq > 0 && id.FirstSeq > 1:
		return fmt.Sprintf("stream %s starts at seq %d: seq 1 to %d are gone from it (projection checkpoint seq %d)",
			natslog.StreamName, id.FirstSeq, id.FirstSeq-1, cp)
	case gone > rec.Gone && end < id.LastSeq && cp > end:
		return fmt.Sprintf("stream %s ends at seq %d, before the projection's checkpoint seq %d (in %s): %s gone from it (a block file under %s was cut short or damaged)",
			natslog.StreamName, end, cp, dd.path("views"), goneSeqs(gone, end, id.LastSeq), dd.path("jetstream"))
	case gone > rec.Gone && end < id.LastSeq:
		return fmt.Sprintf("stream %s ends at seq %d, though it had reached seq %d (projection checkpoint seq %d): %s gone from it (a block file under %s was cut short or damaged)",
			natslog.StreamName, end, id.LastSeq, cp, goneSeqs(gone, end, id.LastSeq), dd.path("jetstream"))
	case gone > rec.Gone:
		return fmt.Sprintf("stream %s holds %d messages from seq %d to %d: %d of its sequences are gone (projection in %s at checkpoint seq %d; a block file under %s was damaged)",
			natslog.StreamName, id.Msgs, id.FirstSeq, id.LastSeq, gone, dd.path("views"), cp, dd.path("jetstream"))
	case cp > id.LastSeq:
		return fmt.Sprintf("projection at seq %d is past the log's end (stream %s last seq %d): the log lost its tail (an OS crash under --fsync=interval) or was replaced",
			cp, natslog.StreamName, id.LastSeq)
	}
	return ""
}

// goneSeqs names the sequences a stream that ends at seq end, though it
// had reached last, lost: its tail, and any more before end.
func goneSeqs(gone, end, last uint64) string {
	s := fmt.Sprintf("seq %d to %d are", end+1, last)
	if end+1 == last {
		s = fmt.Sprintf("seq %d is", last)
	}
	if tail := last - end; gone > tail {
		s += fmt.Sprintf(" (and %d more before seq %d)", gone-tail, end)
	}
	return s
}

// checkLog makes sure the log still holds every event the data dir's
// projection was made from, before a command that opens the data dir
// directly reads or appends anything: with a projection in views/ it
// opens it through openViews (kept in b.views for the command's own
// openViews), else it compares the stream with stream.json alone. A loss
// is an error wrapping errStreamLoss that names the sequences and the
// fix. It costs one stream info (and one get of the last message when
// messages are gone).
func (b *backend) checkLog(ctx context.Context, g *globals) error {
	if _, err := os.Stat(b.dd.path("views")); err == nil {
		s, err := openViews(ctx, g, b)
		if err != nil {
			return err
		}
		b.views = s
		return nil
	}
	id, err := b.log.Identity(ctx)
	if err != nil {
		return err
	}
	rec, have, err := b.dd.readStreamRecord()
	if err != nil {
		return err
	}
	loss, err := logLoss(ctx, b.dd, b.log, id, rec, have, 0)
	if err != nil {
		return err
	}
	if loss != "" {
		return streamLossError(loss)
	}
	return nil
}

// logLoss is streamLoss, asking the log for the last message it still
// holds when sequences are gone from it.
func logLoss(ctx context.Context, dd dataDir, l *natslog.Log, id natslog.Identity, rec streamRecord, have bool, cp uint64) (string, error) {
	end := id.LastSeq
	if id.Gone() > rec.Gone {
		var err error
		if end, err = l.LastStored(ctx); err != nil {
			return "", err
		}
	}
	return streamLoss(dd, id, end, rec, have, cp), nil
}

// streamLossError is the error a start on a log that lost events ends
// with: what was lost, and the two ways on.
func streamLossError(loss string) error {
	return fmt.Errorf("%w: %s; restore the stream, or run `logbook serve --accept-stream-loss` to set the projection aside and rebuild it from the log as it is", errStreamLoss, loss)
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
