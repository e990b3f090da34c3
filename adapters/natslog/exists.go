package natslog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/natsext"

	"github.com/logbook-dev/logbook/events"
)

// AggregateExists reports whether the log holds an event of agg: one
// read of the last message on agg's subject (a direct get, or the
// leader's on a replicated stream), whatever the number of aggregates of
// its kind, where AggregateIDs lists them all. Errors: agg invalid
// (Aggregate.Validate: an id that is no single subject token, such as a
// wildcard, is never looked up), or the read's.
func (l *Log) AggregateExists(ctx context.Context, agg events.Aggregate) (bool, error) {
	if err := agg.Validate(); err != nil {
		return false, err
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	var err error
	if l.leaderReads {
		_, err = l.leaderGet(ctx, msgGetRequest{LastBySubj: agg.Subject()})
	} else {
		_, err = l.stream.GetLastMsgForSubject(ctx, agg.Subject())
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoMsg) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", agg, err)
	}
	return true, nil
}

// existsChunk bounds the subjects one request of NewAggregates names:
// the server answers a request for the last messages of many subjects
// with at most 1024 messages, and refuses one that would need more.
const existsChunk = 256

// lastOfSubjects returns which of subjects (literal, at most
// existsChunk) hold a message: one direct get of the last message of
// each (a stream's direct gets, any replica's), bounded by ctx and
// Config.Timeout, asked again if the embedded server restarted JetStream
// meanwhile (acrossHeals), so that an answer given during a restart is
// never taken for the stream's. An
// answer cut short (the server stops at its pending-bytes bound), or a
// status other than "no results" and the end of the batch, is an error:
// nothing is then said of any subject.
func (l *Log) lastOfSubjects(ctx context.Context, subjects []string) (map[string]bool, error) {
	var found map[string]bool
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{subjects})
	if err != nil {
		return nil, err
	}
	err = l.acrossHeals(ctx, func() error {
		found = make(map[string]bool, len(subjects))
		ctx, cancel := l.withTimeout(ctx)
		defer cancel()
		msgs, err := natsext.RequestMany(ctx, l.js.Conn(), jsAPI("DIRECT.GET", StreamName), req,
			natsext.RequestManySentinel(func(*nats.Msg) bool { return false }))
		if err != nil {
			return err
		}
		for m, err := range msgs {
			if err != nil {
				return err
			}
			// A stored message carries the subject the server stored
			// it on in its last Nats-Subject header (served); the
			// server's statuses carry none.
			if vs := m.Header.Values(jetstream.SubjectHeader); len(vs) > 0 {
				found[vs[len(vs)-1]] = true
				continue
			}
			status, desc := m.Header.Get("Status"), m.Header.Get("Description")
			switch {
			case status == "404" && desc == "No Results":
				return nil // none of subjects holds a message
			case status == "204" && desc == "EOB":
				if p := m.Header.Get("Nats-Num-Pending"); p != "0" {
					return fmt.Errorf("direct get of the last messages of %d subjects: answer cut short, %s not sent", len(subjects), p)
				}
				return nil
			default:
				return fmt.Errorf("direct get of the last messages of %d subjects: %s %s", len(subjects), status, desc)
			}
		}
		return fmt.Errorf("direct get of the last messages of %d subjects: no answer: %w", len(subjects), cmp.Or(ctx.Err(), context.DeadlineExceeded))
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// NewAggregates returns those of aggs the log holds no message of (on
// their subjects) now: one direct get of the last message of each
// subject, existsChunk subjects per request, the last message of a subject is asked for by AggregateExists.
// An import asks it of every session it is about to import before its
// first append, when no batch of its own is being stored: a read the
// server serves only between stored batches then waits for none. On a
// replicated stream it returns none (each session is read from the
// leader when imported). Errors: an agg invalid (Aggregate.Validate),
// or a read's; none is then returned.
func (l *Log) NewAggregates(ctx context.Context, aggs []events.Aggregate) ([]events.Aggregate, error) {
	if l.leaderReads {
		return nil, nil
	}
	var out []events.Aggregate
	for len(aggs) > 0 {
		n := min(len(aggs), existsChunk)
		chunk := aggs[:n]
		aggs = aggs[n:]
		subjects := make([]string, 0, n)
		for _, agg := range chunk {
			if err := agg.Validate(); err != nil {
				return nil, err
			}
			subjects = append(subjects, agg.Subject())
		}
		found, err := l.lastOfSubjects(ctx, subjects)
		if err != nil {
			return nil, err
		}
		for _, agg := range chunk {
			if !found[agg.Subject()] {
				out = append(out, agg)
			}
		}
	}
	return out, nil
}
