package session

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestPerSource_LikeAMap sets and deletes values on PerSources taken at random
// from all those made so far, and checks each against a map kept by
// cloning, after every later change: same values, same JSON, and the
// JSON read back is equal.
func TestPerSource_LikeAMap(t *testing.T) {
	names := []string{"a.jsonl", "b.jsonl", "<x>&y.jsonl", "é.jsonl", "\u2028", "", "a", "z.jsonl"}
	rng := rand.New(rand.NewPCG(3, 5))
	ps := []PerSource[int]{{}}
	ms := []map[string]int{nil}
	for i := range 2000 {
		k := len(ps) - 1
		if rng.IntN(3) == 0 {
			k = rng.IntN(len(ps))
		}
		name := names[rng.IntN(len(names))]
		m := maps.Clone(ms[k])
		if m == nil {
			m = map[string]int{}
		}
		if rng.IntN(4) == 0 {
			ps = append(ps, ps[k].Delete(name))
			delete(m, name)
		} else {
			ps = append(ps, ps[k].Set(name, i))
			m[name] = i
		}
		ms = append(ms, m)
	}
	for k, p := range ps {
		m := ms[k]
		if p.Len() != len(m) || p.IsZero() != (len(m) == 0) || !maps.Equal(p.Map(), m) {
			t.Fatalf("PerSource %d: %v, want %v", k, p.Map(), m)
		}
		for _, n := range names {
			v, ok := p.Get(n)
			if w, wok := m[n]; v != w || ok != wok {
				t.Fatalf("PerSource %d: Get(%q) = %d, %v; want %d, %v", k, n, v, ok, w, wok)
			}
		}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(m); len(m) > 0 && string(got) != string(want) {
			t.Fatalf("PerSource %d: JSON %s, want %s", k, got, want)
		}
		var back PerSource[int]
		if err := json.Unmarshal(got, &back); err != nil || !back.Equal(p) {
			t.Fatalf("PerSource %d: read back %v, %v", k, back.Map(), err)
		}
	}
}

// members returns s's JSON and its members by name.
func members(t *testing.T, s State) ([]byte, map[string]json.RawMessage) {
	t.Helper()
	b, _ := json.Marshal(s)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return b, m
}

// TestState_PerSourceJSONAsBefore pins the JSON of a state's cursors to that
// of the map field they replaced, absent when empty.
func TestState_PerSourceJSONAsBefore(t *testing.T) {
	var s State
	b, m := members(t, s)
	if _, ok := m["cursors"]; ok {
		t.Errorf("empty cursors written: %s", b)
	}
	s.Cursors = s.Cursors.Set("b.jsonl", 2).Set("a<b>.jsonl", 10)
	b, m = members(t, s)
	if got, want := string(m["cursors"]), `{"a\u003cb\u003e.jsonl":10,"b.jsonl":2}`; got != want {
		t.Errorf("cursors %s, want %s", got, want)
	}
	if _, ok := m["fingerprints"]; ok {
		t.Errorf("empty fingerprints written: %s", b)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !back.Cursors.Equal(s.Cursors) {
		t.Errorf("read back %v, %v", back.Cursors.Map(), err)
	}
}

// BenchmarkPerSourceSet is a transcript line's cursor moved on a session fed
// by two files.
func BenchmarkPerSourceSet(b *testing.B) {
	p := PerSourceOf(map[string]int{"a.jsonl": 1, "b.jsonl": 1})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		p = p.Set("b.jsonl", i)
	}
}
