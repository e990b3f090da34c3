// Package project decides and folds one project aggregate
// (lb.ev.project.<id>, kind events.KindProject): a folder at the top
// level of a git repository that workspaces are made from, and the
// storage keys of its workspaces.
//
// A workspace's storage key is unique within its project. The project
// aggregate is the consistency boundary for that: ReserveKey picks the
// key from the workspace's name (Slug, then "-2", "-3", … on a
// collision) and its event is appended with optimistic concurrency on
// the project's subject, so two reservations decided at once cannot both
// take one key. A second ReserveKey for a workspace that has a key
// decides nothing: the key stays the first one, which makes a retried
// create (same workspace id) reuse its key.
//
// Decide and Evolve are pure: time arrives inside commands, nothing reads
// a clock, draws randomness or does I/O.
package project

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/logbook-dev/logbook/events"
)

// MaxKey is the longest storage key, in bytes.
const MaxKey = 48

// State is what the reducer knows of one project. Its JSON form is the
// project's projection row: field names are a stored format.
type State struct {
	ID      string    `json:"id"`
	Ver     uint64    `json:"ver"` // 0: never added
	Name    string    `json:"name"`
	Key     string    `json:"key"`
	Path    string    `json:"path"`
	Trunk   string    `json:"trunk"`
	AddedAt time.Time `json:"added_at"`
	// Keys maps each reserved storage key to its workspace id.
	Keys map[string]string `json:"keys,omitempty"`
	// Workspaces maps each workspace id to its storage key.
	Workspaces map[string]string `json:"workspaces,omitempty"`
}

// Init returns the state of a project before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// Exists reports whether the project was added.
func (s State) Exists() bool { return s.Ver > 0 && s.Path != "" }

// Command is an input to Decide.
type Command interface{ command() }

// Add adds the project. Adding it again with the same path decides
// nothing; with another path it is refused.
type Add struct {
	Name, Key, Path, Trunk string
	At                     time.Time
	Cause                  events.Cause
}

// ReserveKey reserves a storage key for workspace Workspace from Name
// (see the package documentation).
type ReserveKey struct {
	Workspace string
	Name      string
	At        time.Time
	Cause     events.Cause
}

func (Add) command()        {}
func (ReserveKey) command() {}

// Decide returns the events cmd causes in s, or an error wrapping
// events.ErrRejected that says why cmd is refused. s is not modified.
func Decide(s State, cmd Command) (events.Decision, error) {
	switch c := cmd.(type) {
	case Add:
		if s.Exists() {
			if s.Path == c.Path {
				return nil, nil
			}
			return nil, fmt.Errorf("add project %s: %w: it is %s already", s.ID, events.ErrRejected, s.Path)
		}
		if c.Path == "" || !strings.HasPrefix(c.Path, "/") {
			return nil, fmt.Errorf("add project %s: %w: path %q is not absolute", s.ID, events.ErrRejected, c.Path)
		}
		if err := ValidKey(c.Key); err != nil {
			return nil, fmt.Errorf("add project %s: %w", s.ID, err)
		}
		return events.One(events.ProjectAdded{Name: c.Name, Key: c.Key, Path: c.Path, Trunk: c.Trunk}, c.At, c.Cause), nil
	case ReserveKey:
		if !s.Exists() {
			return nil, fmt.Errorf("reserve key in project %s: %w: no such project", s.ID, events.ErrNotFound)
		}
		if _, ok := s.Workspaces[c.Workspace]; ok {
			return nil, nil
		}
		key, err := FreeKey(s.Keys, c.Name)
		if err != nil {
			return nil, fmt.Errorf("reserve key in project %s: %w", s.ID, err)
		}
		return events.One(events.ProjectKeyReserved{Workspace: c.Workspace, Key: key}, c.At, c.Cause), nil
	default:
		return nil, fmt.Errorf("%w: unknown project command %T", events.ErrRejected, cmd)
	}
}

// Evolve returns s after e. Events of other aggregates leave s unchanged;
// maps in the result are fresh.
func Evolve(s State, e events.Envelope) State {
	if e.Agg.Kind != events.KindProject {
		return s
	}
	s.ID, s.Ver = e.Agg.ID, e.Ver
	switch d := e.Data.(type) {
	case events.ProjectAdded:
		s.Name, s.Key, s.Path, s.Trunk, s.AddedAt = d.Name, d.Key, d.Path, d.Trunk, e.At
	case events.ProjectKeyReserved:
		s.Keys = maps.Clone(s.Keys)
		s.Workspaces = maps.Clone(s.Workspaces)
		if s.Keys == nil {
			s.Keys = map[string]string{}
			s.Workspaces = map[string]string{}
		}
		s.Keys[d.Key] = d.Workspace
		s.Workspaces[d.Workspace] = d.Key
	}
	return s
}

// Slug returns name as a storage key: lowercase ASCII letters and digits,
// every other run of characters one dash, no dash at either end, at most
// MaxKey bytes (cut at a dash when one is near the end). A name with
// letters or digits but none of them ASCII ("修复登录") slugs to "u" and
// the first 10 hex digits of its SHA-256, the same name always to the
// same key. It returns "" when name has no letter or digit at all.
func Slug(name string) string {
	var b strings.Builder
	dash, other := false, false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		other = other || unicode.IsLetter(r) || unicode.IsDigit(r)
		dash = true
	}
	if b.Len() == 0 && other {
		sum := sha256.Sum256([]byte(name))
		return "u" + hex.EncodeToString(sum[:])[:10]
	}
	return cut(b.String(), MaxKey)
}

// cut shortens slug s to at most n bytes without a trailing dash.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if s[n] == '-' {
		return s[:n] // cut at a word's end
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '-'); i >= n-12 && i > 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "-")
}

// FreeKey returns the slug of name that is not a key of taken: the slug
// itself, else the slug cut to fit and "-2", "-3", … . The error wraps
// events.ErrRejected when name slugs to nothing.
func FreeKey(taken map[string]string, name string) (string, error) {
	base := Slug(name)
	if base == "" {
		return "", fmt.Errorf("%w: name %q has no letter or digit to make a storage key of", events.ErrRejected, name)
	}
	if _, ok := taken[base]; !ok {
		return base, nil
	}
	for i := 2; ; i++ {
		suffix := "-" + strconv.Itoa(i)
		k := cut(base, MaxKey-len(suffix)) + suffix
		if _, ok := taken[k]; !ok {
			return k, nil
		}
	}
}

// ValidKey reports, wrapping events.ErrRejected, a key that is not a
// slug: empty, longer than MaxKey, or not Slug of itself.
func ValidKey(k string) error {
	if k == "" || len(k) > MaxKey || Slug(k) != k {
		return fmt.Errorf("%w: storage key %q: want 1..%d bytes of a-z, 0-9 and inner dashes", events.ErrRejected, k, MaxKey)
	}
	return nil
}

// Agg returns the project's aggregate.
func (s State) Agg() events.Aggregate { return events.Aggregate{Kind: events.KindProject, ID: s.ID} }
