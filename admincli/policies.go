package admincli

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
)

// Policy commands of `magnetar admin namespaces` and `magnetar admin
// topics` (also under `topicPolicies`, as pulsar-admin has them): rate
// limits, inactive topic deletion, subscription expiry and the
// topic-level overrides of the namespace policies.

// policyScope is where a policy command applies: a namespace or a topic.
type policyScope struct {
	a     *adminCLI
	topic bool
	arg   string // usage of the first argument
}

// cmd builds a command whose first argument is the scope's target and
// runs run with the target's REST base path.
func (s policyScope) cmd(use, short string, run func(base string) error) *cobra.Command {
	return &cobra.Command{Use: use + " " + s.arg, Short: short, Args: cobra.ExactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
		var p string
		var err error
		if s.topic {
			p, err = topicPath(args[0])
			p = "/admin/v2/" + p
		} else {
			p, err = nsPath(args[0])
			p = "/admin/v2/namespaces/" + p
		}
		if err != nil {
			return err
		}
		return run(p)
	}}
}

// getRemove returns get-<name> (with --applied on topics) and
// remove-<name> for the REST suffix.
func (s policyScope) getRemove(name, what, suffix string) []*cobra.Command {
	a := s.a
	var applied bool
	get := s.cmd("get-"+name, "Get the "+what, func(p string) error {
		if applied {
			return a.get(p+suffix+"?applied=true", "")
		}
		return a.get(p+suffix, "")
	})
	if s.topic {
		get.Flags().BoolVar(&applied, "applied", false, "show the value in force (topic, else namespace, else broker default)")
	}
	remove := s.cmd("remove-"+name, "Remove the "+what, func(p string) error { return a.write("DELETE", p+suffix, nil) })
	return []*cobra.Command{get, remove}
}

// rateCmds are the rate limit and inactivity commands of both scopes.
func (s policyScope) rateCmds() []*cobra.Command {
	a := s.a
	var pubMsgs int
	var pubBytes int64
	setPub := s.cmd("set-publish-rate", "Set the publish rate limit (per topic)", func(p string) error {
		return a.write("POST", p+"/publishRate", map[string]any{"publishThrottlingRateInMsg": pubMsgs, "publishThrottlingRateInByte": pubBytes})
	})
	setPub.Flags().IntVarP(&pubMsgs, "msg-publish-rate", "m", -1, "messages per second (-1: unlimited)")
	setPub.Flags().Int64VarP(&pubBytes, "byte-publish-rate", "b", -1, "bytes per second (-1: unlimited)")

	dispatch := func(name, what, suffix string) *cobra.Command {
		var msgs, period int
		var bytes int64
		var relative bool
		c := s.cmd("set-"+name, "Set the "+what, func(p string) error {
			return a.write("POST", p+suffix, map[string]any{"dispatchThrottlingRateInMsg": msgs, "dispatchThrottlingRateInByte": bytes,
				"ratePeriodInSecond": period, "relativeToPublishRate": relative})
		})
		c.Flags().IntVar(&msgs, "msg-dispatch-rate", -1, "messages per period (-1: unlimited)")
		c.Flags().Int64Var(&bytes, "byte-dispatch-rate", -1, "bytes per period (-1: unlimited)")
		c.Flags().IntVar(&period, "dispatch-rate-period", 1, "period in seconds")
		c.Flags().BoolVar(&relative, "relative-to-publish-rate", false, "add the limits to the topic's publish rate")
		return c
	}
	var subRate, subPeriod int
	setSub := s.cmd("set-subscribe-rate", "Set the subscribe rate limit per consumer", func(p string) error {
		return a.write("POST", p+"/subscribeRate", map[string]any{"subscribeThrottlingRatePerConsumer": subRate, "ratePeriodInSecond": subPeriod})
	})
	setSub.Flags().IntVar(&subRate, "subscribe-rate", -1, "subscribes per consumer per period (-1: unlimited)")
	setSub.Flags().IntVar(&subPeriod, "subscribe-rate-period", 30, "period in seconds")

	var enable, disable bool
	var maxInactive int
	var mode string
	setInactive := s.cmd("set-inactive-topic-policies", "Set the inactive topic deletion policy", func(p string) error {
		if enable == disable {
			return fmt.Errorf("give exactly one of --enable-delete-while-inactive or --disable-delete-while-inactive")
		}
		return a.write("POST", p+"/inactiveTopicPolicies", map[string]any{"deleteWhileInactive": enable,
			"maxInactiveDurationSeconds": maxInactive, "inactiveTopicDeleteMode": mode})
	})
	setInactive.Flags().BoolVarP(&enable, "enable-delete-while-inactive", "e", false, "delete inactive topics")
	setInactive.Flags().BoolVarP(&disable, "disable-delete-while-inactive", "d", false, "keep inactive topics")
	setInactive.Flags().IntVarP(&maxInactive, "max-inactive-duration", "t", 60, "seconds of inactivity before deletion")
	setInactive.Flags().StringVarP(&mode, "delete-mode", "m", "delete_when_no_subscriptions", "delete_when_no_subscriptions or delete_when_subscriptions_caught_up")

	cmds := []*cobra.Command{setPub,
		dispatch("dispatch-rate", "dispatch rate limit (per topic)", "/dispatchRate"),
		dispatch("subscription-dispatch-rate", "dispatch rate limit per subscription", "/subscriptionDispatchRate"),
		dispatch("replicator-dispatch-rate", "rate limit of each geo-replicator", "/replicatorDispatchRate"),
		setSub, setInactive}
	cmds = append(cmds, s.getRemove("publish-rate", "publish rate limit", "/publishRate")...)
	cmds = append(cmds, s.getRemove("dispatch-rate", "dispatch rate limit", "/dispatchRate")...)
	cmds = append(cmds, s.getRemove("subscription-dispatch-rate", "subscription dispatch rate limit", "/subscriptionDispatchRate")...)
	cmds = append(cmds, s.getRemove("replicator-dispatch-rate", "geo-replicator rate limit", "/replicatorDispatchRate")...)
	cmds = append(cmds, s.getRemove("subscribe-rate", "subscribe rate limit", "/subscribeRate")...)
	cmds = append(cmds, s.getRemove("inactive-topic-policies", "inactive topic policy", "/inactiveTopicPolicies")...)
	return cmds
}

