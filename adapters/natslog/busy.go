package natslog

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// On a replicated stream the leader refuses a publish with an expected
// last subject sequence while an earlier publish to the same subject is
// still being proposed to the replicas ("wrong last sequence", error
// 10164, with no sequence): it stores nothing, and it has not checked
// the expectation. Answering that refusal as a conflict would report
// the aggregate moved before the move is in the log: a load made just
// after the conflict, from the same leader, would still show the old
// last sequence, and if the earlier publish is then lost with a leader,
// the aggregate never moved at all. The committer sends such a publish
// again instead, after busyPause, until the earlier one is settled: the
// answer is then the real check against the stored aggregate (stored,
// or a conflict naming the sequence it moved to). The linearizability
// checker (adapters/natslog/lincheck, run on a cluster under faults by
// adapters/natscluster) found the early conflict.

// busyPause is the pause before a publish refused as busy goes out
// again: an earlier proposal is usually settled within a replication
// round trip.
const busyPause = 5 * time.Millisecond

// busy reports whether err is the leader's refusal of an expected
// sequence check on a subject with a publish still in flight.
func busy(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
