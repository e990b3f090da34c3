package gate

import (
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/reducers/session"
)

func TestMatchReviews(t *testing.T) {
	row := func(sess, id string) PendingRow {
		return PendingRow{Session: sess, PendingReview: session.PendingReview{ID: id}}
	}
	rows := []PendingRow{row("s1", "r-abc"), row("s2", "r-abc"), row("s1", "r-abd"), row("s2", "r-x")}
	ids := func(rs []PendingRow) (out []string) {
		for _, r := range rs {
			out = append(out, r.Session+"/"+r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		sess, id string
		want     []string
		exact    bool
	}{
		{"", "r-abc", []string{"s1/r-abc", "s2/r-abc"}, true},
		{"s2", "r-abc", []string{"s2/r-abc"}, true},
		{"", "r-ab", []string{"s1/r-abc", "s2/r-abc", "s1/r-abd"}, false},
		{"s1", "r-ab", []string{"s1/r-abc", "s1/r-abd"}, false},
		{"", "r-x", []string{"s2/r-x"}, true},
		{"s1", "r-x", nil, false},
		{"", "q", nil, false},
	} {
		got, exact := MatchReviews(rows, tc.sess, tc.id)
		if g := ids(got); exact != tc.exact || !slices.Equal(g, tc.want) {
			t.Errorf("MatchReviews(%q, %q) = %v, %v; want %v, %v", tc.sess, tc.id, g, exact, tc.want, tc.exact)
		}
	}
}
