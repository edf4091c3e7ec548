// Package bookieinfo is what the broker's surfaces report of the storage
// nodes: a Source lists each bookie's Status (id, read-only, numeric
// stats), which the admin API (/admin/v2/bookies/all and the
// persistence policies' ensemble check), the console's bookie page and
// /metrics (bookie_SERVER_STATUS, bookie_<stat>) read. The wiring hands
// them one (the bookies registered in the metadata store, or the
// standalone's in-process bookie, Local); the broker core never sees it.
//
// Invariants: a nil Source means no bookie is known (an empty list, no
// series, no ensemble check); Bookies is called on every request or
// scrape and must not block long. It imports nothing of the project.
package bookieinfo
