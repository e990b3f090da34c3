package natslog

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// FindEvent returns the stream sequence of the event with id, and false
// when the log holds none: it reads every event message from the start,
// decoding (with reg) only those whose bytes hold the id. A message that
// does not decode (a judged read quarantines it) is the event when its
// "id" field is id: it is stored all the same. Errors are the log's.
func (l *Log) FindEvent(ctx context.Context, reg *events.Registry, id ulid.ULID) (uint64, bool, error) {
	d := reg.NewDecoder()
	for m, err := range l.ReadRaw(ctx, events.SubjectEvents+".>", 1) {
		if err != nil {
			return 0, false, err
		}
		if !strings.Contains(string(m.Data), id.String()) {
			continue
		}
		e, err := d.Decode(m.Data)
		if err == nil && e.ID == id || err != nil && claimsID(m.Data, id) {
			return m.Seq, true, nil
		}
	}
	return 0, false, nil
}

// claimsID reports whether data, an event message that does not decode,
// is a JSON object whose "id" field is id.
func claimsID(data []byte, id ulid.ULID) bool {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	got, err := ulid.ParseStrict(v.ID)
	return err == nil && got == id
}
