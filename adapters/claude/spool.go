package claude

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/events"
)

// What a hook process needs lives in package hookspool, which links no
// redaction rules; these are its names under this package, for the
// callers that parse and ingest as well.

// Spool is hookspool's Spool: a durable local queue of hook payloads.
type Spool = hookspool.Spool

// Entry is hookspool's Entry: one spooled payload.
type Entry = hookspool.Entry

// Lock is hookspool's Lock: the spool's delivery lock.
type Lock = hookspool.Lock

// LocalVerdict is hookspool's LocalVerdict: a gate verdict a hook gave
// by itself, without a server.
type LocalVerdict = hookspool.LocalVerdict

// HookError is hookspool's HookError: a hook payload that could not be
// used. The parser's refusals (Parser.Hook) are HookErrors too.
type HookError = hookspool.HookError

// Open is hookspool.Open: the spool in dir, creating dir (mode 0700).
func Open(dir string) (*Spool, error) { return hookspool.Open(dir) }

// FailClosedVerdict is hookspool.FailClosedVerdict: the LocalVerdict of a
// hook that failed closed, at at, with a budget of budget (0: none).
func FailClosedVerdict(why string, at time.Time, budget time.Duration) LocalVerdict {
	return hookspool.FailClosedVerdict(why, at, budget)
}

// Spool names and limits: hookspool's.
const (
	// LocalRule is hookspool.LocalRule, the DecidedBy name of a
	// LocalVerdict.
	LocalRule = hookspool.LocalRule
	// RejectedDir is hookspool.RejectedDir, the spool's subdirectory for
	// entries kept aside.
	RejectedDir = hookspool.RejectedDir
	// DefaultRejectedRetention is hookspool.DefaultRejectedRetention: 7
	// days.
	DefaultRejectedRetention = hookspool.DefaultRejectedRetention
	// MaxRulesFile is hookspool.MaxRulesFile, the most bytes a data dir's
	// redact.txt may hold: 1 MiB.
	MaxRulesFile = hookspool.MaxRulesFile
)

// Hook payload limits and caps: hookspool's (see there).
const (
	MaxHookDepth  = hookspool.MaxHookDepth  // deepest nesting: 512 levels
	MaxHookKeys   = hookspool.MaxHookKeys   // most object members: 65,536
	MaxHookID     = hookspool.MaxHookID     // cap on ids, names and modes, bytes
	MaxHookPath   = hookspool.MaxHookPath   // cap on paths, bytes
	MaxHookSend   = hookspool.MaxHookSend   // most a hook sends of one payload: 256 KiB
	MaxHookString = hookspool.MaxHookString // what each string of an over-cap payload is cut to
	CutMember     = hookspool.CutMember     // the member PrepareHook adds to a payload it cut
	MaxHookRead   = hookspool.MaxHookRead   // most a hook reads of a payload: 32 MiB
)

// Errors of a hook payload's check and of the spool and file reads:
// hookspool's own values, so errors.Is matches either name.
var (
	// ErrSyntax is hookspool.ErrSyntax: input that is not well-formed JSON.
	ErrSyntax = hookspool.ErrSyntax
	// ErrInvalidUTF8 is hookspool.ErrInvalidUTF8: input that is not
	// valid UTF-8.
	ErrInvalidUTF8 = hookspool.ErrInvalidUTF8
	// ErrNotObject is hookspool.ErrNotObject: well-formed JSON that is
	// not an object.
	ErrNotObject = hookspool.ErrNotObject
	// ErrDuplicateKey is hookspool.ErrDuplicateKey: a member named twice
	// in one object, at any depth.
	ErrDuplicateKey = hookspool.ErrDuplicateKey
	// ErrMissingField is hookspool.ErrMissingField: a hook payload
	// without a required field.
	ErrMissingField = hookspool.ErrMissingField
	// ErrFieldType is hookspool.ErrFieldType: a hook payload field of the
	// wrong JSON type.
	ErrFieldType = hookspool.ErrFieldType
	// ErrTooLarge is hookspool.ErrTooLarge: a hook payload over
	// MaxHookSend even after cutting its strings.
	ErrTooLarge = hookspool.ErrTooLarge
	// ErrFieldTooLong is hookspool.ErrFieldTooLong: a hook payload field
	// over its cap.
	ErrFieldTooLong = hookspool.ErrFieldTooLong
	// ErrTooDeep is hookspool.ErrTooDeep: nested deeper than
	// MaxHookDepth.
	ErrTooDeep = hookspool.ErrTooDeep
	// ErrTooManyKeys is hookspool.ErrTooManyKeys: more than MaxHookKeys
	// object members.
	ErrTooManyKeys = hookspool.ErrTooManyKeys
	// ErrLocked is hookspool.ErrLocked: another holder has the spool's
	// delivery lock.
	ErrLocked = hookspool.ErrLocked
	// ErrNotRegular is hookspool.ErrNotRegular: a path that names no
	// regular file.
	ErrNotRegular = hookspool.ErrNotRegular
	// ErrFileTooLarge is hookspool.ErrFileTooLarge: a file ReadRegular
	// refused for holding more than its limit.
	ErrFileTooLarge = hookspool.ErrFileTooLarge
)

