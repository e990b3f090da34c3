package natslog

import (
	"context"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// FindEvent returns the stream sequence of the event with id, and false
// when the log holds none: it reads every event message from the start,
// decoding (with reg) only those whose bytes hold the id. Errors are the
// log's.
func (l *Log) FindEvent(ctx context.Context, reg *events.Registry, id ulid.ULID) (uint64, bool, error) {
	d := reg.NewDecoder()
	for m, err := range l.ReadRaw(ctx, events.SubjectEvents+".>", 1) {
		if err != nil {
			return 0, false, err
		}
		if !strings.Contains(string(m.Data), id.String()) {
			continue
		}
		if e, err := d.Decode(m.Data); err == nil && e.ID == id {
			return m.Seq, true, nil
		}
	}
	return 0, false, nil
}
