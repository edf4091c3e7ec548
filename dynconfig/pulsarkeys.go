package dynconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// kind is the Java type of a Pulsar configuration field, which decides
// the values an update may take.
type kind uint8

const (
	kBool   kind = iota // any value: Java's Boolean.valueOf ("true" in any case is true)
	kInt                // a Java int
	kLong               // a Java long
	kDouble             // a Java double
	kString             // any value
	kList               // a comma-separated list: any value
	kEnum               // one of spec.enum
)

// spec is one setting Pulsar marks dynamic (@FieldContext(dynamic =
// true) in its ServiceConfiguration): its name, its type and the
// minimum Pulsar declares (minValue; 0: none).
type spec struct {
	name string
	kind kind
	min  int64
}

// enums are the values of the enum-typed dynamic settings.
var enums = map[string][]string{
	"brokerDeleteInactiveTopicsMode":         {"delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"},
	"allowAutoTopicCreationType":             {"partitioned", "non-partitioned"},
	"loadBalancerServiceUnitTableViewSyncer": {"None", "MetadataStoreToSystemTopicSyncer", "SystemTopicToMetadataStoreSyncer"},
}

// check refuses a value Pulsar could not set the field to.
func (s spec) check(v string) error {
	switch s.kind {
	case kInt, kLong:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q: want a whole number", v)
		}
		if s.kind == kInt && (n > math.MaxInt32 || n < math.MinInt32) {
			return fmt.Errorf("%q: out of range", v)
		}
		if s.min != 0 && n < s.min {
			return fmt.Errorf("%d: must be at least %d", n, s.min)
		}
	case kDouble:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%q: want a number", v)
		}
	case kEnum:
		if !slices.ContainsFunc(enums[s.name], func(e string) bool { return strings.EqualFold(e, v) }) {
			return fmt.Errorf("%q: want one of %s", v, strings.Join(enums[s.name], ", "))
		}
	}
	return nil
}

