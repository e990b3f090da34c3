package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/term"
)

// existingDataDir resolves the data dir of flag and refuses one that
// does not exist, is not a directory, or is empty (datadir.Dir.Existing).
func existingDataDir(flag string) (dataDir, error) {
	dd, err := resolveDataDir(flag)
	if err != nil {
		return dd, err
	}
	return dd, dd.dir().Existing()
}

// keyStates fills in each line's Registered and Revoked from the log's
// key events, when the data dir has a log (or names a cluster's): a
// data dir that has none is not given one. It returns why the log was
// not read ("" when it was).
func keyStates(ctx context.Context, g *globals, dd dataDir, lines []datadir.KeyLine) string {
	if g.natsURL == "" && g.credsPath == "" && !dd.dir().HasData() {
		return "no log in this data dir"
	}
	rg := *g
	rg.reads, rg.cmdName = true, "logbook keys show"
	b, err := openBackend(ctx, &rg)
	if err != nil {
		return err.Error()
	}
	defer b.Close()
	if b.log == nil || b.log.Verifier() == nil {
		return "the log is read without a pinned admin key"
	}
	if err := datadir.KeyStates(ctx, b.log, lines); err != nil {
		return err.Error()
	}
	return ""
}

// keysCmd is `logbook keys`: the admin key a cluster's hosts pin, and the
// registration of each host's signing keys on the log.
func keysCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "The signing keys of a cluster's hosts: pin the admin key, register each host's keys",
		Long: `keys sets up signing on a NATS cluster of your own (--nats-url), where every
host must judge the log alike. The cluster's admin key is made once
(keys admin) and only its public part goes to the hosts (keys pin). Each
host signs with keys of its own (keys show prints them), which the admin
registers on the log (keys register): the key events on the log, signed by
the pinned admin key, are what every host reads to know which keys are
registered; no host takes them from a file.`,
	}
	admin := &cobra.Command{
		Use:   "admin",
		Short: "Make this data dir's admin key if it has none, and print its public part (to pin on every host)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dd, err := ownDataDir(g)
			if err != nil {
				return err
			}
			k, err := dd.dir().AdminKey()
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(g.stdout, struct {
					ID     string `json:"id"`
					Public string `json:"public"`
				}{k.ID, k.PublicText()})
			}
			fmt.Fprintf(g.stdout, "admin %s %s\n", k.ID, k.PublicText())
			return nil
		},
	}
	pin := &cobra.Command{
		Use:   "pin PUBLIC",
		Short: "Pin the cluster's admin public key (as `logbook keys admin` prints it) in this data dir",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pub, err := attestation.ParsePublic(args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			dd, err := ownDataDir(g)
			if err != nil {
				return err
			}
			path := dd.keyPath("admin.pub")
			already, err := dd.dir().Pin(pub)
			if err != nil {
				return err
			}
			if already {
				fmt.Fprintf(g.stdout, "admin key %s pinned already in %s\n", attestation.KeyID(pub), path)
				return nil
			}
			fmt.Fprintf(g.stdout, "pinned admin key %s in %s; a serve already running reads it at its next start\n", attestation.KeyID(pub), path)
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the keys this host signs with on a cluster (serve, writer, worker), making them if missing, each marked registered, REVOKED or not registered on the log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dd, err := existingDataDir(g.data)
			if err != nil {
				return err
			}
			lines, err := dd.dir().ClusterKeyLines()
			if err != nil {
				return err
			}
			why := keyStates(cmd.Context(), g, dd, lines)
			if g.json {
				return writeJSON(g.stdout, lines)
			}
			pinned := ""
			if pin, err := attestation.ReadPin(dd.keyPath("admin.pub")); err == nil {
				pinned = attestation.KeyID(pin)
			}
			if err := term.Keys(g.stdout, pinned, lines, why); err != nil {
				return err
			}
			if g.natsURL == "" && len(lines) > 0 && lines[0].Role == attestation.RoleServe && lines[0].Registered == 0 {
				// On the data dir's own server serve signs with a key
				// it makes at each start, not the cluster's serve key.
				_, err := fmt.Fprintf(g.stdout, "note: the serve key above is the one serve signs with on a cluster (--nats-url); on this data dir's own server serve signs with a key it makes at each start (`logbook audit` names each event's key)\n")
				return err
			}
			return nil
		},
	}
	var role, principal string
	register := &cobra.Command{
		Use:   "register --role serve|writer|worker --principal NAME PUBLIC",
		Short: "Register a host's key on the log, signed with this data dir's admin key",
		Long: `register appends key.registered for the public key PUBLIC (as ` + "`logbook keys show`" + `
prints it on the host that holds the key), binding it to --principal and
--role, signed with this data dir's admin key (keys/admin.key). On a
cluster pass --nats-url and admin credentials (--creds admin.json). A log
that has not begun signing begins first (signing.began): from then on an
unsigned event, or one signed by a key not registered, is quarantined on
every host that pins the admin key.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pub, err := attestation.ParsePublic(args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			r, err := attestation.ParseRole(role)
			if err != nil || r == attestation.RoleAdmin {
				return usageErrorf("--role %q: want serve, writer or worker", role)
			}
			if principal = strings.TrimSpace(principal); principal == "" {
				return usageErrorf("--principal: want who holds the key, as `logbook keys show` prints it")
			}
			if err := datadir.CheckPrincipal(principal); err != nil {
				return usageErrorf("--principal: %v", err)
			}
			dd, admin, b, err := adminBackend(ctx, g, "keys register")
			if err != nil {
				return err
			}
			defer b.Close()
			id := attestation.KeyID(pub)
			info, already, err := dd.dir().Register(ctx, b.log, admin, pub, principal, r)
			if re, ok := errors.AsType[*datadir.RegisteredError](err); ok {
				return errors.New(datadir.RegisteredMessage(re.ID, re.Info, term.Field(re.Info.Principal)))
			} else if err != nil {
				return err
			}
			if already {
				fmt.Fprintf(g.stdout, "key %s (%s, %s) registered already at seq %d\n", id, principal, r, info.Registered)
				return nil
			}
			fmt.Fprintf(g.stdout, "registered key %s (%s, %s) at seq %d\n", id, principal, r, info.Registered)
			return nil
		},
	}
	register.Flags().StringVar(&role, "role", "", "what the key may append: serve (a host's serve), writer (its CLI, hooks and importers) or worker (its workers)")
	register.Flags().StringVar(&principal, "principal", "", "who holds the key, e.g. user@host as keys show prints it")
	var reason string
	revoke := &cobra.Command{
		Use:   "revoke KEY-ID",
		Short: "Revoke a registered key, signed with this data dir's admin key: what it signs from then on is quarantined",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := strings.TrimSpace(args[0])
			if !datadir.IsKeyID(id) {
				return usageErrorf("key id %q: want the 16 hex characters `logbook keys show` prints", args[0])
			}
			if reason = strings.TrimSpace(reason); reason == "" {
				return usageErrorf("--reason: want why the key is revoked")
			}
			dd, admin, b, err := adminBackend(ctx, g, "keys revoke")
			if err != nil {
				return err
			}
			defer b.Close()
			if err := dd.dir().Revoke(ctx, b.log, admin, id, reason, datadir.HostName(), time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "revoked key %s\n", id)
			return nil
		},
	}
	revoke.Flags().StringVar(&reason, "reason", "", "why the key is revoked, recorded in key.revoked")
	cmd.AddCommand(admin, pin, show, register, revoke)
	return cmd
}

// adminBackend opens, for verb (keys register, keys revoke), the data
// dir g names, which must exist and hold the admin key, and a backend on
// it that appends signed with that key. The caller closes the backend.
func adminBackend(ctx context.Context, g *globals, verb string) (dataDir, *attestation.Key, *backend, error) {
	dd, err := existingDataDir(g.data)
	if err != nil {
		return "", nil, nil, err
	}
	admin, err := dd.dir().OwnAdminKey()
	if err != nil {
		return "", nil, nil, err
	}
	if admin == nil {
		return "", nil, nil, fmt.Errorf("%s: no admin key here; run %s with the --data of the host where `logbook keys admin` made it", dd.keyPath("admin.key"), verb)
	}
	ag := *g
	ag.adminAppends = true
	b, err := openBackend(ctx, &ag)
	if err != nil {
		return "", nil, nil, err
	}
	return dd, admin, b, nil
}
