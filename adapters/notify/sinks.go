package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/esiqveland/notify"
	"github.com/godbus/dbus/v5"
)

// Payload is one notification as a sink receives it; as JSON it is the
// body of a webhook of format json:
//
//	key      idempotency key (Key), also the Idempotency-Key header
//	rule     the rule's name; on: its kind
//	title, body
//	session  the session it concerns ("" when unknown)
//	event    the triggering event's id; seq, type: its sequence and type
//	at       the triggering event's time (RFC 3339, UTC)
//	host     the host whose serve sent it
type Payload struct {
	Key     string    `json:"key"`
	Rule    string    `json:"rule"`
	On      string    `json:"on"`
	Title   string    `json:"title"`
	Body    string    `json:"body,omitempty"`
	Session string    `json:"session,omitempty"`
	Event   string    `json:"event"`
	Seq     uint64    `json:"seq"`
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	Host    string    `json:"host"`
}

// HintKey is the desktop notification hint that carries the idempotency
// key (a string), for a notification daemon or a test that dedups.
const HintKey = "x-logbook-key"

// Send delivers p to sink s and returns once the sink accepted it or
// s.Timeout passed. A board sink has nothing to deliver: the board's live
// stream carries the notification.sent the caller appends. Errors name
// the sink: a webhook's status other than 2xx (with up to 200 bytes of
// its answer), a connection or D-Bus failure.
func Send(ctx context.Context, s Sink, p Payload) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	var err error
	switch s.Type {
	case SinkBoard:
		return nil
	case SinkWebhook:
		err = sendWebhook(ctx, s, p)
	case SinkDesktop:
		err = sendDesktop(ctx, s, p)
	default:
		err = fmt.Errorf("unknown type %q", s.Type)
	}
	if err != nil {
		return fmt.Errorf("sink %s (%s): %w", s.Name, s.Type, err)
	}
	return nil
}

// slackEscape escapes what Slack's mrkdwn reads as markup in text from
// a session (Slack's "Escaping text": &, <, >).
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// markupEscape escapes a desktop notification's body, which a server
// with the body-markup capability reads as markup (Desktop
// Notifications Specification 1.2, "Markup").
var markupEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Undeliverable says why sink s cannot deliver from this process, as
// far as can be told before trying, or "" when nothing says it cannot: a
// board sink when board is false (serve runs with --http off: it serves
// no board; a board of another serve on the same log still shows the
// notification.sent), a desktop sink with no address when no D-Bus
// session bus is known (DBUS_SESSION_BUS_ADDRESS unset, and neither
// /run/user/UID/bus nor /run/user/UID/dbus-session, where
// github.com/godbus/dbus looks next). Webhooks are not tried ahead.
func Undeliverable(s Sink, board bool) string {
	switch s.Type {
	case SinkBoard:
		if !board {
			return "serve runs with --http off, so it serves no board to show it"
		}
	case SinkDesktop:
		if s.Address != "" {
			return ""
		}
		if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
			return ""
		}
		dir := fmt.Sprintf("/run/user/%d", os.Getuid())
		for _, f := range []string{"bus", "dbus-session"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return ""
			}
		}
		return fmt.Sprintf("no D-Bus session bus is known (DBUS_SESSION_BUS_ADDRESS is not set, no %s/bus): start serve with that variable of your desktop session, or give the sink an address", dir)
	}
	return ""
}

// webhookBody returns the body and content type of p in format f.
func webhookBody(f string, p Payload) ([]byte, string, error) {
	switch f {
	case FormatSlack:
		b, err := json.Marshal(map[string]string{"text": "*" + slackEscape.Replace(p.Title) + "*\n" + slackEscape.Replace(p.Body), "idempotency_key": p.Key})
		return b, "application/json", err
	case FormatNtfy:
		return []byte(p.Body), "text/plain; charset=utf-8", nil
	}
	b, err := json.Marshal(p)
	return b, "application/json", err
}

func sendWebhook(ctx context.Context, s Sink, p Payload) error {
	body, ctype, err := webhookBody(s.Format, p)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Idempotency-Key", p.Key)
	req.Header.Set("User-Agent", "logbook-notify")
	if s.Format == FormatNtfy {
		req.Header.Set("Title", p.Title)
		req.Header.Set("Tags", "logbook,"+p.On)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("POST %s: %s: %s", s.URL, resp.Status, bytes.TrimSpace(b))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

func sendDesktop(ctx context.Context, s Sink, p Payload) error {
	var conn *dbus.Conn
	var err error
	if s.Address != "" {
		conn, err = dbus.Connect(s.Address, dbus.WithContext(ctx))
	} else {
		conn, err = dbus.ConnectSessionBus(dbus.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("session bus: %w", err)
	}
	defer conn.Close()
	n := notify.Notification{
		AppName:       "Logbook",
		Summary:       p.Title,
		Body:          markupEscape.Replace(p.Body),
		ExpireTimeout: notify.ExpireTimeoutSetByNotificationServer,
		Hints:         map[string]dbus.Variant{HintKey: dbus.MakeVariant(p.Key)},
	}
	done := make(chan error, 1)
	go func() {
		_, err := notify.SendNotification(conn, n)
		done <- err
	}()
	select {
	case err = <-done:
		return err
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	}
}
