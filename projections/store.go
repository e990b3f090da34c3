package projections

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/logbook-dev/logbook/events"
)

// Store keys owned by the store itself.
const (
	// KeyCheckpoint holds the last applied stream sequence, 8 bytes
	// big-endian; absent means 0.
	KeyCheckpoint = "meta/checkpoint"
	// KeyViews holds the views the rows were built by: a JSON object of
	// name → version, e.g. {"sessions":1}.
	KeyViews = "meta/views"
	// metaPrefix prefixes every store-owned key; Hash skips them.
	metaPrefix = "meta/"
)

// Directory suffixes of a rebuild (see Runner.RunOnce).
const (
	rebuildSuffix = ".rebuild"
	oldSuffix     = ".old"
)

// Store errors.
var (
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("projections: store closed")
	// ErrStale reports an Apply on a store whose stored view versions
	// differ from the code's; a Runner rebuilds it instead.
	ErrStale = errors.New("projections: view versions changed; store needs a rebuild")
)

// Options configure a Store. The zero value is valid.
type Options struct {
	// Views are the views the store maintains, in apply order. nil means
	// DefaultViews(). Names must be unique.
	Views []View
	// NoSync commits batches without waiting for the WAL to reach the
	// disk (pebble.NoSync). A process crash loses nothing; an OS crash or
	// power loss can lose the last batches, rows and checkpoint together,
	// which re-applying from the log repairs. Default false: pebble.Sync.
	NoSync bool
	// FS is the file system the store lives in. nil means the operating
	// system's (vfs.Default); OpenMem uses vfs.NewMem().
	FS vfs.FS
	// CacheSize is Pebble's block cache in bytes; 0 means Pebble's default
	// (8 MiB).
	CacheSize int64
	// Logger receives Pebble's messages. nil discards informational and
	// error messages (a library does not log) and panics on fatal ones.
	Logger pebble.Logger
}

// DefaultViews returns the views a store maintains when Options.Views is
// nil: the session view, the command view and the workspace view.
func DefaultViews() []View { return []View{SessionView{}, CommandView{}, WorkspaceView{}} }

// Store is a projection in one Pebble database. It is safe for concurrent
// use: queries run in parallel with a Runner; batches are applied one at a
// time. Queries see only committed batches.
type Store struct {
	dir   string
	fs    vfs.FS
	mem   bool // in memory (OpenMem): no write-ahead log
	opts  Options
	views []View
	want  []byte // meta/views of the code's views
	wo    *pebble.WriteOptions

	mu    sync.RWMutex // guards db and stale; held for writing by a swap and Close
	db    *pebble.DB   // nil once closed
	stale bool

	wmu    sync.Mutex // serializes batches, swaps and shadow handling
	shadow *Store     // the rebuild in progress, if any; guarded by wmu
	carry  carried    // the views' memos after the last commit; guarded by wmu

	cp     atomic.Uint64 // committed checkpoint
	cpMu   sync.Mutex    // guards cpWake
	cpWake chan struct{} // closed and replaced when cp changes or the store closes
	closed atomic.Bool

	// wanted is the highest sequence a WaitFor has waited for; demand
	// (capacity 1) tells Runner.Run that it rose, so that Run commits
	// as soon as it has applied that far instead of at its Interval.
	wanted atomic.Uint64
	demand chan struct{}
}

