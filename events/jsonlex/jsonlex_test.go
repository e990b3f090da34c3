package jsonlex

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestString holds String and Unquote to encoding/json on strings at the
// edges: escapes of every kind, surrogate pairs, lone surrogates, control
// bytes, invalid UTF-8 and unclosed strings.
func TestString(t *testing.T) {
	for _, s := range []string{
		`""`, `"a"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u00E9"`, `"é€𝄞"`, `"\ud834\udd1e"`,
		`"\ud834"`, `"\udd1e\ud834"`, `"\ud834\u0041"`, `"\ud834x"`, "\"a\xffb\"", "\"\xed\xa0\x80\"",
		`"abcdefghijklmnopqrstuvwxyz\n0123456789"`, "\"a\x01\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"abc`, `"\`,
	} {
		check(t, []byte(s))
	}
}

// TestNumber holds Number and Integer to the grammar of RFC 8259.
func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in       string
		next     int
		ok       bool
		intNext  int
		intOK    bool
		validNum bool
	}{
		{"0", 1, true, 1, true, true},
		{"-0", 2, true, 2, true, true},
		{"12", 2, true, 2, true, true},
		{"01", 1, true, 2, false, false},
		{"-", 1, false, 1, false, false},
		{"1.5", 3, true, 1, false, true},
		{"1.", 2, false, 1, false, false},
		{"1e9", 3, true, 1, false, true},
		{"1E+9", 4, true, 1, false, true},
		{"1e", 2, false, 1, false, false},
		{"-12,", 3, true, 3, true, false},
	} {
		next, ok := Number([]byte(c.in), 0)
		if next != c.next || ok != c.ok {
			t.Errorf("Number(%q) = %d, %v; want %d, %v", c.in, next, ok, c.next, c.ok)
		}
		next, ok = Integer([]byte(c.in), 0)
		if ok != c.intOK || ok && next != c.intNext {
			t.Errorf("Integer(%q) = %d, %v; want %d, %v", c.in, next, ok, c.intNext, c.intOK)
		}
		if got := ok && next == len(c.in) || c.ok && c.next == len(c.in); got != c.validNum {
			t.Errorf("%q: whole number %v; json.Valid %v", c.in, got, json.Valid([]byte(c.in)))
		}
	}
}

// TestUnquoteMax checks that a limited Unquote stops past max bytes with
// a prefix of the whole text.
func TestUnquoteMax(t *testing.T) {
	inner := []byte(strings.Repeat(`ab\n€`, 100))
	all, _ := Unquote(nil, inner, -1)
	for _, max := range []int{0, 1, 5, 6, 7, 63, 64, len(all) - 1, len(all), len(all) + 10} {
		got, _ := Unquote(nil, inner, max)
		if !strings.HasPrefix(string(all), string(got)) || len(got) <= max && len(got) != len(all) {
			t.Errorf("Unquote(max %d) = %d bytes, not a prefix longer than max of the %d", max, len(got), len(all))
		}
	}
}

// FuzzString runs check on arbitrary text:
//
//	go test -run '^$' -fuzz FuzzString -fuzztime 1m ./events/jsonlex/
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud834\udd1e\n"`, `"\ud834"`, "\"\xff\"", `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, append([]byte{'"'}, b...))
	})
}

// check fails when String and encoding/json disagree on whether the
// string that opens b is well formed, or Unquote and encoding/json on its
// text, or Unquote's lossy on whether a U+FFFD stands for something else.
func check(t *testing.T, b []byte) {
	t.Helper()
	next, esc, high, ok := String(b, 0)
	if !ok {
		// encoding/json must refuse every prefix of b that ends in a
		// quote at or before the byte String stopped at.
		for i := 1; i <= next && i < len(b); i++ {
			if b[i] == '"' && json.Valid(b[:i+1]) {
				t.Fatalf("String(%q) refuses it at %d; encoding/json reads %q", b, next, b[:i+1])
			}
		}
		return
	}
	str := b[:next]
	var want string
	if err := json.Unmarshal(str, &want); err != nil {
		t.Fatalf("String(%q) reads %q; encoding/json: %v", b, str, err)
	}
	inner := str[1 : len(str)-1]
	if esc != strings.Contains(string(inner), `\`) || high != (strings.IndexFunc(string(inner), func(r rune) bool { return r >= utf8.RuneSelf }) >= 0) {
		t.Fatalf("String(%q): esc %v, high %v", str, esc, high)
	}
	got, lossy := Unquote(nil, inner, -1)
	if string(got) != want {
		t.Fatalf("Unquote(%q) = %q; encoding/json %q", inner, got, want)
	}
	if !lossy && strings.ContainsRune(want, utf8.RuneError) && !strings.Contains(string(inner), "\uFFFD") && !strings.Contains(strings.ToLower(string(inner)), `\ufffd`) {
		t.Fatalf("Unquote(%q) is not lossy, yet holds U+FFFD", inner)
	}
	if lossy && utf8.Valid(inner) && !strings.Contains(strings.ToLower(string(inner)), `\ud`) {
		t.Fatalf("Unquote(%q) is lossy without a surrogate or invalid byte", inner)
	}
}
