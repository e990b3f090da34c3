package main

import (
	"context"
	"os"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// streamRecord is the data dir's stream.json (datadir.StreamRecord).
type streamRecord = datadir.StreamRecord

// readStreamRecord reads stream.json (datadir.Dir.ReadStreamRecord).
func (d dataDir) readStreamRecord() (streamRecord, bool, error) { return d.dir().ReadStreamRecord() }

// writeStreamRecord writes stream.json (datadir.Dir.WriteStreamRecord).
func (d dataDir) writeStreamRecord(id natslog.Identity) error { return d.dir().WriteStreamRecord(id) }

// streamLossError is the error a start on a log that lost events ends
// with (datadir.StreamLossError).
var streamLossError = datadir.StreamLossError

// checkLog makes sure the log still holds every event the data dir's
// projection was made from, before a command that opens the data dir
// directly reads or appends anything: with a projection in views/ it
// opens it through openViews (kept in b.views for the command's own
// openViews), else it compares the stream with stream.json alone. A loss
// is an error wrapping datadir.ErrStreamLoss that names the sequences and the
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

// logLoss is datadir.Dir.LogLoss on dd.
func logLoss(ctx context.Context, dd dataDir, l *natslog.Log, id natslog.Identity, rec streamRecord, have bool, cp uint64) (string, error) {
	return dd.dir().LogLoss(ctx, l, id, rec, have, cp)
}

// streamLost is natslog.Log.StreamLost on l.
func streamLost(l *natslog.Log, was natslog.Identity, err error) error { return l.StreamLost(was, err) }
