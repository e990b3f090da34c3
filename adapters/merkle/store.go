package merkle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// The checkpoint stream: every host reads it; serve publishes checkpoints
// on CheckpointSubject, each witness its cosignatures on
// CosignSubject(key ID). Like LOGBOOK it is append-only at the server
// (deny delete and purge): a checkpoint once seen stays to be checked.
const (
	CheckpointStream   = "LOGBOOK_CHECKPOINTS"
	CheckpointSubjects = "lbck.>"
	CheckpointSubject  = "lbck.checkpoint"
	CosignSubjects     = "lbck.cosig.>"
)

// HeaderCheckpointSeq, on a cosignature message, is the sequence in
// CheckpointStream of the checkpoint message it co-signs.
const HeaderCheckpointSeq = "Lb-Checkpoint-Seq"

// CosignSubject returns the subject a witness with key ID hash publishes
// its cosignatures on, e.g. "lbck.cosig.1a2b3c4d".
func CosignSubject(hash uint32) string { return fmt.Sprintf("lbck.cosig.%08x", hash) }

// StreamConfig returns CheckpointStream's configuration with replicas
// copies: file storage, limits retention, deny delete and purge, discard
// new.
func StreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        CheckpointStream,
		Description: "Logbook checkpoints of the LOGBOOK stream and their witnesses' cosignatures",
		Subjects:    []string{CheckpointSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		MaxMsgSize:  -1,
		DenyDelete:  true,
		DenyPurge:   true,
		AllowDirect: true,
	}
}

// EnsureStream creates CheckpointStream with as many replicas as LOGBOOK
// has, or checks the one there (its subjects, deny delete and purge).
// Creating it takes admin or serve credentials.
func EnsureStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, CheckpointStream)
	if err == nil {
		cfg := s.CachedInfo().Config
		if len(cfg.Subjects) != 1 || cfg.Subjects[0] != CheckpointSubjects || !cfg.DenyDelete || !cfg.DenyPurge {
			return nil, fmt.Errorf("stream %s refused: want subjects [%q], deny_delete and deny_purge; got %q, %t, %t",
				CheckpointStream, CheckpointSubjects, cfg.Subjects, cfg.DenyDelete, cfg.DenyPurge)
		}
		return s, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s: %w", CheckpointStream, err)
	}
	replicas := 1
	if ls, err := js.Stream(ctx, natslog.StreamName); err == nil {
		replicas = ls.CachedInfo().Config.Replicas
	}
	s, err = js.CreateStream(ctx, StreamConfig(replicas))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return js.Stream(ctx, CheckpointStream)
	}
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", CheckpointStream, err)
	}
	return s, nil
}

// Stored is one message of CheckpointStream.
type Stored struct {
	Seq     uint64 // its sequence in CheckpointStream
	Subject string
	Header  nats.Header
	Data    []byte // a signed note
}

// CheckpointSeq returns, for a cosignature, HeaderCheckpointSeq (0 if
// missing or malformed).
func (s Stored) CheckpointSeq() uint64 {
	n, _ := strconv.ParseUint(s.Header.Get(HeaderCheckpointSeq), 10, 64)
	return n
}

// IsCheckpoint reports a checkpoint (not a cosignature).
func (s Stored) IsCheckpoint() bool { return s.Subject == CheckpointSubject }

// IsCosignature reports a cosignature.
func (s Stored) IsCosignature() bool { return strings.HasPrefix(s.Subject, "lbck.cosig.") }

// PublishCheckpoint stores a signed checkpoint note and returns its
// sequence in CheckpointStream.
func PublishCheckpoint(ctx context.Context, js jetstream.JetStream, signed []byte) (uint64, error) {
	ack, err := js.Publish(ctx, CheckpointSubject, signed, jetstream.WithExpectStream(CheckpointStream))
	if err != nil {
		return 0, fmt.Errorf("publish checkpoint: %w", err)
	}
	return ack.Sequence, nil
}

