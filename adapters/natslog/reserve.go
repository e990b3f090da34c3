package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrAppendsHeld reports an append the stream refused whole, before
// anything of it was staged or stored, because its server holds appends
// (Server.HoldAppends): the disk under the log's store has less free
// space than its reserve. Appending again once space is freed is safe.
var ErrAppendsHeld = errors.New("natslog: appends held: the disk under the log's store has less free space than its reserve; serve takes appends again once space is freed")

// heldError reports whether apiErr is the stream's refusal of a message
// over its MaxBytes (err_code 10077, "maximum bytes exceeded", nats-server
// v2.15): the LOGBOOK stream has no MaxBytes but while its appends are
// held (HoldAppends).
func heldError(apiErr *jetstream.APIError) bool {
	return apiErr.ErrorCode == jsErrCodeStoreFailed && strings.Contains(apiErr.Description, "maximum bytes exceeded")
}

// jsErrCodeStoreFailed is nats-server's JSStreamStoreFailedF (v2.15):
// the store refused a message; its description says why.
const jsErrCodeStoreFailed = 10077

// HoldAppends makes the LOGBOOK stream of this embedded server refuse
// every new message (held true) or take them again (held false), and
// returns nil when the stream already does. It holds them by setting the
// stream's MaxBytes to the bytes it holds (Discard new: the server then
// refuses each message, and each atomic batch whole at its commit, with
// "maximum bytes exceeded", which Append returns as ErrAppendsHeld); it
// lets them go by setting MaxBytes back to -1 (no limit, as
// Config.StreamConfig makes the stream). Nothing stored is touched: a
// stream whose Discard is not new is refused (a MaxBytes on it would
// delete its oldest messages), as Open refuses it.
//
// It exists because a single server commits an atomic batch message by
// message (nats-server v2.15, non-clustered): a write the disk refuses
// part way through leaves the batch's first messages stored and the
// rest not, though the publisher is answered with an error. Serve holds
// appends while the disk has less than a reserve free, so that the log's
// own growth never fills it during a commit (adapters/diskfull.Guard).
// It connects in process as RoleAdmin (the only role that may update the
// stream), or as the one user of a server without Users, for the call.
func (s *Server) HoldAppends(ctx context.Context, held bool) error {
	connect := func() (*nats.Conn, error) { return s.ConnectAs(RoleAdmin) }
	if len(s.cfg.Users) == 0 {
		connect = func() (*nats.Conn, error) { return s.Connect() } // its one user may do anything
	}
	nc, err := connect()
	if err != nil {
		return fmt.Errorf("natslog: hold appends: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natslog: hold appends: %w", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return fmt.Errorf("natslog: hold appends: stream %s: %w", StreamName, err)
	}
	info := st.CachedInfo()
	cfg := info.Config
	if cfg.Discard != jetstream.DiscardNew {
		return fmt.Errorf("natslog: hold appends: stream %s discards %s messages, not new ones: a MaxBytes would delete stored ones", StreamName, cfg.Discard)
	}
	switch {
	case held && cfg.MaxBytes > 0 && uint64(cfg.MaxBytes) <= info.State.Bytes:
		return nil // held already: no message fits
	case !held && cfg.MaxBytes == -1:
		return nil
	}
	cfg.MaxBytes = -1
	if held {
		cfg.MaxBytes = int64(max(info.State.Bytes, 1))
	}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("natslog: hold appends (%v): update stream %s: %w", held, StreamName, err)
	}
	return nil
}
