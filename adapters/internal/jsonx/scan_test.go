package jsonx

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// scanSeeds are texts at the edges of the grammar: numbers, escapes,
// surrogates, white space, nesting, duplicate and escaped keys, members
// of every type, and broken forms of each.
var scanSeeds = []string{
	`{}`, `[]`, ` {"a":1} `, "\t{\"a\" :\n[1 , 2]}\r\n", `{"a":1}x`, `{"a":1,}`, `[1,]`, `{,}`, `{"a"}`, `{"a":}`,
	`{"a":1 "b":2}`, `{1:2}`, `[`, `{`, `"`, `"abc`, `tru`, `true`, `false`, `null`, `nul`, `[true,false,null]`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e-07`, `+1`, `1x`, `123456789012345678901234567890`,
	`"\u0041\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\u12"`, `"\u12G4"`, `"\x"`,
	`"a\"b\\c\/d\be\ff\ng\rh\ti"`, "\"a\tb\"", "\"a\nb\"", "\"\x01\"", "\"\xff\"", "\"caf\xc3\xa9\"", "\"\xc3\"", `"\\"`, `"\"`,
	`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `{"a":2,"\u0061":1}`, `{"type":"x","TYPE":"y"}`,
	`{"s":"x","n":-1.5e3,"b":true,"f":false,"z":null,"o":{"k":[1,{"d":"e"}]},"a":[],"e":{}}`,
	`{"message":{"content":[{"type":"text","text":"hi"},null,"x",3,{"type":"tool_use","id":"t","input":{"command":"ls"}}]}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	"\xef\xbb\xbf{}", "", " ", "{}{}", "[1]]",
}

// mutate returns s with a few random bytes changed, inserted or removed,
// drawn from JSON's own punctuation, so most mutants are near misses.
func mutate(r *rand.Rand, s string) string {
	const alphabet = "{}[]\",:\\ u0123456789abcdefABCDEFtrunlse.-+eE\n\t\x00\x1f\xc3\xa9\xff"
	b := []byte(s)
	for range 1 + r.IntN(3) {
		c := alphabet[r.IntN(len(alphabet))]
		switch k := r.IntN(3); {
		case k == 0 && len(b) > 0:
			b[r.IntN(len(b))] = c
		case k == 1:
			i := r.IntN(len(b) + 1)
			b = slices.Insert(b, i, c)
		case len(b) > 0:
			i := r.IntN(len(b))
			b = slices.Delete(b, i, i+1)
		}
	}
	return string(b)
}

// reused is parsed into by every checkAgrees, over whatever it held.
var reused Doc

// checkAgrees fails t when Parse and encoding/json disagree on src: on
// whether it is valid, on each string's text, or on what an Object read
// from the document gives against one decoded into maps (every member,
// through every reader, and the problems named).
func checkAgrees(t *testing.T, src string) {
	t.Helper()
	d, ok := Parse([]byte(src))
	if reused.Parse([]byte(src)) != ok || ok && !slices.Equal(reused.nodes, d.nodes) {
		t.Fatalf("Doc.Parse(%q) after other texts differs from Parse", src)
	}
	if want := json.Valid([]byte(src)); ok != want || Valid([]byte(src)) != want || ValidString(src) != want {
		t.Fatalf("Parse(%q) ok = %v, Valid %v, ValidString %v, json.Valid = %v", src, ok, Valid([]byte(src)), ValidString(src), want)
	}
	if !ok {
		return
	}
	for i, n := range d.nodes {
		if n.kind != '"' {
			continue
		}
		var want string
		if err := json.Unmarshal(d.raw(int32(i)), &want); err != nil {
			t.Fatalf("%q: string %q: %v", src, d.raw(int32(i)), err)
		}
		if got := d.text(int32(i)); got != want {
			t.Fatalf("%q: string %q decodes to %q, encoding/json %q", src, d.raw(int32(i)), got, want)
		}
		if got := Unquote(d.raw(int32(i))); got != want {
			t.Fatalf("%q: Unquote(%q) = %q, encoding/json %q", src, d.raw(int32(i)), got, want)
		}
	}
	var gotProbs, wantProbs []string
	got, gok := Scanned([]byte(src), "", &gotProbs)
	want, wok := New([]byte(src), "", &wantProbs)
	if gok != wok {
		t.Fatalf("%q: Scanned ok %v, New ok %v", src, gok, wok)
	}
	if gok {
		compare(t, src, got, want, 0)
	}
	if !slices.Equal(gotProbs, wantProbs) {
		t.Fatalf("%q: problems\n%q\nwant\n%q", src, gotProbs, wantProbs)
	}
}

// compare reads every member name of want (and a few absent ones)
// through every reader of got and want, recursing into objects and the
// objects of arrays.
func compare(t *testing.T, src string, got, want Object, depth int) {
	t.Helper()
	if depth > 8 {
		return
	}
	keys := []string{"absent", "", "a", "type", "TYPE"}
	for k := range want.M {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if g, w := string(got.Raw(k)), string(want.Raw(k)); g != w {
			t.Fatalf("%q: Raw(%q) = %q, want %q", src, k, g, w)
		}
		if g, w := got.Str(k), want.Str(k); g != w {
			t.Fatalf("%q: Str(%q) = %q, want %q", src, k, g, w)
		}
		if g, w := got.Boolean(k), want.Boolean(k); g != w {
			t.Fatalf("%q: Boolean(%q) = %v, want %v", src, k, g, w)
		}
		if g, w := got.Number(k), want.Number(k); g != w {
			t.Fatalf("%q: Number(%q) = %q, want %q", src, k, g, w)
		}
		ga, wa := got.Arr(k), want.Arr(k)
		if len(ga) != len(wa) {
			t.Fatalf("%q: Arr(%q) has %d elements, want %d", src, k, len(ga), len(wa))
		}
		for i := range ga {
			if string(ga[i]) != string(wa[i]) {
				t.Fatalf("%q: Arr(%q)[%d] = %q, want %q", src, k, i, ga[i], wa[i])
			}
		}
		var gos, wos []Object
		for o := range got.Objects(k) {
			gos = append(gos, o)
		}
		for o := range want.Objects(k) {
			wos = append(wos, o)
		}
		if len(gos) != len(wos) {
			t.Fatalf("%q: Objects(%q) yields %d, want %d", src, k, len(gos), len(wos))
		}
		for i := range gos {
			if gos[i].Path != wos[i].Path {
				t.Fatalf("%q: Objects(%q)[%d] at %q, want %q", src, k, i, gos[i].Path, wos[i].Path)
			}
			compare(t, src, gos[i], wos[i], depth+1)
		}
		go_, gok := got.Obj(k)
		wo, wok := want.Obj(k)
		if gok != wok || go_.Path != wo.Path {
			t.Fatalf("%q: Obj(%q) = %v at %q, want %v at %q", src, k, gok, go_.Path, wok, wo.Path)
		}
		if gok {
			compare(t, src, go_, wo, depth+1)
		}
	}
}

// TestParse_AgreesWithEncodingJSON checks Parse, Unquote and the readers
// of a parsed Object against encoding/json over the seeds and 20,000
// mutants of them.
func TestParse_AgreesWithEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		checkAgrees(t, s)
	}
	r := rand.New(rand.NewPCG(9, 1))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := range n {
		s := scanSeeds[i%len(scanSeeds)]
		if len(s) > 512 {
			continue
		}
		checkAgrees(t, mutate(r, s))
	}
}

