package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"
	"unsafe"
)

// Upcaster turns the data of one schema version into the next version's
// (v → v+1). It must be pure and deterministic.
type Upcaster func(data json.RawMessage) (json.RawMessage, error)

// typeInfo is what the registry knows of one event type.
type typeInfo struct {
	name      string           // wire name
	version   int              // current schema version
	typ       reflect.Type     // payload struct type
	needCause bool             // transitions, verdicts, abandonment marks
	upcasters map[int]Upcaster // from version → next
	codec     *codec           // how the scanner reads the payload; nil: encoding/json does
	tab       unsafe.Pointer   // typ's itab as a Payload, for box; nil: box copies
}

// Registry maps wire names to payload types, versions and upcasters. It is
// built once (NewRegistry) and then read-only: safe for concurrent use
// after construction, not during Register calls.
type Registry struct {
	types  map[string]*typeInfo
	slices int // slice codecs numbered so far (codec.numberSlices)
}

// NewRegistry returns a registry holding Logbook's whole catalogue.
func NewRegistry() *Registry {
	r := &Registry{types: make(map[string]*typeInfo)}
	// Session decisions.
	r.Register(SessionStarted{}, 1, true)
	r.Register(SessionTransitioned{}, 1, true)
	r.Register(SessionActivityChanged{}, 1, false)
	r.Register(SessionEntryOpened{}, 1, false)
	r.Register(SessionEntryClosed{}, 1, false)
	r.Register(SessionEntryAbandoned{}, 1, true)
	r.Register(SessionModeChanged{}, 1, false)
	r.Register(SessionDescribed{}, 1, false)
	r.Register(SessionTurnStarted{}, 1, false)
	r.Register(SessionTurnEnded{}, 1, false)
	r.Register(SessionEnded{}, 1, true)
	r.Register(ReviewRequested{}, 1, false)
	r.Register(ReviewDecided{}, 1, true)
	r.Register(ReviewBreakerTripped{}, 1, true)
	r.Register(ReviewBreakerReset{}, 1, true)
	r.Register(SessionEntryLateResult{}, 1, true)
	r.Register(SessionForked{}, 1, true)
	r.Register(SessionTranscriptDiverged{}, 1, true)
	// Observations.
	r.Register(ClaudeLineObserved{}, 1, false)
	r.Register(ClaudeHookObserved{}, 1, false)
	r.Register(TickObserved{}, 1, false)
	r.Register(CodexLineObserved{}, 1, false)
	r.Register(CodexNotifyObserved{}, 1, false)
	r.Register(AgentLineObserved{}, 1, false)
	r.Register(HarnessObserved{}, 1, false)
	r.Register(OTelObserved{}, 1, false)
	registerCommand(r)
	registerWorkspace(r)
	registerKey(r)
	registerNotification(r)
	registerCheck(r)
	return r
}

// Register adds payload type p at schema version v. needCause marks types
// that must carry a complete cause. It panics on a duplicate name or a
// version below 1: the catalogue is fixed at build time.
func (r *Registry) Register(p Payload, v int, needCause bool) {
	name := p.EventType()
	if _, dup := r.types[name]; dup || v < 1 {
		panic(fmt.Sprintf("events: register %q v%d: duplicate or bad version", name, v))
	}
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c, ok := compile(t, map[reflect.Type]*codec{})
	if !ok || c.kind != reflect.Struct {
		c = nil
	}
	c.numberSlices(&r.slices, map[*codec]bool{})
	r.types[name] = &typeInfo{name: name, version: v, typ: t, needCause: needCause, upcasters: map[int]Upcaster{}, codec: c, tab: payloadTab(t)}
}

// Upcast registers fn to turn version from of type name into from+1.
// It panics if name is unknown: the catalogue is fixed at build time.
func (r *Registry) Upcast(name string, from int, fn Upcaster) {
	ti, ok := r.types[name]
	if !ok {
		panic(fmt.Sprintf("events: upcaster for unknown type %q", name))
	}
	ti.upcasters[from] = fn
}

// Types returns every registered wire name, sorted.
func (r *Registry) Types() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Version returns the current schema version of type name, or 0 if the
// type is unknown.
func (r *Registry) Version(name string) int {
	if ti, ok := r.types[name]; ok {
		return ti.version
	}
	return 0
}

// New returns an envelope for p with Type and V filled from the registry.
// The caller sets ID, Agg, Ver, At and the rest. It panics if p's type is
// not registered: that is a programming error.
func (r *Registry) New(p Payload) Envelope {
	ti, ok := r.types[p.EventType()]
	if !ok {
		panic(fmt.Sprintf("events: new %q: type not registered", p.EventType()))
	}
	return Envelope{Type: p.EventType(), V: ti.version, Data: p}
}

