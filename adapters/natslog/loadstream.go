package natslog

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// LoadStreamed is Load for an aggregate of many events: the same records
// (every event of agg in stream order, those the Log quarantines left
// out and listed in Quarantined) and the stream sequence of the last
// one read (0 and no records if agg has none), judged alike, but read
// through one consumer on agg's subject, which the server streams
// while the client decodes, instead of a batched direct get per 1000
// events each waiting for the one before; the consumer is read over a
// connection of the read's own that leaves each message's headers to
// the decoding goroutines (consumeRaw), and through an ordered consumer
// on the Log's connection when that connection cannot be made or
// fails. Messages and their headers are decoded, and
// their signatures (or, on the fast path, their leaf hashes) checked, on
// up to GOMAXPROCS goroutines; each event is then judged in order, after
// the Verifier has observed every key event before it, as a load judges
// it (the key events are asked for once per key event after the
// Verifier's horizon, not once per event). It costs one stream info
// request (the log's last sequence and agg's count), the handshake of
// the read's own connection, and a consumer's creation and deletion:
// four round trips, so a small aggregate loads faster with Load. A key aggregate, and any
// aggregate of a replicated stream (read from its leader), is loaded
// with Load. Errors are Load's: events.ErrMalformed
// for an invalid agg, the first *DecodeError of a stored event that does
// not decode and is not quarantined, and the server's or ctx's.
func (l *Log) LoadStreamed(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	if err := agg.Validate(); err != nil {
		return nil, 0, fmt.Errorf("load %s: %w", agg, err)
	}
	if agg.Kind == events.KindKey || l.leaderReads {
		return l.Load(ctx, agg)
	}
	subject := agg.Subject()
	end, count, err := l.subjectState(ctx, subject)
	if err != nil {
		return nil, 0, fmt.Errorf("load %s: %w", agg, err)
	}
	if end == 0 {
		return nil, 0, nil
	}
	ord := l.newOrder(1)
	ord.keys, ord.end = true, end
	src := func(ctx context.Context, y func(Msg, error) bool) { l.consumeRawHeld(ctx, subject, 1, end, count, y) }
	var (
		// Sized once: growing a slice of 20,000 records by doubling
		// copied them twice over, under the collector's write barriers.
		recs = make([]events.Record, 0, count)
		last uint64
		ferr error
	)
	l.decodeParallel(ctx, ord, src, func(r events.Record, err error) bool {
		if err != nil {
			ferr = err
			return false
		}
		recs = append(recs, r)
		last = r.Seq
		return true
	})
	if ferr != nil {
		return nil, 0, fmt.Errorf("load %s: %w", agg, ferr)
	}
	if st, ok := ord.aggs[subject]; ok {
		last = max(last, st.Through)
	}
	return recs, last, nil
}

// subjectState returns what LastSeq returns on a stream of one replica,
// the stream's last sequence, and how many messages subject (a literal
// subject) holds, from one stream info request. Errors are LastSeq's.
func (l *Log) subjectState(ctx context.Context, subject string) (last, count uint64, err error) {
	var info *jetstream.StreamInfo
	// Each attempt has the Log's Timeout, as LastSeq's has: the wait
	// across a restart of JetStream is acrossHeals's (ElectionWait).
	err = l.acrossHeals(ctx, func() error {
		ctx, cancel := l.withTimeout(ctx)
		defer cancel()
		return l.untilAnswered(ctx, func(ctx context.Context) (err error) {
			info, err = l.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
			return err
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("last seq of %s: %w", StreamName, err)
	}
	return info.State.LastSeq, info.State.Subjects[subject], nil
}
