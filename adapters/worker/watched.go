package worker

import (
	"context"
	"errors"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// RunWatched runs w until ctx is done, as Run does, while watching once
// a second that l's stream is still the incarnation sid
// (natslog.Log.WatchStream): when it is gone or re-created, w is stopped
// and the error wraps natslog.ErrStreamLost. Otherwise it returns Run's
// error. It blocks until w has stopped.
func RunWatched(ctx context.Context, w *Worker, l *natslog.Log, sid natslog.Identity) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		if err := l.WatchStream(wctx, sid, time.Second); err != nil {
			cancel(err)
		}
	}()
	err := w.Run(wctx)
	if cause := context.Cause(wctx); errors.Is(cause, natslog.ErrStreamLost) {
		err = cause
	}
	return err
}
