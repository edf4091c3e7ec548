package console

import (
	"net/http"
	"sort"

	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// brokerRow is one broker of the cluster (or the single broker).
type brokerRow struct {
	ID                   string
	WebURL, ServiceURL   string
	Topics, Bundles      int
	Producers, Consumers int
	RateIn, RateOut      float64
	ThroughputIn, ThrOut float64
	CPU                  float64
	Reported             bool
	Self                 bool
}

// bundleRow is one namespace bundle and its owner.
type bundleRow struct {
	Namespace, Bundle, Owner string
	Owned                    bool
}

type brokersData struct {
	Clustered bool
	Brokers   []brokerRow
	Bundles   []bundleRow
	Error     string
}

func (c *Console) brokers(w http.ResponseWriter, r *http.Request, _ httpapi.Params) {
	d := brokersData{}
	cl := c.src.Cluster()
	if cl == nil {
		d.Brokers = []brokerRow{{ID: c.src.WebURL(), WebURL: c.src.WebURL(), ServiceURL: c.src.ServiceURL(), Self: true}}
	} else {
		d.Clustered = true
		if err := c.clusterView(r, cl, &d); err != nil {
			d.Error = err.Error()
		}
	}
	c.render(w, http.StatusOK, "brokers", page{Title: "Brokers",
		Crumbs: []crumb{{"Overview", Prefix}, {"Brokers", ""}}, Data: d})
}

// clusterView fills the live brokers with their last load reports, and
// every namespace's bundles with their owners.
func (c *Console) clusterView(r *http.Request, cl *cluster.Service, d *brokersData) error {
	ctx := r.Context()
	ids, err := cl.Brokers(ctx)
	if err != nil {
		return err
	}
	sort.Strings(ids)
	for _, id := range ids {
		row := brokerRow{ID: id}
		if rep, err := cl.Report(ctx, id); err == nil {
			row.Reported = true
			row.WebURL, row.ServiceURL = rep.WebServiceURL, rep.PulsarServiceURL
			row.Topics, row.Bundles = rep.NumTopics, rep.NumBundles
			row.Producers, row.Consumers = rep.NumProducers, rep.NumConsumers
			row.RateIn, row.RateOut = rep.MsgRateIn, rep.MsgRateOut
			row.ThroughputIn, row.ThrOut = rep.MsgThroughputIn, rep.MsgThroughputOut
			if rep.CPU.Limit > 0 {
				row.CPU = rep.CPU.Usage / rep.CPU.Limit * 100
			}
			row.Self = rep.WebServiceURL == c.src.WebURL()
		}
		d.Brokers = append(d.Brokers, row)
	}
	pol := c.src.Policies()
	tenants, err := pol.Tenants(ctx)
	if err != nil {
		return err
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		nss, err := pol.Namespaces(ctx, t)
		if err != nil {
			continue
		}
		sort.Strings(nss)
		for _, ns := range nss {
			bs, err := cl.Bundles(ctx, ns)
			if err != nil {
				continue
			}
			for _, rg := range bs.Ranges() {
				row := bundleRow{Namespace: ns, Bundle: rg.String()}
				if od, ok, err := cl.Owner(ctx, ns, rg); err == nil && ok {
					row.Owner, row.Owned = od.HTTPURL, true
				}
				d.Bundles = append(d.Bundles, row)
			}
		}
	}
	return nil
}
