package execsock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/execsock"
)

// TestTrace: stages marked before the exec's command id is known reach
// the observer once it is, in order, later ones as they are marked; a
// second id changes nothing; without an observer, or outside a traced
// context, nothing is reported.
func TestTrace(t *testing.T) {
	type seen struct {
		ID    string
		Stage string
	}
	var (
		mu  sync.Mutex
		got []seen
		ats []time.Time
	)
	execsock.SetTrace(func(id string, s execsock.Stage, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{id, s.String()})
		ats = append(ats, at)
	})
	defer execsock.SetTrace(nil)

	ctx := execsock.Traced(context.Background())
	execsock.Mark(context.Background(), execsock.StageAccepted) // not traced: nothing
	execsock.Mark(ctx, execsock.StageAccepted)
	execsock.Mark(ctx, execsock.StageRead)
	if len(got) != 0 {
		t.Fatalf("reported before the id is known: %+v", got)
	}
	execsock.TraceID(ctx, "01JB0000000000000000000001")
	execsock.TraceID(ctx, "01JB0000000000000000000002") // named already
	execsock.Mark(ctx, execsock.StageParsed)
	execsock.Mark(ctx, execsock.NumStages) // no stage
	id := "01JB0000000000000000000001"
	want := []seen{{id, "accepted"}, {id, "read"}, {id, "parsed"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages reported (-want +got):\n%s", diff)
	}
	for i := 1; i < len(ats); i++ {
		if ats[i].Before(ats[i-1]) {
			t.Errorf("stage %s at %v, before the stage before it (%v)", got[i].Stage, ats[i], ats[i-1])
		}
	}

	execsock.SetTrace(nil)
	untraced := execsock.Traced(context.Background())
	execsock.Mark(untraced, execsock.StageAccepted)
	execsock.TraceID(untraced, id)
	if len(got) != len(want) {
		t.Errorf("reported without an observer: %+v", got[len(want):])
	}
}
