// Package packages is Pulsar's package management (PIP-14): versioned
// function, source and sink packages named
// type://tenant/namespace/name@version, served under /admin/v3/packages
// and read by the function worker for function://, source:// and sink://
// package URLs.
//
// # Storage
//
// Like Pulsar's (which keeps both in DistributedLog logs on BookKeeper),
// the contents live on the bookies: each version's bytes are one ledger,
// EntrySize (1 MiB) bytes an entry, the last entry shorter, no entry for
// an empty package. The ledger's ensemble, write and ack quorum are
// Pulsar's packagesReplicas. Its custom metadata names the package
// ("application": "magnetar-packages", "package": the full name), so an
// operator can tell package ledgers apart.
//
// The metadata is one JSON node per version in the metadata store:
//
//	/packages/{type}/{tenant}/{namespace}/{name}/{version}
//	{"format":1,"metadata":{description,contact,createTime,modificationTime,properties},
//	 "ledger":ID,"size":BYTES,"entries":N,"sha256":HEX}
//
// The name components are node names as they are (Pulsar's rules leave
// out '/', '\', NUL, "." and "..", which the store refuses too).
//
// # Invariants
//
//   - A record names a CLOSED ledger holding exactly its size bytes: an
//     upload writes and closes the ledger first, then creates the record
//     (create-only, so two uploads of one version cannot both win); a
//     failed or refused upload deletes its ledger. A crash between the two
//     steps leaves a ledger no record names (tagged as above).
//   - Versions are immutable: an upload of an existing version is
//     refused (404 "already exists", as Pulsar answers it).
//   - A download checks the bytes read against the recorded size and
//     SHA-256; the entries carry the bookies' CRC32C digests as well. The
//     answer streams: a failure after the first byte aborts the
//     connection.
//   - Delete removes the record (readers answer 404 from then on), then
//     the ledger, then the name's node once it has no version left.
//   - A metadata update replaces description, contact and properties,
//     keeps the creation time and sets the modification time (Pulsar's
//     update also overwrites the creation time with the request's, which
//     clients send as 0; Magnetar keeps it).
//
// # HTTP
//
// Routes (Register): list (GET …/{type}/{tenant}/{namespace}: names),
// versions (GET …/{name}), upload (POST …/{name}/{version}, multipart
// parts "file" and "metadata", in either order; at most
// httpapi.MaxPackageBody), download (GET, application/octet-stream),
// delete, and GET/PUT …/{version}/metadata. Statuses as Pulsar's: a bad
// type or name 412, no such package 404, no metadata or file part 400,
// package management off (enablePackagesManagement=false) 503 on every
// route. Every route takes auth.AccessPackages: superusers, the tenant's
// admins, or the packages permission on the namespace.
package packages