// Open opens (creating if needed) the store in directory dir and finishes a
// rebuild swap that a crash interrupted (see Runner.RunOnce). It fails if
// the views are misnamed or Pebble cannot open dir. A store whose stored
// view versions differ from opts.Views opens stale: it answers queries
// with its old rows until a Runner rebuilds it. The caller closes it.
func Open(dir string, opts Options) (*Store, error) {
	s, err := newStore(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := recoverSwap(s.fs, dir); err != nil {
		return nil, fmt.Errorf("open projections %s: %w", dir, err)
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenMem returns an empty store in memory (vfs.NewMem), for replays and
// tests; opts.FS is ignored. Its data is gone once it is closed; it keeps
// no write-ahead log.
func OpenMem(opts Options) (*Store, error) {
	s, err := newStore("projections", opts)
	if err != nil {
		return nil, err
	}
	s.fs, s.mem, s.wo = vfs.NewMem(), true, pebble.NoSync
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore validates opts and returns an unopened store.
func newStore(dir string, opts Options) (*Store, error) {
	if opts.Views == nil {
		opts.Views = DefaultViews()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	want := make(map[string]int, len(opts.Views))
	for _, v := range opts.Views {
		if err := validName(v.Name()); err != nil {
			return nil, fmt.Errorf("open projections %s: %w", dir, err)
		}
		if _, dup := want[v.Name()]; dup {
			return nil, fmt.Errorf("open projections %s: view %q twice", dir, v.Name())
		}
		if v.Version() < 1 {
			return nil, fmt.Errorf("open projections %s: view %q version %d < 1", dir, v.Name(), v.Version())
		}
		want[v.Name()] = v.Version()
	}
	wantJSON, err := json.Marshal(want) // map keys are sorted: stable bytes
	if err != nil {
		return nil, fmt.Errorf("open projections %s: %w", dir, err)
	}
	wo := pebble.Sync
	if opts.NoSync {
		wo = pebble.NoSync
	}
	return &Store{dir: dir, fs: opts.FS, opts: opts, views: opts.Views, want: wantJSON, wo: wo, cpWake: make(chan struct{}), demand: make(chan struct{}, 1)}, nil
}

// open opens s.dir and loads the checkpoint and staleness. A new database
// gets the code's view versions.
func (s *Store) open() (err error) {
	defer guard(s.dir, &err)
	po := &pebble.Options{
		FS:                 s.fs,
		FormatMajorVersion: pebble.FormatNewest,
		CacheSize:          s.opts.CacheSize,
		Logger:             s.opts.Logger,
		EventListener:      noCorruptionPanic(),
		// A store in memory is gone when closed: a write-ahead log there
		// would only hold a second copy of every batch.
		DisableWAL: s.mem,
	}
	if po.Logger == nil {
		po.Logger = quietLogger{}
	}
	db, err := pebble.Open(s.dir, po)
	if err != nil {
		return fmt.Errorf("open projections %s: %w", s.dir, err)
	}
	cp, err := readCheckpoint(s.dir, db)
	if err == nil {
		var stale bool
		if stale, err = s.checkViews(db, cp); err == nil {
			s.db, s.stale = db, stale
			s.setCheckpoint(cp)
			return nil
		}
	}
	_ = db.Close() // the read error is the one to report
	return fmt.Errorf("open projections %s: %w", s.dir, err)
}

// checkViews reports whether db's views differ from the code's. A database
// with no views record and no checkpoint is new and gets the code's.
func (s *Store) checkViews(db *pebble.DB, cp uint64) (_ bool, err error) {
	defer guard(s.dir, &err)
	got, ok, err := dbGet(s.dir, db, KeyViews)
	if err != nil {
		return false, err
	}
	if ok {
		return !bytes.Equal(got, s.want), nil
	}
	empty, err := isEmpty(db)
	if err != nil {
		return false, err
	}
	if cp != 0 || !empty {
		return true, nil // rows of unknown views
	}
	if err := db.Set([]byte(KeyViews), s.want, s.wo); err != nil {
		return false, fmt.Errorf("write %s: %w", KeyViews, err)
	}
	return false, nil
}

// Close closes the store and a rebuild in progress. It waits for a batch
// being applied, for running queries and for open Snapshots to be closed
// (so a goroutine holding a Snapshot must close it first). Later calls on
// the store return ErrClosed, and so does closing twice.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var errs []error
	if s.shadow != nil {
		errs = append(errs, s.shadow.Close())
		s.shadow = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close projections %s: %w", s.dir, err))
	}
	s.db = nil
	s.closed.Store(true)
	s.wake()
	return errors.Join(errs...)
}

// Views returns the views the store maintains, in apply order. The slice
// is the caller's; the views are shared.
func (s *Store) Views() []View { return slices.Clone(s.views) }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Checkpoint returns the stream sequence of the last record the store has
// committed, 0 if none. A Runner resumes from Checkpoint()+1.
func (s *Store) Checkpoint() uint64 { return s.cp.Load() }

// setCheckpoint records a committed checkpoint and wakes WaitFor.
func (s *Store) setCheckpoint(cp uint64) {
	s.cp.Store(cp)
	s.wake()
}

func (s *Store) wake() {
	s.cpMu.Lock()
	close(s.cpWake)
	s.cpWake = make(chan struct{})
	s.cpMu.Unlock()
}

// WaitFor blocks until the store has committed the record with stream
// sequence seq or a later one (Checkpoint() ≥ seq), so a caller that has
// just appended can read its own write: pass the append's
// events.Appended.Last. A Runner.Run following the log commits as soon
// as it has applied seq rather than at its Interval: a waiter waits for
// the records to be applied, not for a timer. It returns ctx's error,
// wrapped, if ctx ends first, and ErrClosed if the store is closed. Safe
// for concurrent use.
func (s *Store) WaitFor(ctx context.Context, seq uint64) error {
	if s.cp.Load() < seq {
		s.ask(seq)
	}
	for {
		s.cpMu.Lock()
		wake := s.cpWake
		s.cpMu.Unlock()
		if s.cp.Load() >= seq {
			return nil
		}
		if s.closed.Load() {
			return ErrClosed
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("wait for seq %d (projected up to %d): %w", seq, s.cp.Load(), ctx.Err())
		}
	}
}

// ask raises wanted to seq and tells the Runner, unless a wait for seq
// or a later one was already told.
func (s *Store) ask(seq uint64) {
	for {
		w := s.wanted.Load()
		if w >= seq {
			return
		}
		if s.wanted.CompareAndSwap(w, seq) {
			break
		}
	}
	select {
	case s.demand <- struct{}{}:
	default: // told already, not yet heard
	}
}

// syncWAL makes every commit so far durable: it syncs the write-ahead
// log, which a commit made without its fsync (batch.commitWith
// pebble.NoSync) left to the operating system. Only for a store whose
// commits sync (not NoSync, not in memory).
func (s *Store) syncWAL() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("sync the write-ahead log of %s: %w", s.dir, err)
	}
	return nil
}

// owed reports whether a waiter waits for a sequence the store has not
// committed and that last, the last applied, reaches, or, when idle (no
// record is waiting to be applied), whether any waiter waits: waiters
// for earlier sequences than the last one asked for are answered too.
func (s *Store) owed(last uint64, idle bool) bool {
	w, cp := s.wanted.Load(), s.cp.Load()
	return w > cp && (last >= w || idle && last > cp)
}

// WaitMoving is WaitFor that gives up only when the store stops moving:
// it waits until Checkpoint() ≥ seq for as long as the checkpoint
// advances at least once every idle, so a projector far behind after a
// large import, or slowed by a loaded machine, is waited for, and one
// that is stuck is not. The error then names seq, the checkpoint and
// idle, and wraps context.DeadlineExceeded; ctx's own end, ctx's error;
// a closed store, ErrClosed.
func (s *Store) WaitMoving(ctx context.Context, seq uint64, idle time.Duration) error {
	for {
		from := s.cp.Load()
		wctx, cancel := context.WithTimeout(ctx, idle)
		err := s.WaitFor(wctx, seq)
		cancel()
		switch {
		case err == nil || ctx.Err() != nil || errors.Is(err, ErrClosed):
			return err
		case s.cp.Load() == from:
			return fmt.Errorf("wait for seq %d (projected up to %d, not moving for %s): %w", seq, from, idle, context.DeadlineExceeded)
		}
	}
}

// CatchUp waits until the store has applied every event log holds now,
// for as long as the projection moves (WaitMoving with StillFor), when
// log can say which is its last event (a method LastEventSeq, as
// natslog.Log has); with a log that cannot, it returns nil at once.
// Errors: log's own, or WaitMoving's wrapped as "projection is behind
// the log".
func (s *Store) CatchUp(ctx context.Context, log events.Log) error {
	le, ok := log.(interface {
		LastEventSeq(context.Context) (uint64, error)
	})
	if !ok {
		return nil
	}
	last, err := le.LastEventSeq(ctx)
	if err != nil {
		return err
	}
	if err := s.WaitMoving(ctx, last, StillFor); err != nil {
		return fmt.Errorf("projection is behind the log: %w", err)
	}
	return nil
}

// WaitUnless returns wait's error once wait(ctx) returns, unless stop,
// asked before wait starts and then every every (> 0) while it runs,
// reports true first: then it cancels wait's context, waits for wait to
// return and returns stop's value with a nil error. A read that may answer
// from the projection as it stands while the log does not answer waits so
// for CatchUp, whose own wait on the log can be far longer than a person
// waits for a list. On wait's error the value is the zero T.
func WaitUnless[T any](ctx context.Context, every time.Duration, wait func(context.Context) error, stop func() (T, bool)) (T, error) {
	var zero T
	if v, ok := stop(); ok {
		return v, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- wait(ctx) }()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return zero, err
		case <-t.C:
			if v, ok := stop(); ok {
				cancel()
				<-done
				return v, nil
			}
		}
	}
}

