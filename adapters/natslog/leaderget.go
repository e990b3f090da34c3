package natslog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// On a replicated stream with direct gets allowed, every replica answers
// a direct get (one queue group), and a follower answers with what it has
// applied, which can be behind what the leader acknowledged: an event just
// appended may be missing from its answer. Reads that must see every
// acknowledged append (loading an aggregate to decide on it, the last
// event for read-your-writes, locating a re-sent batch) therefore ask the
// stream leader through the JetStream API on such a stream.

// errNoMsg reports that the leader holds no message matching a get.
var errNoMsg = errors.New("natslog: no message")

// msgGetRequest is the JetStream API's STREAM.MSG.GET request
// (nats-server v2.15 JSApiMsgGetRequest).
type msgGetRequest struct {
	Seq        uint64 `json:"seq,omitempty"`
	NextBySubj string `json:"next_by_subj,omitempty"`
	LastBySubj string `json:"last_by_subj,omitempty"`
}

// msgGetResponse is its answer (JSApiMsgGetResponse).
type msgGetResponse struct {
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// The API's error codes for "no message found", for "JetStream system
// temporarily unavailable" (what a replica answers while the stream has
// no leader) and for "insufficient resources" (no peers known yet for a
// stream's replicas).
const (
	jsErrNoMessage       = 10037
	jsErrClusterNotAvail = 10008
	jsErrNoPeers         = 10005
)

// jsErrConsumerCreate is the API's error code for a consumer it could not
// create; with the description errConsumerStore it could not write the
// consumer's store (nats-server 2.15, jetstream_api.go
// errConsumerStoreFailed, which hides the write's own error).
const (
	jsErrConsumerCreate = 10012
	errConsumerStore    = "error creating store for consumer"
)

// StoreRefused reports whether err is the server's refusal to create a
// durable consumer because it could not write the consumer's store: a
// full disk or a file system remounted read-only, most often. Asking
// again once the disk takes writes succeeds, so a reactor that creates
// its consumer at start waits rather than fails (what serve's workers
// do: see adapters/diskfull).
func StoreRefused(err error) bool {
	ae, ok := errors.AsType[*jetstream.APIError](err)
	if !ok || ae.ErrorCode != jsErrConsumerCreate {
		return false
	}
	// The server hides the write's error behind errConsumerStore on one
	// path and gives it as is on another (the consumer's meta.inf write).
	for _, s := range []string{errConsumerStore, "no space left on device", "read-only file system", "disk quota exceeded"} {
		if strings.Contains(ae.Description, s) {
			return true
		}
	}
	return false
}

// errLeaderless reports an answer given while the stream had no leader:
// asked again, the elected leader answers.
var errLeaderless = errors.New("natslog: the stream has no leader")

// leaderGet asks the stream leader for one message: by sequence, the next
// on a subject from a sequence, or the last on a subject filter. It
// returns errNoMsg when none matches.
func (l *Log) leaderGet(ctx context.Context, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	body, _ := json.Marshal(req)
	var resp *nats.Msg
	err := l.untilAnswered(ctx, func(ctx context.Context) (err error) {
		resp, err = l.js.Conn().RequestWithContext(ctx, jsAPI("STREAM.MSG.GET", StreamName), body)
		return err
	})
	if err != nil {
		return nil, err
	}
	var r msgGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("stream msg get: %w", err)
	}
	if r.Error != nil {
		if r.Error.ErrCode == jsErrNoMessage {
			return nil, errNoMsg
		}
		if r.Error.ErrCode == jsErrClusterNotAvail {
			return nil, fmt.Errorf("stream msg get: %s (%d): %w", r.Error.Description, r.Error.ErrCode, errLeaderless)
		}
		return nil, fmt.Errorf("stream msg get: %s (%d)", r.Error.Description, r.Error.ErrCode)
	}
	if r.Message == nil {
		return nil, errors.New("stream msg get: empty answer")
	}
	m := &jetstream.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Seq, Data: r.Message.Data, Time: r.Message.Time}
	if len(r.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(r.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("stream msg get %d: headers: %w", r.Message.Seq, err)
		}
		m.Header = h
	}
	return m, nil
}

// served makes m's sequence and subject the ones the server gave a direct
// get's answer: its Nats-Sequence and Nats-Subject headers come after any
// the publisher stored with the message, which a holder of the stream's
// credentials may set to anything (a replayed message copies them), and
// a client reads the first. It returns m.
func served(m *jetstream.RawStreamMsg) *jetstream.RawStreamMsg {
	if m == nil {
		return m
	}
	if vs := m.Header.Values(jetstream.SequenceHeader); len(vs) > 1 {
		if n, err := strconv.ParseUint(vs[len(vs)-1], 10, 64); err == nil {
			m.Sequence = n
		}
	}
	if vs := m.Header.Values(jetstream.SubjectHeader); len(vs) > 1 {
		m.Subject = vs[len(vs)-1]
	}
	return m
}

