// Package notify tells people when an agent needs them: the rules and
// sinks of the data dir's notify.toml (Parse, Watch), the pure rule
// evaluation (Match, Holds, Key), the sinks (Send: freedesktop desktop
// notifications over the D-Bus session bus through
// github.com/esiqveland/notify, webhooks in Logbook's JSON, Slack's or
// ntfy's shape, and the board), and the Notifier that serve runs: a
// reactor on one durable JetStream consumer shared by every host, that
// records each notification it sent as notification.sent, once per
// event across restarts and hosts.
//
// notify.toml follows TOML v1.0.0 as github.com/pelletier/go-toml/v2
// reads it; the freedesktop sink follows the Desktop Notifications
// Specification 1.2 (org.freedesktop.Notifications.Notify).
package notify
