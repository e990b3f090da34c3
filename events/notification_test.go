package events_test

import "github.com/logbook-dev/logbook/events"

func notificationSamples() []events.Payload {
	return []events.Payload{
		events.NotificationSent{Rule: "slow-wait", Sink: "team", Kind: "webhook", On: "waiting",
			Key: "9c1e5d0b7a3f42e8b6d1c0a95e7f3b24", Event: "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7", Seq: 42,
			Type: "session.transitioned", Session: "s1", Title: "s1 waits for you", Body: "waiting (question) for 2m0s"},
	}
}