// TestParse_Depth: nesting up to MaxDepth parses, one more is refused,
// as encoding/json does.
func TestParse_Depth(t *testing.T) {
	for _, depth := range []int{MaxDepth, MaxDepth + 1} {
		src := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		_, ok := Parse([]byte(src))
		if want := depth <= MaxDepth; ok != want {
			t.Errorf("depth %d: ok %v, want %v", depth, ok, want)
		}
	}
}

// TestParse_MaxValues: a text of more than MaxValues values is not
// indexed; Scanned reads it as New does, whole.
func TestParse_MaxValues(t *testing.T) {
	src := []byte("{\"a\":[" + strings.Repeat("0,", MaxValues) + "0],\"s\":\"x\"}")
	if _, ok := Parse(src); ok {
		t.Error("a text of more than MaxValues values parsed")
	}
	if !Valid(src) {
		t.Error("Valid refuses it")
	}
	o, ok := Scanned(src, "", nil)
	if !ok || o.M == nil || o.Str("s") != "x" || len(o.Arr("a")) != MaxValues+1 {
		t.Errorf("Scanned: ok %v, s %q", ok, o.Str("s"))
	}
	if _, ok := Parse(src[:len(src)/2]); ok {
		t.Error("half a text parsed")
	}
}

// TestObjects_Problems: the elements of another type than object are
// named by their index, nulls are passed over.
func TestObjects_Problems(t *testing.T) {
	var probs []string
	o, _ := Scanned([]byte(`{"c":[{"k":1},null,"x",[2],{"k":2}],"s":"y"}`), "m", &probs)
	var ks []string
	for e := range o.Objects("c") {
		ks = append(ks, e.Number("k")+"@"+e.Path)
	}
	for range o.Objects("s") {
		t.Error(`"s" yielded an object`)
	}
	if want := []string{"1@m.c[0]", "2@m.c[4]"}; !slices.Equal(ks, want) {
		t.Errorf("objects %q, want %q", ks, want)
	}
	want := []string{`field "m.c[2]": want object, got string`, `field "m.c[3]": want object, got array`, `field "m.s": want array, got string`}
	if !slices.Equal(probs, want) {
		t.Errorf("problems %q, want %q", probs, want)
	}
}

// FuzzParse: Parse agrees with encoding/json on every input (see
// checkAgrees).
func FuzzParse(f *testing.F) {
	for _, s := range scanSeeds {
		if len(s) < 1024 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgrees(t, s)
	})
}

func ExampleScanned() {
	var probs []string
	o, _ := Scanned([]byte(`{"message":{"model":"m","usage":"none"}}`), "", &probs)
	m, _ := o.Obj("message")
	_, ok := m.Obj("usage")
	fmt.Println(m.Str("model"), ok, probs)
	// Output: m false [field "message.usage": want object, got string]
}
