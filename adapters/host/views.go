package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/projections"
)

// Views is how OpenViews opens a data dir's projections (views/) over
// its log.
type Views struct {
	Dir datadir.Dir  // the data dir; the projections are in Dir.Path("views")
	Log *natslog.Log // the log they are folded from; not closed here
	// CacheSize is Pebble's block cache in bytes (0: Pebble's default).
	CacheSize int64
	// FS, when not nil, is the file system the views are first opened
	// in (serve's: writes held while the disk is full).
	FS vfs.FS
	// AcceptLoss sets aside, rather than refuses, a projection the log
	// lost events of (serve --accept-stream-loss), and rebuilds it from
	// the log, which is the truth.
	AcceptLoss bool
	// Said receives the one line said when a projection is set aside
	// (without a newline); nil says nothing.
	Said func(line string)
	// Remote is the server Log reads from when it is not the data
	// dir's own (a follower's serve): kept in stream.json, so that a
	// command that finds the data dir without its serve says where its
	// log is rather than starting an empty one (datadir.Dir.FollowerError).
	Remote string
	// Role, when not "", is the role of the serve opening the views,
	// "reader" or "writer", kept in stream.json (StreamRecord.Reader) so
	// that a hook on the data dir of a stopped reader knows its spool is
	// never delivered; "" (a command that is not serve) keeps what is
	// recorded.
	Role string
}

// OpenViews opens the projections in v.Dir, after checking that v.Log
// still holds every event they were made from (datadir.Dir.LogLoss, with
// stream.json). When it does not, it returns datadir.StreamLossError
// naming both sequences; with v.AcceptLoss it renames the projection to
// views.lost-<unix time>, says so through v.Said and opens an empty one
// to rebuild; with v.AcceptLoss it also walks the whole log
// (natslog.Log.FindMissing), so that a message lost in place, which the
// server's counts miss, is accepted alike, and records what the walk
// counted as accepted. It writes stream.json when there was none and takes group
// and other permissions away from the data dir (Pebble makes its
// directory 0755). A corrupt store fails with an error wrapping
// projections.ErrCorrupt; one because another process holds the
// store's lock says so; any other open error names the folder and the
// fix, or, when nothing was there, that it could not be made. The
// caller owns the store and closes it.
func OpenViews(ctx context.Context, v Views) (*projections.Store, error) {
	dd, log := v.Dir, v.Log
	fsys := v.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	_, lerr := fsys.Stat(dd.Path("views"))
	if v.FS == nil {
		// Opening the store writes (a new MANIFEST, its options), and
		// catching it up writes more: on a disk with no room Pebble
		// fails for good, from goroutines of its own, or tries a flush
		// again and again. serve holds its writes (v.FS); a command
		// without serve stops here, saying why. (A read-only file
		// system fails the open itself, said below.)
		where := dd.Path("views")
		if lerr != nil {
			where = dd.Path("")
		}
		if why := diskfull.Probe(where, false); why != "" && why != diskfull.ReadOnly {
			return nil, fmt.Errorf("projections in %s cannot be opened: the disk there takes no writes (%s); %s and run the command again", dd.Path("views"), why, diskfull.Remedy(why))
		}
	}
	store, err := projections.Open(dd.Path("views"), projections.Options{CacheSize: v.CacheSize, FS: v.FS})
	if errors.Is(err, projections.ErrCorrupt) {
		return nil, err // names the file and the fix
	}
	if _, ok := errors.AsType[*projections.DiskError](err); ok {
		return nil, err // names the directory, the disk's refusal and the fix
	}
	if err != nil && lerr != nil {
		// Nothing was there to remove: the folder could not be made.
		return nil, fmt.Errorf("create projections in %s: %w (check that the data dir is a directory you may write, with room)", dd.Path("views"), err)
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Pebble's LOCK is held: another process has these projections
		// open, and they are in use, not broken.
		return nil, fmt.Errorf("open projections in %s: %w: another process has them open (a serve on this data dir whose lock file was removed?); stop it first", dd.Path("views"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("open projections in %s: %w (remove it to rebuild from the log)", dd.Path("views"), err)
	}
	id, err := log.Identity(ctx)
	if err != nil {
		store.Close()
		return nil, err
	}
	rec, have, err := dd.ReadStreamRecord()
	if err != nil {
		store.Close()
		return nil, err
	}
	loss, id, err := dd.LogLoss(ctx, log, id, rec, have, store.Checkpoint())
	if err != nil {
		store.Close()
		return nil, err
	}
	gone := rec.Gone
	if v.AcceptLoss {
		// The server's counts miss a message lost in place (a block
		// damaged in its middle), which serve's walk of the log names at
		// each start: accepted here too, counted by the same walk, so
		// that the starts after are quiet. It reads the whole log.
		m, err := log.FindMissing(ctx)
		if err != nil {
			store.Close()
			return nil, err
		}
		if loss == "" && have && m.Count > rec.Gone {
			loss = m.String()
		}
		gone = max(gone, m.Count)
	}
	if loss != "" {
		store.Close()
		if !v.AcceptLoss {
			return nil, datadir.StreamLossError(loss)
		}
		aside := dd.Path(fmt.Sprintf("views.lost-%d", time.Now().Unix()))
		if err := os.Rename(dd.Path("views"), aside); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("set aside projections: %w", err)
		}
		if v.Said != nil {
			v.Said(fmt.Sprintf("%s; --accept-stream-loss: projection set aside in %s and rebuilt from the log", loss, aside))
		}
		if store, err = projections.Open(dd.Path("views"), projections.Options{CacheSize: v.CacheSize}); err != nil {
			return nil, err
		}
		have = false
	}
	reader := rec.Reader
	if v.Role != "" {
		reader = v.Role == "reader"
	}
	if !have || rec.Remote != natslog.RedactURL(v.Remote) || rec.Reader != reader || gone > rec.Gone {
		if err := dd.WriteStreamRecord(id, gone, v.Remote, reader); err != nil {
			store.Close()
			return nil, fmt.Errorf("write %s: %w", dd.Path("stream.json"), err)
		}
	}
	if err := dd.Tighten(); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// CheckLog makes sure v.Log still holds every event the data dir's
// projection was made from, before a command that opens the data dir
// directly reads or appends anything. With a projection in views/ it
// opens it (OpenViews) and returns it, the caller's to use and close;
// else it compares the stream with stream.json alone and returns a nil
// store. A loss is an error wrapping datadir.ErrStreamLoss that names
// the sequences and the fix. It costs one stream info (and one get of
// the last message when messages are gone).
func CheckLog(ctx context.Context, v Views) (*projections.Store, error) {
	if _, err := os.Stat(v.Dir.Path("views")); err == nil {
		return OpenViews(ctx, v)
	}
	id, err := v.Log.Identity(ctx)
	if err != nil {
		return nil, err
	}
	rec, have, err := v.Dir.ReadStreamRecord()
	if err != nil {
		return nil, err
	}
	loss, _, err := v.Dir.LogLoss(ctx, v.Log, id, rec, have, 0)
	if err != nil {
		return nil, err
	}
	if loss != "" {
		return nil, datadir.StreamLossError(loss)
	}
	return nil, nil
}
