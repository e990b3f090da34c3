package bench

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
)

// TestBenchStoredFrom: the stored events are read from a sequence to the
// log's end, each subject's in order, the subjects in the order of their
// first; a message stored last that is no event (output) ends nothing
// early and keeps nothing waiting; from past the end reads none.
func TestBenchStoredFrom(t *testing.T) {
	_, srv := natslogtest.Start(t, natslog.FsyncAlways)
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, m := range []struct{ subj, data string }{
		{"lb.ev.session.a", "a1"}, {"lb.ev.session.b", "b1"}, {"lb.out.c", "out1"},
		{"lb.ev.session.a", "a2"}, {"lb.out.c", "out2"},
	} {
		ack, err := js.Publish(t.Context(), m.subj, []byte(m.data))
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Sequence
	}
	got := func(from uint64) []string {
		t.Helper()
		subjects, err := benchStoredFrom(t.Context(), js, from)
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		var out []string
		for _, msgs := range subjects {
			for _, m := range msgs {
				out = append(out, m.Subject+"="+string(m.Data))
			}
		}
		return out
	}
	for _, c := range []struct {
		from uint64
		want []string
	}{
		{1, []string{"lb.ev.session.a=a1", "lb.ev.session.a=a2", "lb.ev.session.b=b1"}},
		{2, []string{"lb.ev.session.b=b1", "lb.ev.session.a=a2"}},
		{last, nil},
		{last + 1, nil},
	} {
		if g := got(c.from); !slices.Equal(g, c.want) {
			t.Errorf("from %d: %q; want %q", c.from, g, c.want)
		}
	}
}