// getMsg is l.stream.GetMsg, from the leader on a replicated stream; on
// one replica asked again while no server takes the request (within
// Config.Timeout) or JetStream restarted meanwhile (acrossHeals): "no
// message" answered during a restart is not taken for the stream's.
// When ctx has no deadline each attempt across a restart is bounded by
// Config.Timeout (ElectionWait on a replicated stream), never the whole
// wait by one.
func (l *Log) getMsg(ctx context.Context, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	if !l.leaderReads {
		var opts []jetstream.GetMsgOpt
		if subject != "" {
			opts = append(opts, jetstream.WithGetMsgSubject(subject))
		}
		var m *jetstream.RawStreamMsg
		err := l.acrossHeals(ctx, func() error {
			ctx, cancel := l.withTimeout(ctx)
			defer cancel()
			return l.untilAnswered(ctx, func(actx context.Context) (err error) {
				m, err = l.stream.GetMsg(actx, seq, opts...)
				return err
			})
		})
		return served(m), err
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	return l.leaderGet(ctx, msgGetRequest{Seq: seq, NextBySubj: subject})
}

// leaderPage is loadPage on a replicated stream: up to loadPage events of
// p, one leader get each.
func (l *Log) leaderPage(ctx context.Context, p page, st *attestation.AggState, recs *[]events.Record, last *uint64) (got int, more bool, err error) {
	d := l.reg.NewDecoder()
	from := p.from
	for got < loadPage {
		m, err := l.leaderGet(ctx, msgGetRequest{Seq: from, NextBySubj: p.subject})
		if errors.Is(err, errNoMsg) {
			return got, false, nil
		}
		if err != nil {
			return got, false, err
		}
		if p.upto > 0 && m.Sequence > p.upto {
			return got, false, nil
		}
		got++
		*last = m.Sequence
		if err := l.loaded(ctx, p, m, d, st, recs); err != nil {
			return got, false, err
		}
		from = m.Sequence + 1
	}
	return got, true, nil
}

// untilAnswered calls f, a read, each time with ctx bounded by
// Config.Timeout, and again after a pause (firstPause doubling up to
// maxPause) while no server took its request (the stream has no leader
// during an election), a replica answered for want of a leader, or none
// answered in time (a leader that died with
// the request): a read changes nothing, so asking again is safe. It
// returns f's last error once ctx ends.
func (l *Log) untilAnswered(ctx context.Context, f func(context.Context) error) error {
	unanswered := func(err error) bool {
		return noResponders(err) || leaderless(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
	}
	return askAgain(ctx, nil, time.Time{}, unanswered, func() error {
		actx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		defer cancel()
		return f(actx)
	})
}

// askAgain calls f, a read, and again after a pause (firstPause
// doubling up to maxPause) while its error is one again takes, until ctx
// ends, quit is closed (nil: never), or, when until is not zero, the
// next pause would end past until. It returns f's last error (nil once
// f succeeds).
func askAgain(ctx context.Context, quit <-chan struct{}, until time.Time, again func(error) bool, f func() error) error {
	pause := firstPause
	for {
		err := f()
		if err == nil || ctx.Err() != nil || !again(err) || !until.IsZero() && !time.Now().Add(pause).Before(until) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-quit:
			t.Stop()
			return err
		}
		pause = min(pause*2, maxPause)
	}
}

// leaderless reports an error answered while the stream had no leader.
func leaderless(err error) bool {
	if ae, ok := errors.AsType[*jetstream.APIError](err); ok && int(ae.ErrorCode) == jsErrClusterNotAvail {
		return true
	}
	return errors.Is(err, errLeaderless)
}

// Unserved reports whether err, from a JetStream API request made under
// ctx, is a cluster's answer while it cannot serve the request yet — a
// meta or stream leader being elected, a stream just created whose
// replicas are not placed — so asking again later may succeed: no
// answer within the request's own timeout (ctx still live), no
// responders, "temporarily unavailable" (503), or no peers yet (10005).
// A refusal (permissions, a bad request) is not.
func Unserved(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || noResponders(err) {
		return true
	}
	ae, ok := errors.AsType[*jetstream.APIError](err)
	return ok && (ae.Code == 503 || ae.ErrorCode == jsErrNoPeers)
}
