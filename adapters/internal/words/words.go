// Package words holds the few helpers that put counts into the English
// of Logbook's messages, shared by the packages that write them (term
// and the adapters below it, which term imports and so cannot import).
package words

import "strconv"

// Plural returns "1 thing" or "n things": the noun's plural is noun+"s"
// unless pl gives it ("1 entry", "3 entries").
func Plural(n int, noun string, pl ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(pl) > 0 {
		return strconv.Itoa(n) + " " + pl[0]
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
