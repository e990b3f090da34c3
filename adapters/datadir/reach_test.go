package datadir

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// A connect that fails names, in the user's terms, what was refused and
// which credentials to use; the cause stays wrapped.
func TestConnectError(t *testing.T) {
	const url = "nats://a:4222,nats://b:4222"
	for _, tc := range []struct {
		natsURL, creds string
		err            error
		want           string
	}{
		{url, "", nats.ErrAuthorization, "refused a connection without credentials: use --creds FILE or LOGBOOK_CREDS"},
		{url, "/c/writer.json", nats.ErrAuthorization, "refused the credentials in /c/writer.json"},
		{url, "", nats.ErrNoServers, "each refused one without credentials: use --creds FILE or LOGBOOK_CREDS"},
		{url, "/c/writer.json", nats.ErrNoServers, "each refused the credentials in /c/writer.json"},
		{"", "", nats.ErrNoServers, "nats: no servers available"},
	} {
		r := Reach{URL: tc.natsURL, CredsPath: tc.creds}
		got := r.ConnectError(url, fmt.Errorf("natslog: connect %s: %w", url, tc.err))
		if !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("natsURL %q creds %q %v: got %v, want it to say %q", tc.natsURL, tc.creds, tc.err, got, tc.want)
		}
	}
}
