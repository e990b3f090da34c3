package natslog

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// OutputSubject returns lb.out.<commandID>, the subject of a command's
// output chunks. It does not validate commandID.
func OutputSubject(commandID string) string { return events.SubjectOutput + "." + commandID }

// PublishOutput stores one chunk of command output on
// lb.out.<commandID> with a plain publish: no optimistic concurrency, not
// an event, skipped by Read and Follow (read it back with ReadRaw on
// OutputSubject). msgID, if not empty, becomes Nats-Msg-Id, so a retry
// within the dedup window stores nothing new and returns the first copy's
// sequence. It returns the stream sequence of the chunk. Errors wrap
// events.ErrMalformed for a commandID that is not a valid id, or the
// server's error. Safe for concurrent use; data is not retained.
func (l *Log) PublishOutput(ctx context.Context, commandID, msgID string, data []byte) (uint64, error) {
	if err := events.ValidID(commandID); err != nil {
		return 0, fmt.Errorf("publish output %s: %w", commandID, err)
	}
	m := nats.NewMsg(OutputSubject(commandID))
	m.Data = data
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := l.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, fmt.Errorf("publish output %s: %w", commandID, err)
	}
	return ack.Sequence, nil
}