// pulsarDynamic are the settings Pulsar marks dynamic, in the order of
// its ServiceConfiguration. Every one is accepted by Update (Pulsar
// stores any of them); docs/dynamic-config.md says which ones Magnetar
// reads and applies.
var pulsarDynamic = []spec{
	{name: "maxTenants", kind: kInt},
	{name: "failureDomainsEnabled", kind: kBool},
	{name: "brokerShutdownTimeoutMs", kind: kLong},
	{name: "skipBrokerShutdownOnOOM", kind: kBool},
	{name: "metadataSyncEventTopic", kind: kString},
	{name: "configurationMetadataSyncEventTopic", kind: kString},
	{name: "topicFactoryClassName", kind: kString},
	{name: "topicNameCacheMaxCapacity", kind: kInt},
	{name: "brokerDeleteInactiveTopicsEnabled", kind: kBool},
	{name: "brokerDeleteInactivePartitionedTopicMetadataEnabled", kind: kBool},
	{name: "brokerDeleteInactiveTopicsFrequencySeconds", kind: kInt, min: 1},
	{name: "brokerDeleteInactiveTopicsMode", kind: kEnum},
	{name: "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", kind: kInt},
	{name: "forceDeleteTenantAllowed", kind: kBool},
	{name: "forceDeleteNamespaceAllowed", kind: kBool},
	{name: "subscriptionRedeliveryTrackerEnabled", kind: kBool},
	{name: "subscriptionTypesEnabled", kind: kList},
	{name: "subscriptionKeySharedEnable", kind: kBool},
	{name: "subscriptionKeySharedUseClassicPersistentImplementation", kind: kBool},
	{name: "subscriptionSharedUseClassicPersistentImplementation", kind: kBool},
	{name: "defaultNumberOfNamespaceBundles", kind: kInt},
	{name: "maxNamespacesPerTenant", kind: kInt},
	{name: "maxTopicsPerNamespace", kind: kInt},
	{name: "isAllowAutoUpdateSchemaEnabled", kind: kBool},
	{name: "clientLibraryVersionCheckEnabled", kind: kBool},
	{name: "keySharedLookAheadMsgInReplayThresholdPerConsumer", kind: kInt},
	{name: "keySharedLookAheadMsgInReplayThresholdPerSubscription", kind: kInt},
	{name: "keySharedUnblockingIntervalMs", kind: kLong},
	{name: "unblockStuckSubscriptionEnabled", kind: kBool},
	{name: "topicPublisherThrottlingTickTimeMillis", kind: kInt},
	{name: "brokerPublisherThrottlingTickTimeMillis", kind: kInt},
	{name: "brokerPublisherThrottlingMaxMessageRate", kind: kInt},
	{name: "brokerPublisherThrottlingMaxByteRate", kind: kLong},
	{name: "dispatchThrottlingRateInMsg", kind: kInt},
	{name: "dispatchThrottlingRateInByte", kind: kLong},
	{name: "maxPublishRatePerTopicInMessages", kind: kInt},
	{name: "maxPublishRatePerTopicInBytes", kind: kLong},
	{name: "subscribeThrottlingRatePerConsumer", kind: kInt},
	{name: "subscribeRatePeriodPerConsumerInSecond", kind: kInt, min: 1},
	{name: "dispatchThrottlingRatePerTopicInMsg", kind: kInt},
	{name: "dispatchThrottlingRatePerTopicInByte", kind: kLong},
	{name: "dispatchThrottlingOnBatchMessageEnabled", kind: kBool},
	{name: "dispatchThrottlingRatePerSubscriptionInMsg", kind: kInt},
	{name: "dispatchThrottlingRatePerSubscriptionInByte", kind: kLong},
	{name: "dispatchThrottlingRatePerReplicatorInMsg", kind: kInt},
	{name: "dispatchThrottlingRatePerReplicatorInByte", kind: kLong},
	{name: "dispatchThrottlingRateRelativeToPublishRate", kind: kBool},
	{name: "dispatchThrottlingOnNonBacklogConsumerEnabled", kind: kBool},
	{name: "resourceUsageTransportPublishIntervalInSecs", kind: kInt},
	{name: "dispatcherMaxReadBatchSize", kind: kInt},
	{name: "dispatcherDispatchMessagesInSubscriptionThread", kind: kBool},
	{name: "dispatcherMaxReadSizeBytes", kind: kInt},
	{name: "dispatcherMinReadBatchSize", kind: kInt},
	{name: "dispatcherReadFailureBackoffInitialTimeInMs", kind: kInt},
	{name: "dispatcherReadFailureBackoffMaxTimeInMs", kind: kInt},
	{name: "dispatcherReadFailureBackoffMandatoryStopTimeInMs", kind: kInt},
	{name: "dispatcherEntryFilterRescheduledMessageDelay", kind: kInt},
	{name: "dispatcherMaxRoundRobinBatchSize", kind: kInt},
	{name: "preciseDispatcherFlowControl", kind: kBool},
	{name: "entryFilterNames", kind: kList},
	{name: "entryFiltersDirectory", kind: kString},
	{name: "allowOverrideEntryFilters", kind: kBool},
	{name: "maxConcurrentLookupRequest", kind: kInt},
	{name: "maxConcurrentTopicLoadRequest", kind: kInt},
	{name: "replicationStartAt", kind: kString},
	{name: "maxMessagePublishBufferSizeInMB", kind: kInt},
	{name: "maxNumPartitionsPerPartitionedTopic", kind: kInt},
	{name: "superUserRoles", kind: kList},
	{name: "httpRequestsFailOnUnknownPropertiesEnabled", kind: kBool},
	{name: "bookkeeperUseV2WireProtocol", kind: kBool},
	{name: "managedLedgerCacheSizeMB", kind: kInt},
	{name: "managedLedgerCacheEvictionWatermark", kind: kDouble},
	{name: "managedLedgerCacheEvictionTimeThresholdMillis", kind: kLong},
	{name: "allowAutoTopicCreation", kind: kBool},
	{name: "allowAutoTopicCreationType", kind: kEnum},
	{name: "allowAutoTopicCreationWithLegacyNamingScheme", kind: kBool},
	{name: "allowAutoSubscriptionCreation", kind: kBool},
	{name: "defaultNumPartitions", kind: kInt},
	{name: "managedLedgerCursorResetLedgerCloseTimestampMaxClockSkewMillis", kind: kInt},
	{name: "dispatcherPauseOnAckStatePersistentEnabled", kind: kBool},
	{name: "autoSkipNonRecoverableData", kind: kBool},
	{name: "managedLedgerForceRecovery", kind: kBool},
	{name: "schemaLedgerForceRecovery", kind: kBool},
	{name: "managedLedgerTraceTaskExecution", kind: kBool},
	{name: "managedLedgerMinimumBacklogCursorsForCaching", kind: kInt},
	{name: "managedLedgerMinimumBacklogEntriesForCaching", kind: kInt},
	{name: "managedLedgerMaxBacklogBetweenCursorsForCaching", kind: kInt},
	{name: "loadBalancerLoadSheddingStrategy", kind: kString},
	{name: "loadBalancerReportUpdateThresholdPercentage", kind: kInt},
	{name: "loadBalancerReportUpdateMinIntervalMillis", kind: kInt},
	{name: "loadBalancerReportUpdateMaxIntervalMinutes", kind: kInt},
	{name: "loadBalancerHostUsageCheckIntervalMinutes", kind: kInt},
	{name: "loadBalancerSheddingEnabled", kind: kBool},
	{name: "loadBalancerSheddingIntervalMinutes", kind: kInt},
	{name: "loadBalancerDistributeBundlesEvenlyEnabled", kind: kBool},
	{name: "loadBalancerSheddingGracePeriodMinutes", kind: kLong},
	{name: "loadBalancerBrokerMaxTopics", kind: kInt},
	{name: "loadBalancerBrokerOverloadedThresholdPercentage", kind: kInt},
	{name: "loadBalancerBrokerThresholdShedderPercentage", kind: kInt},
	{name: "loadBalancerAverageResourceUsageDifferenceThresholdPercentage", kind: kInt},
	{name: "flowOrQpsDifferenceThresholdPercentage", kind: kInt},
	{name: "loadBalancerAvgShedderLowThreshold", kind: kInt},
	{name: "loadBalancerAvgShedderHighThreshold", kind: kInt},
	{name: "loadBalancerAvgShedderHitCountLowThreshold", kind: kInt},
	{name: "loadBalancerAvgShedderHitCountHighThreshold", kind: kInt},
	{name: "minUnloadMessage", kind: kInt},
	{name: "minUnloadMessageThroughput", kind: kInt},
	{name: "maxUnloadPercentage", kind: kDouble},
	{name: "atLeastOneBundleSelected", kind: kBool},
	{name: "loadBalancerMsgRateDifferenceShedderThreshold", kind: kDouble},
	{name: "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", kind: kDouble},
	{name: "maxUnloadBundleNumPerShedding", kind: kInt},
	{name: "loadBalancerHistoryResourcePercentage", kind: kDouble},
	{name: "loadBalancerBandwidthInResourceWeight", kind: kDouble},
	{name: "loadBalancerBandwidthOutResourceWeight", kind: kDouble},
	{name: "loadBalancerBandwithInResourceWeight", kind: kDouble},
	{name: "loadBalancerBandwithOutResourceWeight", kind: kDouble},
	{name: "loadBalancerCPUResourceWeight", kind: kDouble},
	{name: "loadBalancerMemoryResourceWeight", kind: kDouble},
	{name: "loadBalancerDirectMemoryResourceWeight", kind: kDouble},
	{name: "loadBalancerBundleUnloadMinThroughputThreshold", kind: kDouble},
	{name: "loadBalancerAutoBundleSplitEnabled", kind: kBool},
	{name: "loadBalancerAutoUnloadSplitBundlesEnabled", kind: kBool},
	{name: "loadBalancerNamespaceBundleMaxTopics", kind: kInt},
	{name: "loadBalancerNamespaceBundleMaxSessions", kind: kInt},
	{name: "loadBalancerNamespaceBundleMaxMsgRate", kind: kInt},
	{name: "loadBalancerNamespaceBundleMaxBandwidthMbytes", kind: kInt},
	{name: "loadBalancerNamespaceMaximumBundles", kind: kInt},
	{name: "loadManagerClassName", kind: kString},
	{name: "supportedNamespaceBundleSplitAlgorithms", kind: kList},
	{name: "defaultNamespaceBundleSplitAlgorithm", kind: kString},
	{name: "namespaceBundleUnloadingTimeoutMs", kind: kLong},
	{name: "loadBalancerDebugModeEnabled", kind: kBool},
	{name: "loadBalancerBrokerLoadTargetStd", kind: kDouble},
	{name: "loadBalancerSheddingConditionHitCountThreshold", kind: kInt},
	{name: "loadBalancerTransferEnabled", kind: kBool},
	{name: "loadBalancerMaxNumberOfBrokerSheddingPerCycle", kind: kInt},
	{name: "loadBalanceSheddingDelayInSeconds", kind: kLong},
	{name: "loadBalancerBrokerLoadDataTTLInSeconds", kind: kLong},
	{name: "loadBalancerMaxNumberOfBundlesInBundleLoadReport", kind: kInt},
	{name: "loadBalancerMaxNumberOfBundlesToSplitPerCycle", kind: kInt},
	{name: "loadBalancerNamespaceBundleSplitConditionHitCountThreshold", kind: kInt},
	{name: "loadBalancerSheddingBundlesWithPoliciesEnabled", kind: kBool},
	{name: "loadBalancerServiceUnitTableViewSyncer", kind: kEnum},
	{name: "loadBalancerServiceUnitStateMaxConcurrentOverrides", kind: kInt},
	{name: "replicationProducerQueueSize", kind: kInt},
	{name: "preferLaterVersions", kind: kBool},
	{name: "exposeBundlesMetricsInPrometheus", kind: kBool},
	{name: "managedLedgerInactiveLedgerRolloverTimeSeconds", kind: kInt},
	{name: "transactionLogBatchedWriteEnabled", kind: kBool},
	{name: "transactionPendingAckBatchedWriteEnabled", kind: kBool},
	{name: "brokerClientAuthenticationPlugin", kind: kString},
	{name: "brokerClientAuthenticationParameters", kind: kString},
	{name: "brokerClientTlsEnabled", kind: kBool},
}

func specOf(name string) (spec, bool) {
	i := slices.IndexFunc(pulsarDynamic, func(s spec) bool { return s.name == name })
	if i < 0 {
		return spec{}, false
	}
	return pulsarDynamic[i], true
}