// namespacePolicyCmds are the namespace-only policy commands added by
// this file.
func namespacePolicyCmds(a *adminCLI) []*cobra.Command {
	s := policyScope{a: a, arg: "<tenant/namespace>"}
	var mins int
	setExp := s.cmd("set-subscription-expiration-time", "Expire subscriptions idle without consumers", func(p string) error {
		return a.write("POST", p+"/subscriptionExpirationTime", mins)
	})
	setExp.Flags().IntVarP(&mins, "time", "t", 0, "minutes (0: never)")
	cmds := append(s.rateCmds(), setExp)
	return append(cmds, s.getRemove("subscription-expiration-time", "subscription expiration time", "/subscriptionExpirationTime")...)
}

// topicPolicyCmds are the topic-level policy commands.
func topicPolicyCmds(a *adminCLI) []*cobra.Command {
	s := policyScope{a: a, topic: true, arg: "<topic>"}
	var retTime, retSize string
	setRet := s.cmd("set-retention", "Set the topic's retention", func(p string) error {
		mins, err := parseMinutes(retTime)
		if err != nil {
			return err
		}
		size, err := parseSize(retSize)
		if err != nil {
			return err
		}
		if size > 0 {
			size = (size + (1<<20 - 1)) >> 20
		}
		return a.write("POST", p+"/retention", map[string]any{"retentionTimeInMinutes": mins, "retentionSizeInMB": size})
	})
	setRet.Flags().StringVarP(&retTime, "time", "t", "0", "retention time (e.g. 60m, 3h, 2d, -1 for infinite)")
	setRet.Flags().StringVarP(&retSize, "size", "s", "0", "retention size (e.g. 100M, 1G, -1 for infinite)")
	var ttl int
	setTTL := s.cmd("set-message-ttl", "Set the topic's message TTL", func(p string) error {
		return a.write("POST", p+"/messageTTL?messageTTL="+url.QueryEscape(fmt.Sprint(ttl)), nil)
	})
	setTTL.Flags().IntVarP(&ttl, "ttl", "t", 0, "seconds")
	var limitSize, quotaPolicy string
	var limitTime int64
	setQuota := s.cmd("set-backlog-quota", "Set the topic's backlog quota", func(p string) error {
		size, err := parseSize(limitSize)
		if err != nil {
			return err
		}
		return a.write("POST", p+"/backlogQuota?backlogQuotaType=destination_storage",
			map[string]any{"limitSize": size, "limitTime": limitTime, "policy": quotaPolicy})
	})
	setQuota.Flags().StringVarP(&limitSize, "limit", "l", "-1", "backlog size limit (e.g. 10M)")
	setQuota.Flags().Int64Var(&limitTime, "limitTime", -1, "backlog age limit in seconds")
	setQuota.Flags().StringVarP(&quotaPolicy, "policy", "p", "producer_request_hold", "producer_request_hold, producer_exception or consumer_backlog_eviction")
	var maxP, maxC int
	setMaxP := s.cmd("set-max-producers", "Set the topic's producer limit", func(p string) error { return a.write("POST", p+"/maxProducers", maxP) })
	setMaxP.Flags().IntVarP(&maxP, "max-producers", "p", 0, "limit (0: unlimited)")
	setMaxC := s.cmd("set-max-consumers", "Set the topic's consumer limit", func(p string) error { return a.write("POST", p+"/maxConsumers", maxC) })
	setMaxC.Flags().IntVarP(&maxC, "max-consumers", "c", 0, "limit (0: unlimited)")
	var enable, disable bool
	setDedup := s.cmd("set-deduplication", "Enable or disable the topic's deduplication", func(p string) error {
		if enable == disable {
			return fmt.Errorf("give exactly one of --enable or --disable")
		}
		return a.write("POST", p+"/deduplicationEnabled", enable)
	})
	setDedup.Flags().BoolVarP(&enable, "enable", "e", false, "enable")
	setDedup.Flags().BoolVarP(&disable, "disable", "d", false, "disable")

	cmds := []*cobra.Command{setRet, setTTL, setQuota, setMaxP, setMaxC, setDedup}
	cmds = append(cmds, s.getRemove("retention", "retention", "/retention")...)
	cmds = append(cmds, s.getRemove("message-ttl", "message TTL", "/messageTTL")...)
	cmds = append(cmds, s.getRemove("max-producers", "producer limit", "/maxProducers")...)
	cmds = append(cmds, s.getRemove("max-consumers", "consumer limit", "/maxConsumers")...)
	cmds = append(cmds, s.getRemove("deduplication", "deduplication setting", "/deduplicationEnabled")...)
	getQ, _ := s.getRemove("backlog-quotas", "backlog quotas", "/backlogQuotaMap")[0], 0
	rmQ := s.cmd("remove-backlog-quota", "Remove the topic's backlog quota", func(p string) error {
		return a.write("DELETE", p+"/backlogQuota?backlogQuotaType=destination_storage", nil)
	})
	cmds = append(cmds, getQ, rmQ)
	return append(cmds, s.rateCmds()...)
}