// Decode parses one wire envelope strictly. It returns an error wrapping
// ErrMalformed for bad JSON, unknown fields or a broken invariant (zero id,
// ver 0, bad aggregate, bad time), ErrUnknownType for a type not in the
// registry, ErrUnknownVersion for a version with no upcaster path to the
// current one, and ErrMissingCause for a type that needs a complete cause
// and lacks one. Old versions are upcast before decoding, so the returned
// envelope always has the current V.
func (r *Registry) Decode(b []byte) (Envelope, error) {
	if e, ok, err := r.decodeScan(b, nil); ok {
		return e, err
	}
	return r.decodeSlow(b)
}

// decodeSlow decodes any envelope with encoding/json: the envelope first,
// then its data, upcast to the current version. It is the reference the
// scanner (decodeScan) agrees with, and the source of every decoding
// error.
func (r *Registry) decodeSlow(b []byte) (Envelope, error) {
	var w wire
	if err := decodeStrict(b, &w); err != nil {
		return Envelope{}, fmt.Errorf("%w: envelope: %v", ErrMalformed, err)
	}
	ti, ok := r.types[w.Type]
	if !ok {
		return Envelope{}, fmt.Errorf("%w: %q (event %s)", ErrUnknownType, w.Type, w.ID)
	}
	data := w.Data
	v := w.V
	for v < ti.version {
		up, ok := ti.upcasters[v]
		if !ok {
			break
		}
		var err error
		if data, err = up(data); err != nil {
			return Envelope{}, fmt.Errorf("upcast %s v%d (event %s): %w", w.Type, v, w.ID, err)
		}
		v++
	}
	if v != ti.version {
		return Envelope{}, fmt.Errorf("%w: %s v%d (event %s); this build reads v%d", ErrUnknownVersion, w.Type, w.V, w.ID, ti.version)
	}
	at, err := time.Parse(time.RFC3339Nano, w.At)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %s (event %s): at: %v", ErrMalformed, w.Type, w.ID, err)
	}
	pv := reflect.New(ti.typ)
	if len(data) == 0 || string(data) == "null" {
		return Envelope{}, fmt.Errorf("%w: %s (event %s): no data", ErrMalformed, w.Type, w.ID)
	}
	if err := decodeStrict(data, pv.Interface()); err != nil {
		return Envelope{}, fmt.Errorf("%w: %s (event %s): data: %v", ErrMalformed, w.Type, w.ID, err)
	}
	e := Envelope{
		ID: w.ID, Type: w.Type, V: v, Agg: w.Agg, Ver: w.Ver, At: at.UTC(),
		Cause: w.Cause, Corr: w.Corr, Host: w.Host, Actor: w.Actor,
		Data: pv.Elem().Interface().(Payload),
	}
	if err := r.Validate(e); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

// Validate checks the envelope invariants that Decode enforces, so an
// appender can refuse a bad event before it reaches the log: a registered
// type at its current version matching Data, a non-zero id, ver ≥ 1, a
// valid aggregate, a set time, and a complete cause where the type needs
// one. Errors wrap ErrMalformed, ErrUnknownType, ErrUnknownVersion or
// ErrMissingCause.
func (r *Registry) Validate(e Envelope) error {
	ti, ok := r.types[e.Type]
	if !ok {
		return fmt.Errorf("%w: %q (event %s)", ErrUnknownType, e.Type, e.ID)
	}
	return ti.validate(e)
}

// validate is Validate for an envelope of ti's type.
func (ti *typeInfo) validate(e Envelope) error {
	if e.V != ti.version {
		return fmt.Errorf("%w: %s v%d (event %s)", ErrUnknownVersion, e.Type, e.V, e.ID)
	}
	if e.Data == nil || e.Data.EventType() != e.Type {
		return fmt.Errorf("%w: %s (event %s): data of another type", ErrMalformed, e.Type, e.ID)
	}
	if e.ID.IsZero() {
		return fmt.Errorf("%w: %s: zero id", ErrMalformed, e.Type)
	}
	if e.Ver == 0 {
		return fmt.Errorf("%w: %s (event %s): ver 0", ErrMalformed, e.Type, e.ID)
	}
	if err := e.Agg.Validate(); err != nil {
		return fmt.Errorf("%s (event %s): %w", e.Type, e.ID, err)
	}
	if e.At.IsZero() {
		return fmt.Errorf("%w: %s (event %s): no time", ErrMalformed, e.Type, e.ID)
	}
	if (ti.needCause || movesPhase(e.Data)) && !e.Cause.complete() {
		return fmt.Errorf("%w: %s (event %s): cause %+v needs kind, event and ref", ErrMissingCause, e.Type, e.ID, e.Cause)
	}
	return nil
}

// movesPhase reports whether p is an entry event carrying a phase move
// (TransitionOf): such a move needs a complete cause as a
// session.transitioned does.
func movesPhase(p Payload) bool {
	switch d := p.(type) {
	case SessionEntryOpened:
		return d.Moves != nil
	case SessionEntryClosed:
		return d.Moves != nil
	}
	return false
}
