package datadir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// StreamRecord is stream.json in the data dir: which incarnation of the
// LOGBOOK stream the projection in views/ was made from, and how many of
// its sequences were already gone (natslog.Identity.Gone) when the
// projection was made from it: 0 but after `serve --accept-stream-loss`.
type StreamRecord struct {
	Stream  string    `json:"stream"`         // natslog.StreamName
	Created time.Time `json:"created"`        // the stream's creation time, as its server reports it
	Gone    uint64    `json:"gone,omitempty"` // sequences missing from the stream, accepted
	// Remote is the server the stream was read from when it is not the
	// data dir's own (a follower's serve, --nats-url or a credentials
	// file's URL), its password hidden (natslog.RedactURL); "" for the
	// data dir's own log in jetstream/.
	Remote string `json:"remote,omitempty"`
	// Reader says the last serve on the data dir ran --role reader (a
	// follower): it takes no hooks and never delivers a spool, so a hook
	// on the data dir while it is stopped keeps nothing either
	// (cmd/internal/hookfast.ReaderDataDir).
	Reader bool `json:"reader,omitempty"`
}

// ReadStreamRecord reads the data dir's stream.json; have is false when
// there is none. A file that is not a record (no creation time) is an
// error saying to remove it, and so is one that is not a regular file (a
// FIFO, a device: refused without a read that could block or never end)
// or is over 64 KiB.
func (d Dir) ReadStreamRecord() (r StreamRecord, have bool, err error) {
	b, err := hookspool.ReadRegular(d.Path("stream.json"), maxServeInfoBytes)
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("stream record: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Created.IsZero() {
		return r, false, fmt.Errorf("stream record %s: malformed (remove it to adopt the stream the log has now)", d.Path("stream.json"))
	}
	return r, true, nil
}

// WriteStreamRecord writes stream.json (0600, whole or not at all) for the
// stream id, of which gone sequences are accepted as lost (at least
// id.Gone(), the server's count; more when a walk of the stream found
// messages lost in place, natslog.Log.FindMissing), read from remote
// (StreamRecord.Remote; "" for the data dir's own log) by a serve --role
// reader or not (StreamRecord.Reader).
func (d Dir) WriteStreamRecord(id natslog.Identity, gone uint64, remote string, reader bool) error {
	b, _ := json.MarshalIndent(StreamRecord{Stream: natslog.StreamName, Created: id.Created, Gone: max(gone, id.Gone()), Remote: natslog.RedactURL(remote), Reader: reader}, "", "  ")
	return WriteFileAtomic(d.Path("stream.json"), b, 0o600)
}

// FollowerError returns an error when d holds no log of its own (no
// jetstream/) and its projection was made from a log on another server
// (stream.json's Remote): a follower's data dir, whose serve is not
// running. A log started there would be a new, empty one, which the
// projection would then be refused against (or, with
// --accept-stream-loss, thrown away for): the error names the server and
// how to reach it. nil otherwise.
func (d Dir) FollowerError() error {
	if _, err := os.Stat(d.Path("jetstream")); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	r, have, err := d.ReadStreamRecord()
	if err != nil || !have || r.Remote == "" {
		return nil
	}
	return fmt.Errorf("data dir %s follows the log at %s (its projection was made from there) and holds no log of its own: start its serve again (logbook serve --data %s --nats-url %s --creds FILE --role reader), or read that log with --nats-url %s --creds FILE; a log started here would be a new, empty one", d, r.Remote, d, r.Remote, r.Remote)
}

// StreamLoss compares the stream the log has now (id, whose newest
// message still held is seq end) with the one the projection (checkpoint
// cp) was made from (rec, when have), and says what was lost, or "" when
// nothing was: a stream deleted and created again (another creation
// time), messages gone from its head (its first sequence is past 1), from
// its tail or its middle (sequences up to its last one it no longer
// holds, beyond those rec accepted: a block file cut short or damaged,
// which the server drops while keeping its last sequence), or a tail
// lost with its last sequence (that is below cp). The text names d's
// views and jetstream folders.
func (d Dir) StreamLoss(id natslog.Identity, end uint64, rec StreamRecord, have bool, cp uint64) string {
	gone := id.Gone()
	switch {
	case have && !rec.Created.Equal(id.Created):
		return fmt.Sprintf("stream %s was created at %s, but the projection in %s (checkpoint seq %d) was made from the stream created at %s: the stream was deleted and created again (it now holds seq %d to %d)",
			natslog.StreamName, id.Created.Format(time.RFC3339Nano), d.Path("views"), cp, rec.Created.Format(time.RFC3339Nano), id.FirstSeq, id.LastSeq)
	case id.LastSeq > 0 && id.FirstSeq > 1:
		return fmt.Sprintf("stream %s starts at seq %d: seq 1 to %d are gone from it (projection checkpoint seq %d)",
			natslog.StreamName, id.FirstSeq, id.FirstSeq-1, cp)
	case gone > rec.Gone && end < id.LastSeq && cp > end:
		return fmt.Sprintf("stream %s ends at seq %d, before the projection's checkpoint seq %d (in %s): %s gone from it (a block file under %s was cut short or damaged)",
			natslog.StreamName, end, cp, d.Path("views"), goneSeqs(gone, end, id.LastSeq), d.Path("jetstream"))
	case gone > rec.Gone && end < id.LastSeq:
		return fmt.Sprintf("stream %s ends at seq %d, though it had reached seq %d (projection checkpoint seq %d): %s gone from it (a block file under %s was cut short or damaged)",
			natslog.StreamName, end, id.LastSeq, cp, goneSeqs(gone, end, id.LastSeq), d.Path("jetstream"))
	case gone > rec.Gone:
		return fmt.Sprintf("stream %s holds %d messages from seq %d to %d: %d of its sequences are gone (projection in %s at checkpoint seq %d; a block file under %s was damaged)",
			natslog.StreamName, id.Msgs, id.FirstSeq, id.LastSeq, gone, d.Path("views"), cp, d.Path("jetstream"))
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

// LogLoss is StreamLoss, asking the log l for the last message it can
// still give (natslog.Log.TailHeld): a tail lost to a block damaged in
// place still counts in the server's id.Msgs until read, and is counted
// gone here. It returns id with Msgs so lessened, for the stream record
// an accepted loss writes. Errors are l's.
func (d Dir) LogLoss(ctx context.Context, l *natslog.Log, id natslog.Identity, rec StreamRecord, have bool, cp uint64) (string, natslog.Identity, error) {
	end, err := l.TailHeld(ctx, id)
	if err != nil {
		return "", id, err
	}
	if tail := id.LastSeq - end; end < id.LastSeq && id.Gone() < tail {
		id.Msgs -= min(id.Msgs, tail-id.Gone())
	}
	return d.StreamLoss(id, end, rec, have, cp), id, nil
}

// ErrStreamLoss reports a log that lost events a projection had seen.
var ErrStreamLoss = errors.New("the log lost events")

// StreamLossError is the error a start on a log that lost events ends
// with: what was lost (StreamLoss's text), and the two ways on. It wraps
// ErrStreamLoss.
func StreamLossError(loss string) error {
	return fmt.Errorf("%w: %s; restore the stream, or run `logbook serve --accept-stream-loss` to set the projection aside and rebuild it from the log as it is", ErrStreamLoss, loss)
}
