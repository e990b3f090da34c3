package natslog

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkLastEventSeq times LastEventSeq, which every exec's and every
// API read's catch-up asks, on logs of 1,000 and 20,000 aggregates (one
// event and one output message each), beside the server's own answer to
// the last message on lb.ev.> (server-walk), which walks every subject;
// logbook: this Log appended the last event (its answer the time
// before); since=N: another writer appended N events (each followed by
// an output message) before each call, the appends untimed:
//
//	go test ./adapters/natslog -run '^$' -bench LastEventSeq -count 5
func BenchmarkLastEventSeq(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		l, s := newLog(b)
		js, err := jetstream.New(s.Conn())
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if i%500 == 0 {
				<-js.PublishAsyncComplete()
			}
			if _, err := js.PublishAsync(fmt.Sprintf("lb.ev.command.c%d", i), []byte("{}")); err != nil {
				b.Fatal(err)
			}
			if _, err := js.PublishAsync(fmt.Sprintf("lb.out.c%d", i), []byte("out")); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		if _, err := js.Publish(b.Context(), "lb.ev.session.last", []byte("{}")); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("aggregates=%d/logbook", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := l.LastEventSeq(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, since := range []int{3} {
			b.Run(fmt.Sprintf("aggregates=%d/logbook-since=%d", n, since), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					for j := range since {
						if _, err := js.PublishAsync(fmt.Sprintf("lb.ev.command.c%d", j), []byte("{}")); err != nil {
							b.Fatal(err)
						}
						if _, err := js.PublishAsync(fmt.Sprintf("lb.out.c%d", j), []byte("out")); err != nil {
							b.Fatal(err)
						}
					}
					<-js.PublishAsyncComplete()
					b.StartTimer()
					if _, err := l.LastEventSeq(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("aggregates=%d/server-walk", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := l.lastEventSeq(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
