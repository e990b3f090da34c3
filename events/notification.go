package events

// The notification aggregate records what Logbook told people
// (adapters/notify): one aggregate per notification, its id the
// notification's idempotency key, holding exactly one event:
//
//	lb.ev.notification.<key>   notification.sent
//
// Appending it with Expect 0 is what makes a notification recorded once
// however many notifiers on however many hosts tried: the second append
// is a conflict.

// KindNotification is the notification aggregate kind:
// lb.ev.notification.<idempotency key>.
const KindNotification = "notification"

// NotificationSent records that the sink Sink (a name from notify.toml)
// accepted the notification of rule Rule (a name from notify.toml) about
// the event Event (its id; at stream sequence Seq, of type Type). Key is
// the idempotency key the receiver got, also the aggregate id; Session
// is the session the event concerns ("" when none is known). Title and
// Body are what was said. It needs a complete cause: kind "notify",
// event the triggering event's type, ref its id.
type NotificationSent struct {
	Rule    string `json:"rule"`
	Sink    string `json:"sink"`
	Kind    string `json:"kind"`              // the sink's type: desktop, webhook or board
	On      string `json:"on"`                // the rule's kind: waiting, review_pending, …
	Key     string `json:"key"`               // idempotency key
	Event   string `json:"event"`             // triggering event id
	Seq     uint64 `json:"seq"`               // triggering event's stream sequence
	Type    string `json:"type"`              // triggering event's type
	Session string `json:"session,omitempty"` // the session it concerns
	Title   string `json:"title"`
	Body    string `json:"body,omitempty"`
}

// EventType implements Payload.
func (NotificationSent) EventType() string { return "notification.sent" }

func registerNotification(r *Registry) {
	r.Register(NotificationSent{}, 1, true)
}
