// Package cliflags holds the flag groups several server commands of the
// magnetar binary share, each with the configuration keys that set it
// and the conversion into the options of the package it configures:
//
//   - HTTP: the limits of a command's HTTP listeners (httpapi.Limits),
//     one flag per Pulsar key under the same name;
//   - Security: TLS, authentication and authorization (auth.Config),
//     one flag per Pulsar key, turned into a broker's listeners, a
//     bookie server's TLS and AUTH hook, or the bookie client's;
//   - Storage: managed-ledger rollover and tiered storage (mledger,
//     policy.OffloadDefaults);
//   - BookieTuning: the bookie settings standalone and bookie share;
//   - Functions: where function packages may come from and what the
//     builtin connectors may reach (functions.Options).
//
// A group is registered on a command's flag set and read once the flags
// are parsed (the role's --config file and environment are applied to
// the same flags by internal/conf, so a group never reads files). The
// *Keys tables map Pulsar's configuration keys onto the group's flags;
// cmd/magnetar puts them into each role's schema.
//
// Invariants: registering a group adds exactly the flags its *Keys name
// (plus those with no file key); a value is validated where it is read
// (Limits, Load, OffloadDefaults), never at registration, so `--help`
// and `config dump` work with any value.
package cliflags