// PrepareHook is hookspool.PrepareHook: what a hook process spools for
// payload b, cut when over MaxHookSend. Errors: CheckHook's, ErrTooLarge.
func PrepareHook(b []byte) ([]byte, error) { return hookspool.PrepareHook(b, sha256.Sum256) }

// CheckHook is hookspool.CheckHook: whether b is a hook payload
// Parser.Hook accepts, with the same errors, without parsing it.
func CheckHook(b []byte) error { return hookspool.CheckHook(b) }

// ToolInput returns the tool_input member of hook payload b exactly as
// written (nil when b has none), and whether PrepareHook's result for b
// holds a CutMember: b is over MaxHookSend bytes (or names a CutMember
// itself), so the tool_input of what is recorded may be a cut copy and
// only b's is whole. b is read and checked as CheckHook reads it
// (trailing whitespace removed); the result shares b's memory. Errors:
// CheckHook's.
func ToolInput(b []byte) (input json.RawMessage, cut bool, err error) {
	b = bytes.TrimRight(b, " \t\r\n")
	top, _, err := hookspool.ReadHook(b)
	if err != nil {
		return nil, false, err
	}
	_, named := top[CutMember]
	return top["tool_input"], named || len(b) > MaxHookSend, nil
}

// SessionAggregate is hookspool.SessionAggregate: the session aggregate
// of a Claude Code session id, or of a subagent ("agent-<agentID>") when
// agentID is set; an error when the id is not valid.
func SessionAggregate(sessionID, agentID string) (events.Aggregate, error) {
	return hookspool.SessionAggregate(sessionID, agentID)
}

// AgentProcess is hookspool.AgentProcess: the agent process that process
// pid runs under, host and boot stamped on it; nil when none is found.
func AgentProcess(pid int, host, boot string) (*events.Process, error) {
	return hookspool.AgentProcess(pid, host, boot)
}

// BootID is hookspool.BootID: the host's boot id, "" when unknown.
func BootID() string { return hookspool.BootID() }

// PidNS is hookspool.PidNS: the PID namespace whose pids this process's
// /proc shows, e.g. "pid:[4026531836]"; "" when it cannot say.
func PidNS() string { return hookspool.PidNS() }

// CheckProcess is hookspool.CheckProcess: whether process p still runs,
// checked on this host (name host, boot id boot).
func CheckProcess(p events.Process, host, boot string) events.ProcessCheck {
	return hookspool.CheckProcess(p, host, boot)
}

// OpenRegular is hookspool.OpenRegular: the file at path opened for
// reading only if it is a regular file, with its size in bytes; the
// caller closes it. Errors name path; ErrNotRegular for another kind.
func OpenRegular(path string) (*os.File, int64, error) { return hookspool.OpenRegular(path) }

// ReadRegular is hookspool.ReadRegular: the contents of the small regular
// file at path, at most limit bytes (ErrFileTooLarge past it,
// ErrNotRegular for a FIFO, device, socket or directory).
func ReadRegular(path string, limit int64) ([]byte, error) {
	return hookspool.ReadRegular(path, limit)
}

// notRegular returns the error for path, found to have mode m
// (hookspool.NotRegular).
func notRegular(path string, m fs.FileMode) error { return hookspool.NotRegular(path, m) }

// readHook reads and checks a hook payload (hookspool.ReadHook).
func readHook(b []byte) (map[string]json.RawMessage, string, error) { return hookspool.ReadHook(b) }

// NewSpoolID returns a fresh id for a hook payload or spool entry,
// after every one made before it on this host (hookspool.NewID).
func NewSpoolID() string { return hookspool.NewID() }
