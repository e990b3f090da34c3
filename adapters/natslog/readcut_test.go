package natslog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// A read whose ctx ends while its source waits (a consumer being created
// on a cluster with no meta leader, a replica that delivers nothing) ends
// with an error, never as a complete read of what came before: the
// caller would take a short or empty history for the whole.
func TestDecodeParallel_CutByContext(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	for _, tc := range []struct {
		name string
		src  func(ctx context.Context, y func(Msg, error) bool)
	}{
		{"source yields ctx's error", func(ctx context.Context, y func(Msg, error) bool) {
			<-ctx.Done()
			y(Msg{}, ctx.Err())
		}},
		{"source yields ctx's error after a record", func(ctx context.Context, y func(Msg, error) bool) {
			y(Msg{Seq: 1, Subject: "lb.ev.session.x", Data: []byte("{}")}, nil)
			<-ctx.Done()
			y(Msg{}, ctx.Err())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			var errs []error
			whole := l.decodeParallel(ctx, l.newOrder(1), tc.src, func(r events.Record, err error) bool {
				if _, ok := errors.AsType[*DecodeError](err); err != nil && !ok {
					errs = append(errs, err)
				}
				return true
			})
			if whole || len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
				t.Fatalf("decodeParallel = %v with errors %v; want false and one deadline error", whole, errs)
			}
		})
	}
}
