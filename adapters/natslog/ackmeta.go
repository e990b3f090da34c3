package natslog

import (
	"fmt"
	"strings"
	"time"
)

// ackMeta reads the stream sequence, the consumer's pending count and
// the storage time of a message an ordered consumer delivered from its
// reply subject, without allocating: what jetstream.Msg.Metadata returns
// in those fields (Sequence.Stream, NumPending, Timestamp), which
// consume needs for every message of a read. The subject is
// "$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ns>.<pending>"
// (9 tokens), or with "<domain>.<account hash>." after "$JS.ACK." and an
// optional last token (11 or more), as nats.go's parser reads it
// (nats.go internal/parser GetMetadataFields). A number that is not
// plain decimal digits reads as 0, as there. Any other subject is an
// error naming it.
func ackMeta(reply string) (seq, pending uint64, at time.Time, err error) {
	_, seq, _, ns, pending, err := ackMetaAll(reply)
	return seq, pending, time.Unix(0, int64(ns)), err
}

// ackMetaAll is ackMeta with every number of the ack subject: how many
// times the message was delivered, its stream sequence, the consumer's
// sequence of the delivery, the storage time in Unix ns and the
// consumer's pending count.
func ackMetaAll(reply string) (delivered, sseq, cseq, ns, pending uint64, err error) {
	const prefix = "$JS.ACK."
	n := strings.Count(reply, ".") + 1
	if !strings.HasPrefix(reply, prefix) || n < 9 || n > 9 && n < 11 {
		return 0, 0, 0, 0, 0, fmt.Errorf("not a JetStream message: reply subject %q is not an ack subject", reply)
	}
	rest := reply[len(prefix):]
	if n >= 11 {
		for range 2 { // domain and account hash
			_, rest, _ = strings.Cut(rest, ".")
		}
	}
	var tok [7]string // stream, consumer, delivered, sseq, cseq, ns, pending
	for i := range tok {
		tok[i], rest, _ = strings.Cut(rest, ".")
	}
	return ackNum(tok[2]), ackNum(tok[3]), ackNum(tok[4]), ackNum(tok[5]), ackNum(tok[6]), nil
}

// ackNum is the decimal number s, or 0 when s is empty or holds another
// byte than a digit.
func ackNum(s string) uint64 {
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
