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
	var walk func(prefix string) (string, bool, bool)
	// walk reads one value; it returns a duplicate's path, whether one
	// was found, and whether the value was read whole.
	walk = func(prefix string) (string, bool, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false, false
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return "", false, true
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false, false
				}
				k, _ := kt.(string)
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				key := k
				if fold {
					key = strings.ToLower(k)
				}
				if seen[key] {
					return p, true, true
				}
				seen[key] = true
				if dup, found, ok := walk(p); found || !ok {
					return dup, found, ok
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if dup, found, ok := walk(prefix + "[" + strconv.Itoa(i) + "]"); found || !ok {
					return dup, found, ok
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return "", false, err == nil
	}
	path, found, _ = walk("")
	return path, found
}
