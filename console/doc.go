// Package console is Magnetar's built-in web console, served on the
// admin HTTP port under /console (see docs/console.md).
//
// Pages are rendered on the server with html/template from the broker's
// admin Service (Source); the templates, the stylesheet and the one
// script are embedded in the binary (embed), so the console needs
// nothing installed and no network access in the browser.
//
// Routes (all GET):
//
//	/console                                     overview: tenants, bookie summary
//	/console/tenants/{tenant}                    namespaces
//	/console/namespaces/{tenant}/{ns}            topics with partitions, producers,
//	                                             subscriptions, consumers, backlog, rates
//	/console/topics/{domain}/{tenant}/{ns}/{topic}          one topic (charts, subscriptions)
//	/console/topics/{domain}/{tenant}/{ns}/{topic}/history  its samples as JSON
//	/console/bookies                             state, disk usage, journal sync latency
//	/console/brokers                             brokers and bundle ownership
//	/console/static/{file}                       console.css, console.js
//
// Invariants:
//   - A missing tenant, namespace or topic, or an unknown console path,
//     renders the error page with 404; a bad name 400. A page is rendered
//     into a buffer before anything is written, so a failure is a clean
//     error page, never half a page.
//   - The console changes nothing itself. Subscription actions (skip all,
//     reset cursor to a time, peek, delete) are made by the page's script
//     calling the admin REST API (/admin/v2/...), after a confirmation
//     dialog for the destructive ones, so they pass exactly the admin
//     API's authentication and authorization. The pages themselves are
//     covered by the auth package's rules for /console paths.
//   - Charts are hand-drawn SVG polylines over the broker's history
//     sampler (topichistory.Sample: one sample per HistoryInterval, the last 15
//     minutes by default). x = 600·(at−(now−15 min))/15 min,
//     y = 150−150·v/top where top is the series' maximum rounded up to
//     1, 2 or 5·10ⁿ; console.js redraws with the same formula from the
//     history JSON every interval.
//   - In a cluster a topic page is redirected (307) to the console of the
//     broker owning the topic's bundle, and namespace listings show only
//     topics loaded on this broker (listing never takes bundles).
package console
