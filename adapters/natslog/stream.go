package natslog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// StreamName is the name of the one stream holding Logbook's log.
const StreamName = "LOGBOOK"

// StreamSubjects is the stream's only subject filter: events on
// lb.ev.<kind>.<id>, command output on lb.out.<command-id>.
const StreamSubjects = "lb.>"

// Defaults of Config.
const (
	DefaultReplicas   = 1
	DefaultDuplicates = 2 * time.Minute
	DefaultTimeout    = 5 * time.Second
)

// Config configures Open. The zero value is ready to use; EnsureDefaults
// fills it.
type Config struct {
	// Registry validates appended envelopes and decodes read ones; nil
	// means events.NewRegistry().
	Registry *events.Registry
	// Replicas of the stream when Open creates it: 1 (the default)
	// embedded, 3 on a cluster. An existing stream keeps its own.
	Replicas int
	// Duplicates is the stream's Nats-Msg-Id dedup window when Open
	// creates it; 0 means DefaultDuplicates (2 min). The server
	// recognises a re-sent committed batch within this window (after it,
	// Append still does when the batch's Expect is unchanged): keep it
	// above the longest retry horizon.
	Duplicates time.Duration
	// Timeout bounds each commit the committer sends, and each read
	// request whose ctx has no deadline; 0 means DefaultTimeout (5 s).
	Timeout time.Duration
	// MergeMin is the fewest concurrent one-event decisions that group
	// commit merges into one atomic batch; fewer go out as plain publishes
	// sent back to back. 0 means DefaultMergeMin. An atomic batch costs the
	// server a few fsyncs of its own, so it pays only once it replaces that
	// many per-message fsyncs; under FsyncInterval a plain publish costs
	// no fsync, so set MergeMin to MaxBatch+1 there (events.MaxBatch + 1).
	MergeMin int
	// Signer, when set, signs every appended message (see Signer); nil
	// appends unsigned messages. SetSigner replaces it after Open.
	Signer Signer
	// ConnRole is the role of the connection the Log is opened on, when
	// the caller knows it ("": unknown). On a reader's or a follower's
	// connection every append is refused before it is sent, with a
	// *RoleRefusedError, rather than left to the server's permissions
	// violation or taken for an unsigned append.
	ConnRole Role
	// Verifier, when set, judges every event read (Read, Follow, Load,
	// LoadAfter) against the log's key events: a quarantined one is not
	// yielded but kept for Quarantined. nil reads every event unjudged,
	// but for one that does not decode stored after a signing.began,
	// which it quarantines as a Verifier does (attestation.Undecodable).
	Verifier *attestation.Verifier
	// Room, when set, is asked before each commit is sent: nil when the
	// disk under the log's store has room for it, else why not (its free
	// space is under the reserve serve keeps, adapters/diskfull.Room).
	// The commit's decisions are then refused whole, each with
	// ErrAppendsHeld and that reason, and nothing is sent: a writer on the
	// store's host never starts a commit the disk could cut, however late
	// serve's look at the disk comes on a loaded machine. It must be safe
	// for concurrent use and quick (a statfs).
	Room func() error
	// OnQuarantine, if set, is called once for each distinct event a
	// read of this Log quarantines (Log.Quarantined), after it is
	// recorded, on the reading goroutine: it must return soon. serve
	// says at ERROR an event that follows a missing one (a damaged
	// block), which nothing else tells at the time.
	OnQuarantine func(Quarantined)
}

// DefaultMergeMin is Config.MergeMin's default, measured under fsync
// always on the 2-core machines Logbook is developed on.
const DefaultMergeMin = 16

