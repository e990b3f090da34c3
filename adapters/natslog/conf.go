package natslog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// AuthorizationConf returns a nats-server configuration block (the
// server's own config file syntax, as of nats-server v2.15) that defines
// users, each with Permissions(User, g): the same users and permissions
// the embedded server gives them, for a cluster of stock nats-server
// nodes to `include`. Every node of a cluster must include the same
// block. Passwords are written as they are (plain text): keep the file
// 0600. It refuses users Validate of EmbeddedConfig would refuse (empty
// name or password, a name twice, an unknown role, a bad follower id).
func AuthorizationConf(users []User, g Grants) (string, error) {
	if err := (EmbeddedConfig{StoreDir: ".", Users: users}).Validate(); err != nil {
		return "", err
	}
	if len(users) == 0 {
		return "", fmt.Errorf("natslog: authorization conf: no users")
	}
	var b strings.Builder
	b.WriteString("authorization {\n  users: [\n")
	for _, u := range users {
		fmt.Fprintf(&b, "    {\n      user: %s\n      password: %s\n", strconv.Quote(u.Name), strconv.Quote(u.Password))
		if p := Permissions(u, g); p != nil {
			b.WriteString("      permissions: {\n")
			writeSubjects(&b, "publish", p.Publish)
			writeSubjects(&b, "subscribe", p.Subscribe)
			if p.Response != nil {
				fmt.Fprintf(&b, "        allow_responses: {max: %d, expires: %s}\n", p.Response.MaxMsgs, strconv.Quote(p.Response.Expires.String()))
			}
			b.WriteString("      }\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

// writeSubjects writes one permission map (allow and deny lists).
func writeSubjects(b *strings.Builder, name string, sp *server.SubjectPermission) {
	if sp == nil {
		return
	}
	fmt.Fprintf(b, "        %s: {\n", name)
	for _, l := range []struct {
		key  string
		subs []string
	}{{"allow", sp.Allow}, {"deny", sp.Deny}} {
		if len(l.subs) == 0 {
			continue
		}
		q := make([]string, len(l.subs))
		for i, s := range l.subs {
			q[i] = strconv.Quote(s)
		}
		fmt.Fprintf(b, "          %s: [%s]\n", l.key, strings.Join(q, ", "))
	}
	b.WriteString("        }\n")
}