// PublishCosignature stores a witness's cosigned note of the checkpoint
// at cpSeq.
func PublishCosignature(ctx context.Context, js jetstream.JetStream, w *Witness, cpSeq uint64, cosigned []byte) error {
	m := nats.NewMsg(CosignSubject(w.KeyHash()))
	m.Header.Set(HeaderCheckpointSeq, strconv.FormatUint(cpSeq, 10))
	m.Data = cosigned
	if _, err := js.PublishMsg(ctx, m, jetstream.WithExpectStream(CheckpointStream)); err != nil {
		return fmt.Errorf("publish cosignature of checkpoint %d: %w", cpSeq, err)
	}
	return nil
}

// Follow yields the messages of CheckpointStream on filter from sequence
// from (1 or 0: the first) on, waiting for new ones until ctx is done
// (then it ends without an error). With wait false it stops at the
// stream's last message, or once none has come for followStall (one the
// stream counts but cannot give). Other errors are yielded once and end it.
func Follow(ctx context.Context, js jetstream.JetStream, filter string, from uint64, wait bool, yield func(Stored, error) bool) {
	s, err := js.Stream(ctx, CheckpointStream)
	if err != nil {
		yield(Stored{}, fmt.Errorf("stream %s: %w", CheckpointStream, err))
		return
	}
	end := s.CachedInfo().State.LastSeq
	if !wait && (end == 0 || from > end) {
		return
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, MaxResetAttempts: natslog.ResetAttempts}
	if from > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	}
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		yield(Stored{}, fmt.Errorf("read %s: %w", CheckpointStream, err))
		return
	}
	it, err := cons.Messages(jetstream.PullExpiry(10*time.Second), jetstream.PullHeartbeat(2*time.Second))
	if err != nil {
		yield(Stored{}, fmt.Errorf("read %s: %w", CheckpointStream, err))
		return
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	if info := cons.CachedInfo(); !wait && info != nil && info.NumPending == 0 {
		return
	}
	for {
		nctx, cancel := ctx, context.CancelFunc(func() {})
		if !wait {
			// A message the stream counts but cannot give (its block
			// damaged in place) never comes: a read to the end stops
			// once nothing has come for followStall, and leaves the
			// sequences it did not give for the caller to name.
			nctx, cancel = context.WithTimeout(ctx, followStall)
		}
		m, err := it.Next(jetstream.NextContext(nctx))
		stalled := !wait && err != nil && ctx.Err() == nil && nctx.Err() != nil
		cancel()
		if stalled {
			return
		}
		if err != nil {
			if ctx.Err() != nil && wait {
				return
			}
			yield(Stored{}, fmt.Errorf("read %s: %w", CheckpointStream, err))
			return
		}
		md, err := m.Metadata()
		if err != nil {
			yield(Stored{}, fmt.Errorf("read %s: %w", CheckpointStream, err))
			return
		}
		if !yield(Stored{Seq: md.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}, nil) {
			return
		}
		if !wait && (md.NumPending == 0 || md.Sequence.Stream >= end) {
			return
		}
	}
}

// followStall is how long Follow, reading to the end, waits for a
// message the stream still counts before it stops.
const followStall = 10 * time.Second // as natslog's bounded reads

// ReadAll returns every message of CheckpointStream it can give, in
// order; none when the stream does not exist. A message the stream counts
// but cannot give is left out (Follow stops after followStall): Verify
// names such holes.
func ReadAll(ctx context.Context, js jetstream.JetStream) ([]Stored, error) {
	if _, err := js.Stream(ctx, CheckpointStream); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	var out []Stored
	var ferr error
	Follow(ctx, js, CheckpointSubjects, 1, false, func(s Stored, err error) bool {
		if err != nil {
			ferr = err
			return false
		}
		out = append(out, s)
		return true
	})
	return out, ferr
}
