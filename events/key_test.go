package events_test

import "github.com/logbook-dev/logbook/events"

// keySamples returns one payload of each key event type, for the goldens.
func keySamples() []events.Payload {
	return []events.Payload{
		events.KeyRegistered{Public: "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=", Principal: "serve@build-3", Role: "serve"},
		events.KeyRevoked{Reason: "the host was retired"},
		events.SigningBegan{Host: "build-3"},
	}
}
