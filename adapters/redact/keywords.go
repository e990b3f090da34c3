package redact

import "strings"

// keywordIndex finds which of many lower-case keywords occur in a text in
// one pass: a table of the keywords' first two bytes picks the positions
// worth a closer look. It is immutable once built.
type keywordIndex struct {
	words []string
	pair  []uint16 // 1<<16 entries, by first two bytes: 1 + index into lists, or 0
	lists [][]int  // indexes into words
	short []int    // one-byte keywords, looked up with strings.Contains
	// newline is set when a keyword holds a newline: texts joined by
	// newlines must then be searched joined (see matchEach).
	newline bool
	rules   [][]int // for each word, the rules (indexes) it hints
	always  []int   // rules without hints
}

func newKeywordIndex(rules []*rule) *keywordIndex {
	ix := &keywordIndex{pair: make([]uint16, 1<<16)}
	seen := map[string]int{}
	for ri, ru := range rules {
		if len(ru.hints) == 0 {
			ix.always = append(ix.always, ri)
			continue
		}
		for _, h := range ru.hints {
			if !ru.fold {
				h = asciiLower(h)
			}
			wi, ok := seen[h]
			if !ok {
				ix.newline = ix.newline || strings.Contains(h, "\n")
				wi = len(ix.words)
				seen[h] = wi
				ix.words = append(ix.words, h)
				ix.rules = append(ix.rules, nil)
				if len(h) < 2 {
					ix.short = append(ix.short, wi)
				} else {
					p := uint16(h[0])<<8 | uint16(h[1])
					if ix.pair[p] == 0 {
						ix.lists = append(ix.lists, nil)
						ix.pair[p] = uint16(len(ix.lists))
					}
					ix.lists[ix.pair[p]-1] = append(ix.lists[ix.pair[p]-1], wi)
				}
			}
			ix.rules[wi] = append(ix.rules[wi], ri)
		}
	}
	return ix
}

// match returns, in order, the indexes of the rules whose keywords occur
// in lower (a lower-cased text) and of the rules without keywords.
func (ix *keywordIndex) match(lower string, nrules int) []int {
	var hitRoom, foundRoom [512]bool
	hit, found := room(hitRoom[:], nrules), room(foundRoom[:], len(ix.words))
	ix.mark(lower, false, hit, found)
	return ix.hits(hit, found, func(w string) bool { return strings.Contains(lower, w) })
}

// matchEach is match over the texts joined by newlines and lowered, read
// one by one in place: the same rules, without building the joined text.
// It holds only when no keyword has a newline in it (ix.newline).
func (ix *keywordIndex) matchEach(texts []jsonString, nrules int) []int {
	var hitRoom, foundRoom [512]bool
	hit, found := room(hitRoom[:], nrules), room(foundRoom[:], len(ix.words))
	for _, t := range texts {
		ix.mark(t.text, true, hit, found)
	}
	return ix.hits(hit, found, func(w string) bool {
		for _, t := range texts {
			if strings.Contains(asciiLower(t.text), w) {
				return true
			}
		}
		return false
	})
}

// room returns n false flags, in buf when it is large enough.
func room(buf []bool, n int) []bool {
	if n <= len(buf) {
		return buf[:n]
	}
	return make([]bool, n)
}

// mark sets found for each keyword of two bytes or more in s (lowered
// first when fold) and hit for the rules it hints.
func (ix *keywordIndex) mark(s string, fold bool, hit, found []bool) {
	for i := 0; i+1 < len(s); i++ {
		a, b := s[i], s[i+1]
		if fold {
			a, b = lowerByte(a), lowerByte(b)
		}
		l := ix.pair[uint16(a)<<8|uint16(b)]
		if l == 0 {
			continue
		}
		for _, wi := range ix.lists[l-1] {
			if found[wi] {
				continue
			}
			if fold && hasPrefixFold(s[i:], ix.words[wi]) || !fold && strings.HasPrefix(s[i:], ix.words[wi]) {
				found[wi] = true
				for _, ri := range ix.rules[wi] {
					hit[ri] = true
				}
			}
		}
	}
}

// hits adds the rules of the one-byte keywords in (contains) and the
// rules without keywords to hit, and returns the indexes hit, in order.
func (ix *keywordIndex) hits(hit, found []bool, contains func(string) bool) []int {
	for _, ri := range ix.always {
		hit[ri] = true
	}
	for _, wi := range ix.short {
		if contains(ix.words[wi]) {
			for _, ri := range ix.rules[wi] {
				hit[ri] = true
			}
		}
	}
	var out []int
	for ri, h := range hit {
		if h {
			out = append(out, ri)
		}
	}
	return out
}

// any reports whether s holds one of the keywords, its ASCII letters
// compared in lower case (as match compares asciiLower(s)), without
// allocating.
func (ix *keywordIndex) any(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		l := ix.pair[uint16(lowerByte(s[i]))<<8|uint16(lowerByte(s[i+1]))]
		if l == 0 {
			continue
		}
		for _, wi := range ix.lists[l-1] {
			if hasPrefixFold(s[i:], ix.words[wi]) {
				return true
			}
		}
	}
	for _, wi := range ix.short {
		if strings.Contains(asciiLower(s), ix.words[wi]) {
			return true
		}
	}
	return false
}

// lowerByte lowers an ASCII letter.
func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasPrefixFold reports whether s begins with word (lower case), s's
// ASCII letters compared in lower case.
func hasPrefixFold(s, word string) bool {
	if len(s) < len(word) {
		return false
	}
	for j := 0; j < len(word); j++ {
		if lowerByte(s[j]) != word[j] {
			return false
		}
	}
	return true
}