// StillFor is how long a read waits on a projection that does not move
// before it says the projection is behind the log (WaitMoving's idle):
// 15 s, long enough for a projector that starts on a loaded machine or
// waits out a cluster's election before its first event.
const StillFor = 15 * time.Second

// Stale reports whether the store's view versions differ from the code's,
// so its rows are of an old schema and a Runner will rebuild it.
func (s *Store) Stale() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stale
}

// Hash returns the state hash of the committed projection and the
// checkpoint it belongs to, read from one snapshot. See Snapshot.Hash.
func (s *Store) Hash() (string, uint64, error) {
	snap, err := s.Snapshot()
	if err != nil {
		return "", 0, err
	}
	defer snap.Close()
	h, err := snap.Hash()
	return h, snap.Checkpoint(), err
}

// get reads one committed key.
func (s *Store) get(key string) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, false, ErrClosed
	}
	return dbGet(s.dir, s.db, key)
}

// Snapshot is a consistent, read-only view of a store's committed state.
// It holds the store's read lock until Close: a rebuild swap or Close of
// the store waits for it, so close it promptly and do not wait on a Runner
// while holding it. Not safe for concurrent use.
type Snapshot struct {
	s    *Store
	snap *pebble.Snapshot
	cp   uint64
}

// Snapshot returns a snapshot of the committed state; the caller closes it.
func (s *Store) Snapshot() (*Snapshot, error) {
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	snap := s.db.NewSnapshot()
	cp, err := readCheckpoint(s.dir, snap)
	if err != nil {
		_ = snap.Close()
		s.mu.RUnlock()
		return nil, err
	}
	return &Snapshot{s: s, snap: snap, cp: cp}, nil
}

