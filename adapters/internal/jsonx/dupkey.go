package jsonx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// DuplicateKey returns the path of the first object member in src, a
// valid JSON text, whose name an earlier member of the same object
// already has ("meta.model", "signals[2].kind"; a top-level member is its
// bare name), and whether there is one. encoding/json keeps the last of
// two such members, so a reader and a log that keeps the text could
// disagree on the value: callers refuse such a text. fold compares names
// case-insensitively (as encoding/json matches a struct's fields); without
// it names compare exactly, after decoding escapes. A text that is not
// valid JSON reports none.
func DuplicateKey(src []byte, fold bool) (path string, found bool) {
	if !Valid(src) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var walk func(at *step) (*step, bool)
	// walk reads the value at; it returns the step of a duplicate
	// member, if any (nil when none), and whether the value was read
	// whole. A path is spelled only for the duplicate found.
	walk = func(at *step) (*step, bool) {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil, true
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, false
				}
				k, _ := kt.(string)
				member := &step{up: at, name: k}
				key := k
				if fold {
					key = strings.ToLower(k)
				}
				if seen[key] {
					return member, true
				}
				seen[key] = true
				if dup, ok := walk(member); dup != nil || !ok {
					return dup, ok
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if dup, ok := walk(&step{up: at, index: i, elem: true}); dup != nil || !ok {
					return dup, ok
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return nil, err == nil
	}
	if dup, _ := walk(nil); dup != nil {
		return dup.path(), true
	}
	return "", false
}

// step is one step of a path into a JSON value: an object's member
// name, or an array's element index when elem; up is the step before
// it (nil for the top-level value's).
type step struct {
	up    *step
	name  string
	index int
	elem  bool
}

// path spells the steps up to s as DuplicateKey names them:
// "meta.model", "signals[2].kind", a top-level member's bare name.
func (s *step) path() string {
	if s == nil {
		return ""
	}
	p := s.up.path()
	if s.elem {
		return p + "[" + strconv.Itoa(s.index) + "]"
	}
	if p != "" {
		return p + "." + s.name
	}
	return s.name
}