// EnsureDefaults returns c with every zero field set to its default.
func (c Config) EnsureDefaults() Config {
	if c.Registry == nil {
		c.Registry = events.NewRegistry()
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.Duplicates == 0 {
		c.Duplicates = DefaultDuplicates
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MergeMin == 0 {
		c.MergeMin = DefaultMergeMin
	}
	return c
}

// Validate reports a negative Replicas, Duplicates or Timeout.
func (c Config) Validate() error {
	if c.Replicas < 0 {
		return fmt.Errorf("natslog: config: Replicas %d < 0", c.Replicas)
	}
	if c.Duplicates < 0 {
		return fmt.Errorf("natslog: config: Duplicates %s < 0", c.Duplicates)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("natslog: config: Timeout %s < 0", c.Timeout)
	}
	return nil
}

// StreamConfig returns the configuration Open creates the LOGBOOK stream
// with: file storage, append-only at the server (DenyDelete, DenyPurge,
// Discard new, no MaxAge, no rollup), atomic batches and direct gets
// allowed. Zero fields of c take their defaults.
func (c Config) StreamConfig() jetstream.StreamConfig {
	c = c.EnsureDefaults()
	return jetstream.StreamConfig{
		Name:               StreamName,
		Description:        "Logbook event log: append-only, one subject per aggregate",
		Subjects:           []string{StreamSubjects},
		Retention:          jetstream.LimitsPolicy,
		Storage:            jetstream.FileStorage,
		Replicas:           c.Replicas,
		Discard:            jetstream.DiscardNew,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxAge:             0,
		MaxMsgsPerSubject:  -1,
		MaxMsgSize:         -1,
		Duplicates:         c.Duplicates,
		DenyDelete:         true,
		DenyPurge:          true,
		AllowRollup:        false,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		PersistMode:        jetstream.DefaultPersistMode,
	}
}

// Mismatch is one stream setting that breaks the log's guarantees.
type Mismatch struct {
	Field string // JSON name of the setting, e.g. "deny_delete"
	Got   string // the stream's value
	Want  string // what the log needs
}

// StreamConfigError reports an existing LOGBOOK stream whose settings
// would let the server lose, delete or reorder events, or would break
// appends. Open refuses such a stream; an operator must fix or recreate
// it (DenyDelete and DenyPurge cannot be turned back on in place).
type StreamConfigError struct {
	Stream     string
	Mismatches []Mismatch // in a fixed order, never empty
}

// Error names every offending field, e.g. `natslog: stream LOGBOOK
// refused: deny_delete is false, want true`.
func (e *StreamConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "natslog: stream %s refused:", e.Stream)
	for i, m := range e.Mismatches {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s is %s, want %s", m.Field, m.Got, m.Want)
	}
	return b.String()
}

// checkStream returns a *StreamConfigError listing every setting of got
// that the log cannot live with, or nil.
func checkStream(got jetstream.StreamConfig) error {
	var ms []Mismatch
	add := func(field, g, w string) { ms = append(ms, Mismatch{Field: field, Got: g, Want: w}) }
	if !slices.Equal(got.Subjects, []string{StreamSubjects}) {
		add("subjects", fmt.Sprintf("%q", got.Subjects), fmt.Sprintf("[%q]", StreamSubjects))
	}
	if got.Storage != jetstream.FileStorage {
		add("storage", got.Storage.String(), jetstream.FileStorage.String())
	}
	if got.Retention != jetstream.LimitsPolicy {
		add("retention", got.Retention.String(), jetstream.LimitsPolicy.String())
	}
	if !got.DenyDelete {
		add("deny_delete", "false", "true")
	}
	if !got.DenyPurge {
		add("deny_purge", "false", "true")
	}
	if got.PersistMode != jetstream.DefaultPersistMode {
		add("persist_mode", got.PersistMode.String(), jetstream.DefaultPersistMode.String())
	}
	if got.Discard != jetstream.DiscardNew {
		add("discard", got.Discard.String(), jetstream.DiscardNew.String())
	}
	if got.MaxAge != 0 {
		add("max_age", got.MaxAge.String(), "0 (unlimited)")
	}
	if got.MaxMsgsPerSubject > 0 {
		add("max_msgs_per_subject", fmt.Sprint(got.MaxMsgsPerSubject), "-1 (unlimited)")
	}
	if got.AllowRollup {
		add("allow_rollup_hdrs", "true", "false")
	}
	if got.AllowMsgTTL {
		add("allow_msg_ttl", "true", "false")
	}
	if got.Sealed {
		add("sealed", "true", "false")
	}
	if !got.AllowAtomicPublish {
		add("allow_atomic", "false", "true")
	}
	if !got.AllowDirect {
		add("allow_direct", "false", "true")
	}
	if len(ms) == 0 {
		return nil
	}
	return &StreamConfigError{Stream: got.Name, Mismatches: ms}
}
