package natslog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// AggregateIDs returns the ids of the aggregates of kind (events.Kind…)
// whose id begins with prefix, in no order, read from the subjects of the
// stream (what it holds per subject, not the events): the same through a
// server and on a data dir. During an election, when no server answers
// or a replica knows no leader, it asks again, each attempt bounded by
// DefaultTimeout, for up to ElectionWait, then fails naming the wait.
func (l *Log) AggregateIDs(ctx context.Context, kind, prefix string) ([]string, error) {
	base := events.SubjectEvents + "." + kind + "."
	filter := base + ">"
	var (
		info *jetstream.StreamInfo
		err  error
	)
	start, pause := time.Now(), 100*time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, DefaultTimeout)
		var s jetstream.Stream
		s, err = l.js.Stream(actx, StreamName)
		if err == nil {
			info, err = s.Info(actx, jetstream.WithSubjectFilter(filter))
		}
		cancel()
		if err == nil && info.Cluster != nil && info.Config.Replicas > 1 && info.Cluster.Leader == "" {
			err = errors.New("the stream has no leader")
		} else if err == nil || !Unserved(ctx, err) {
			break
		}
		if waited := time.Since(start); waited+pause > ElectionWait || ctx.Err() != nil {
			return nil, fmt.Errorf("stream %s: waited %v for a leader to answer: %w", StreamName, waited.Round(time.Second), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for subj := range info.State.Subjects {
		rest, ok := strings.CutPrefix(subj, base)
		if !ok {
			continue
		}
		// The aggregate's id is the subject's next token.
		id, _, _ := strings.Cut(rest, ".")
		if strings.HasPrefix(id, prefix) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