// Checkpoint returns the checkpoint the snapshot's rows belong to.
func (sn *Snapshot) Checkpoint() uint64 { return sn.cp }

// Get returns a copy of key's value and whether it exists.
func (sn *Snapshot) Get(key string) ([]byte, bool, error) { return dbGet(sn.s.dir, sn.snap, key) }

// scan calls fn with each key under prefix, in key order, and a copy of
// its value.
func (sn *Snapshot) scan(prefix string, fn func(key string, value []byte) error) (err error) {
	defer guard(sn.s.dir, &err)
	it, err := sn.snap.NewIter(prefixBounds(prefix))
	if err != nil {
		return fmt.Errorf("scan %s: %w", prefix, err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(string(it.Key()), bytes.Clone(v))
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("scan %s: %w", prefix, err)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("scan %s: %w", prefix, err)
	}
	return nil
}

// rows calls fn with each of ids and the value of the key prefix+id, in
// the order of ids, which must be ascending, as a scan of an index yields
// them: one iterator seeks from key to key rather than a Get each. The
// value is valid only until fn returns (fn copies what it keeps). A key
// that has no value is an error naming it.
func (sn *Snapshot) rows(prefix string, ids []string, fn func(id string, value []byte) error) (err error) {
	if len(ids) == 0 {
		return nil
	}
	defer guard(sn.s.dir, &err)
	it, err := sn.snap.NewIter(prefixBounds(prefix))
	if err != nil {
		return fmt.Errorf("read %s rows: %w", prefix, err)
	}
	key := make([]byte, 0, len(prefix)+32)
	for _, id := range ids {
		key = append(append(key[:0], prefix...), id...)
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			if err = it.Error(); err == nil {
				err = fmt.Errorf("no row %s", key)
			}
			break
		}
		v, verr := it.ValueAndErr()
		if verr == nil {
			verr = fn(id, v)
		}
		if err = verr; err != nil {
			break
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read %s rows: %w", prefix, err)
	}
	return nil
}

// scanAfter calls fn with each key under prefix that sorts after
// prefix+after ("" after: from the first), in key order, and a copy of its
// value, until fn returns false or an error.
func (sn *Snapshot) scanAfter(prefix, after string, fn func(key string, value []byte) (bool, error)) (err error) {
	defer guard(sn.s.dir, &err)
	opts := prefixBounds(prefix)
	if after != "" {
		opts.LowerBound = []byte(prefix + after + "\x00")
	}
	it, err := sn.snap.NewIter(opts)
	if err != nil {
		return fmt.Errorf("scan %s: %w", prefix, err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		more := false
		if err == nil {
			more, err = fn(string(it.Key()), bytes.Clone(v))
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("scan %s: %w", prefix, err)
		}
		if !more {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("scan %s: %w", prefix, err)
	}
	return nil
}

// Row is one key and value of a projection. Both are the caller's.
type Row struct {
	Key   []byte // e.g. "sessions/s1"
	Value []byte // JSON for rows, usually empty for index keys
}

// Rows yields every row and index key of every view in key order, meta/
// excluded: the input of Hash. The iteration stops at the first error.
func (sn *Snapshot) Rows() iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		// A corruption Pebble raises while iterating is yielded as the
		// sequence's error; one raised by the loop's body goes on up.
		inYield := false
		defer func() {
			if inYield {
				return
			}
			if r := recover(); r != nil {
				yield(Row{}, fmt.Errorf("rows: %w", recovered(sn.s.dir, r)))
			}
		}()
		it, err := sn.snap.NewIter(nil)
		if err != nil {
			yield(Row{}, fmt.Errorf("rows: %w", err))
			return
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if bytes.HasPrefix(k, []byte(metaPrefix)) {
				continue
			}
			v, err := it.ValueAndErr()
			if err != nil {
				yield(Row{}, fmt.Errorf("rows at %q: %w", k, corruption(sn.s.dir, err)))
				return
			}
			inYield = true
			more := yield(Row{Key: bytes.Clone(k), Value: bytes.Clone(v)}, nil)
			inYield = false
			if !more {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(Row{}, fmt.Errorf("rows: %w", corruption(sn.s.dir, err)))
		}
	}
}

// Hash returns the hex SHA-256 over Rows: for each row, its key's length
// (8 bytes big-endian), the key, its value's length, the value. Equal
// hashes mean equal projections; the checkpoint is not part of the hash.
func (sn *Snapshot) Hash() (string, error) {
	h := sha256.New()
	var n [8]byte
	for row, err := range sn.Rows() {
		if err != nil {
			return "", fmt.Errorf("hash: %w", err)
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(row.Key)))
		h.Write(n[:])
		h.Write(row.Key)
		binary.BigEndian.PutUint64(n[:], uint64(len(row.Value)))
		h.Write(n[:])
		h.Write(row.Value)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Close releases the snapshot and the store's read lock.
func (sn *Snapshot) Close() error {
	if sn.snap == nil {
		return nil
	}
	err := sn.snap.Close()
	sn.snap = nil
	sn.s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("close snapshot: %w", err)
	}
	return nil
}

// getter is what dbGet reads from: a DB, a snapshot or a batch.
type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

// dbGet returns a copy of key's value in r, of the store in dir, and
// whether it exists.
func dbGet(dir string, r getter, key string) (_ []byte, _ bool, err error) {
	defer guard(dir, &err)
	v, closer, err := r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get %s: %w", key, err)
	}
	return cloneClose(v, closer), true, nil
}

// readCheckpoint returns the checkpoint stored in r, of the store in
// dir, 0 if none.
func readCheckpoint(dir string, r getter) (uint64, error) {
	v, ok, err := dbGet(dir, r, KeyCheckpoint)
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%s: %d bytes, want 8", KeyCheckpoint, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// isEmpty reports whether db holds no key at all.
func isEmpty(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, it.Close()
}

// prefixBounds returns iterator bounds covering exactly the keys with
// prefix p.
func prefixBounds(p string) *pebble.IterOptions {
	return &pebble.IterOptions{LowerBound: []byte(p), UpperBound: prefixEnd([]byte(p))}
}

// prefixEnd returns the least key greater than every key with prefix p,
// nil if there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// quietLogger discards Pebble's messages and panics on fatal ones, with
// a *fatalError (see guard).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	fe := &fatalError{msg: fmt.Sprintf("pebble: "+format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			fe.errs = append(fe.errs, err)
		}
	}
	panic(fe)
}

// fatalError is what Pebble reported through its logger's Fatalf, e.g.
// "pebble: MANIFEST flush failed: write /d/views/MANIFEST-000001: no
// space left on device", wrapping the errors among its arguments.
type fatalError struct {
	msg  string
	errs []error
}

func (e *fatalError) Error() string   { return e.msg }
func (e *fatalError) Unwrap() []error { return e.errs }

// exists reports whether name exists in fsys.
func exists(fsys vfs.FS, name string) (bool, error) {
	_, err := fsys.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// syncDir makes renames in dir durable.
func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return d.Close()
}
