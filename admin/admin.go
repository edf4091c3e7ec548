package admin

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/bookieinfo"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/isolation"
	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/policy"
)

// API serves Pulsar's admin REST API over the broker's roles (roles.go).
type API struct {
	node         Node
	topics       Topics
	props        TopicProperties
	reads        TopicReads
	life         TopicLifecycle
	compaction   Compaction
	offloads     Offloads // nil: no offload routes
	ledgers      TopicLedgers
	subs         Subscriptions
	schemas      Schemas
	own          Ownership
	coordinators TxnCoordinators
	participants TxnParticipants
	pol          *policy.Store
	metrics      BrokerMetrics      // nil: no /admin/v2/broker-stats/metrics
	bookies      bookieinfo.Source  // nil: no bookies known
	quotas       ResourceQuotas     // nil: no /admin/v2/resource-quotas
	conf         BrokerConfig       // nil: no /admin/v2/brokers/configuration
	cpu          cluster.CPUSampler // the standalone's load report
	sec          *auth.Security
	iso          Isolation // nil: failure domains and isolation policies answer 503
	// grants stores the permission endpoints' grants in the namespaces'
	// policies: the broker's authorizer when authorization is on, else
	// one over the same metadata store (Pulsar stores and answers grants
	// with authorization off too; it enforces them only when it is on).
	// Nil only without a metadata store: those endpoints answer 501.
	grants     *auth.Authorizer
	meta       metadata.Store // Deps.Metadata (nil: the rack routes answer 500)
	statusFile string         // Deps.StatusFile (status.go)
	// versionCheck is clientLibraryVersionCheckEnabled in force
	// (client_version.go).
	versionCheck atomic.Bool
	log          *slog.Logger
}

// routeTable is where the API declares its routes.
type routeTable = *httpapi.Table

var errTopicNotFound = broker.ErrTopicNotFound

// Register declares the admin REST API on rt (a broker's route table,
// before the broker starts) over d's roles, and installs the owner
// redirect of a clustered broker (redirect.go).
func Register(rt routeTable, d Deps) *API {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	a := &API{node: d.Node, topics: d.Topics, props: d.TopicProperties, reads: d.Reads, life: d.Lifecycle, compaction: d.Compaction, offloads: d.Offloads, ledgers: d.Ledgers,
		subs: d.Subscriptions, schemas: d.Schemas, own: d.Ownership, coordinators: d.Coordinators,
		participants: d.Participants, metrics: d.Metrics, bookies: d.Bookies, quotas: d.Quotas, conf: d.Config, pol: d.Node.Policies(), sec: d.Security, iso: d.Isolation, statusFile: d.StatusFile, log: d.Log}
	if a.iso == nil && d.Metadata != nil {
		a.iso = isolation.NewStore(d.Metadata)
	}
	a.meta = d.Metadata
	a.watchClientVersionCheck(d.ClientLibraryVersionCheck) // client_version.go
	switch {
	case d.Security != nil && d.Security.Authz != nil:
		a.grants = d.Security.Authz
	case d.Metadata != nil:
		a.grants = auth.NewAuthorizer(auth.AuthorizerConfig{Store: d.Metadata})
	}
	a.registerStatusRoute(rt) // status.go
	a.registerPermissionRoutes(rt)
	a.registerClusterRoutes(rt)
	a.registerBrokerRoutes(rt)
	a.registerTenantRoutes(rt)
	a.registerPolicyRoutes(rt)
	a.registerClearBacklogRoutes(rt)
	a.registerOffloadRoutes(rt)
	a.registerTopicRoutes(rt)
	a.registerLedgerInfoRoutes(rt)     // ledgerinfo.go
	a.registerBookieAffinityRoutes(rt) // bookie_affinity.go
	a.registerRackRoutes(rt)           // bookie_racks.go
	a.registerSubscriptionRoutes(rt)
	a.registerSchemaRoutes(rt)
	a.registerTransactionRoutes(rt)            // transactions.go
	a.registerTransactionParticipantRoutes(rt) // transactions_participants.go
	a.registerLookupRoutes(rt)                 // cluster.go
	a.registerClusterBrokerRoutes(rt)          // cluster.go
	a.registerBundleRoutes(rt)                 // cluster.go
	a.registerIsolationRoutes(rt)              // isolation.go
	a.registerResourceQuotaRoutes(rt)          // resource_quotas.go
	a.registerBrokerStatsRoutes(rt)            // broker_stats.go
	a.registerBundleAdminRoutes(rt)            // bundles.go
	a.registerBrokerStatsTopicRoutes(rt)       // broker_stats_topics.go
	a.registerBrokerMetricsRoute(rt)           // broker_metrics.go
	rt.SetIntercept(a.ownerRedirect)           // redirect.go
	typeWrites(rt)
	return a
}

type (
	params  = httpapi.Params
	handler = httpapi.HandlerFunc
)

// typeWrites gives a write route without a request type the response
// type of the GET of the same pattern (a policy is read and written as
// one value).
func typeWrites(rt routeTable) {
	get := map[string]any{}
	for _, r := range rt.Routes() {
		if r.Method == http.MethodGet && r.Response != nil {
			get[r.Pattern] = r.Response
		}
	}
	for _, r := range rt.Routes() {
		if (r.Method == http.MethodPost || r.Method == http.MethodPut) && r.Request == nil {
			if v, ok := get[r.Pattern]; ok {
				r.Request = v
			}
		}
	}
}
