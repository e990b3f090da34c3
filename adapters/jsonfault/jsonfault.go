// Package jsonfault says where in a JSON text an encoding/json error
// lies, so that a file a person wrote (credentials, a price table) is
// refused naming the line and column to fix, in the same words wherever
// it is read.
package jsonfault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
)

// unknownField begins encoding/json's message for a member a Decoder
// with DisallowUnknownFields does not know.
const unknownField = "json: unknown field "

// Fault returns encoding/json's err on text b (from json.Unmarshal(b, …)
// or a json.Decoder reading b) as an error that says where and what.
// Lines and columns count from 1, columns in bytes:
//
//   - a syntax error: `not valid JSON at line L, column C: invalid
//     character …` (C is the offending byte); a text that starts with a
//     UTF-8 byte order mark is told so;
//   - a text that ends early (io.EOF or io.ErrUnexpectedEOF, from a
//     Decoder): `not valid JSON at line L, column C: the text ends before
//     VALUE does` (C just past the last byte that is not white space;
//     value "" means "the value");
//   - a member of the wrong type: `line L, column C: "field" is a JSON
//     number, want string` (C is the value's last byte);
//   - a member a Decoder with DisallowUnknownFields does not know: `line
//     L, column C: unknown member "name"` (where its key first appears in
//     b; without the place when it does not);
//   - anything else: err's message without its "json: ".
//
// The error does not wrap err.
func Fault(b []byte, err error, value string) error {
	if value == "" {
		value = "the value"
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		if se.Offset <= 3 && bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
			return errors.New("not valid JSON at line 1, column 1: the text starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: save it as UTF-8 without one")
		}
		return fmt.Errorf("not valid JSON at %s: %s", at(b, se.Offset-1), strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("not valid JSON at %s: the text ends before %s does", at(b, int64(len(bytes.TrimRight(b, " \t\r\n")))), value)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Errorf("%s: %q is a JSON %s, want %s", at(b, te.Offset-1), te.Field, te.Value, te.Type)
	}
	if name, ok := strings.CutPrefix(err.Error(), unknownField); ok {
		where := ""
		if key, uerr := strconv.Unquote(name); uerr == nil {
			if i := bytes.Index(b, []byte(strconv.Quote(key))); i >= 0 {
				where = at(b, int64(i)) + ": "
			}
		}
		return fmt.Errorf("%sunknown member %s", where, name)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// UnknownMember reports whether err is encoding/json's refusal of a
// member a Decoder with DisallowUnknownFields does not know: a caller
// adds the members it wants to Fault's message.
func UnknownMember(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), unknownField)
}

// at returns "line L, column C" for byte offset off of b (clamped to b).
func at(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// DuplicateKey returns the path of the first object member of src, a
// valid JSON text, whose name an earlier member of the same object has
// ("hooks.Stop"; a top-level member is its bare name), and whether there
// is one: encoding/json keeps the last of two such members, so a file
// read and written back would silently lose the first. fold compares
// names case-insensitively, as encoding/json matches a struct's fields.
// A text that is not valid JSON reports none.
func DuplicateKey(src []byte, fold bool) (path string, found bool) {
	return jsonx.DuplicateKey(src, fold)
}
