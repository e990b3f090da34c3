package redact

import "strings"

// keywordIndex finds which of many lower-case keywords occur in a text in
// one pass: a table of the keywords' first two bytes picks the positions
// worth a closer look. It is immutable once built.
type keywordIndex struct {
	words  []string
	pair   []uint16 // 1<<16 entries, by first two bytes: 1 + index into lists, or 0
	lists  [][]int  // indexes into words
	short  []int    // one-byte keywords, looked up with strings.Contains
	rules  [][]int  // for each word, the rules (indexes) it hints
	always []int    // rules without hints
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
	hit := make([]bool, nrules)
	for _, ri := range ix.always {
		hit[ri] = true
	}
	found := make([]bool, len(ix.words))
	for i := 0; i+1 < len(lower); i++ {
		l := ix.pair[uint16(lower[i])<<8|uint16(lower[i+1])]
		if l == 0 {
			continue
		}
		for _, wi := range ix.lists[l-1] {
			if !found[wi] && strings.HasPrefix(lower[i:], ix.words[wi]) {
				found[wi] = true
				for _, ri := range ix.rules[wi] {
					hit[ri] = true
				}
			}
		}
	}
	for _, wi := range ix.short {
		if strings.Contains(lower, ix.words[wi]) {
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
