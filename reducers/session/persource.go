package session

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// PerSource maps the sources of transcript lines, their file names, to
// values (import cursors, fingerprints). Its zero value is empty.
//
// A PerSource is a value: Set and Delete return a new one and never write
// memory the receiver can reach, so states derived from one state stay
// independent. A session is fed by a few files, so the names are kept in
// a sorted slice, which a change copies whole: one allocation of a few
// entries, where a map would be cloned. Its JSON form is a map's: an
// object of the names, sorted, exactly as encoding/json writes a
// map[string]V (absent with omitzero when empty).
type PerSource[V comparable] struct {
	files []fileValue[V] // sorted by name, names distinct
}

type fileValue[V comparable] struct {
	name string
	v    V
}

// Len returns how many files have a value.
func (p PerSource[V]) Len() int { return len(p.files) }

// IsZero reports whether no file has a value, for omitzero.
func (p PerSource[V]) IsZero() bool { return len(p.files) == 0 }

func (p PerSource[V]) find(name string) (int, bool) {
	return slices.BinarySearchFunc(p.files, name, func(f fileValue[V], n string) int { return cmp.Compare(f.name, n) })
}

// Get returns the value of file name, and false (with V's zero value)
// when it has none.
func (p PerSource[V]) Get(name string) (V, bool) {
	if i, ok := p.find(name); ok {
		return p.files[i].v, true
	}
	var zero V
	return zero, false
}

// Set returns p with file name's value v; p is unchanged.
func (p PerSource[V]) Set(name string, v V) PerSource[V] {
	i, ok := p.find(name)
	if ok {
		files := slices.Clone(p.files)
		files[i].v = v
		return PerSource[V]{files: files}
	}
	files := make([]fileValue[V], 0, len(p.files)+1)
	files = append(files, p.files[:i]...)
	files = append(files, fileValue[V]{name: name, v: v})
	return PerSource[V]{files: append(files, p.files[i:]...)}
}

// Delete returns p without a value for file name; p is unchanged.
func (p PerSource[V]) Delete(name string) PerSource[V] {
	i, ok := p.find(name)
	if !ok {
		return p
	}
	files := make([]fileValue[V], 0, len(p.files)-1)
	files = append(files, p.files[:i]...)
	files = append(files, p.files[i+1:]...)
	if len(files) == 0 {
		return PerSource[V]{}
	}
	return PerSource[V]{files: files}
}

// Map returns the values in a new map.
func (p PerSource[V]) Map() map[string]V {
	m := make(map[string]V, len(p.files))
	for _, f := range p.files {
		m[f.name] = f.v
	}
	return m
}

// PerSourceOf returns a PerSource of m's names and values (m is not kept).
func PerSourceOf[V comparable](m map[string]V) PerSource[V] {
	if len(m) == 0 {
		return PerSource[V]{}
	}
	files := make([]fileValue[V], 0, len(m))
	for n, v := range m {
		files = append(files, fileValue[V]{name: n, v: v})
	}
	slices.SortFunc(files, func(a, b fileValue[V]) int { return cmp.Compare(a.name, b.name) })
	return PerSource[V]{files: files}
}

// Equal reports whether p and o hold the same names and values (go-cmp
// uses it to compare states).
func (p PerSource[V]) Equal(o PerSource[V]) bool { return slices.Equal(p.files, o.files) }

// MarshalJSON implements json.Marshaler: byte for byte what
// encoding/json writes for the same map[string]V.
func (p PerSource[V]) MarshalJSON() ([]byte, error) { return json.Marshal(p.Map()) }

// UnmarshalJSON implements json.Unmarshaler: an object, as a
// map[string]V reads it, or null for no values.
func (p *PerSource[V]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*p = PerSource[V]{}
		return nil
	}
	var m map[string]V
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("values per transcript file: %w", err)
	}
	*p = PerSourceOf(m)
	return nil
}
