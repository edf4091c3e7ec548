package broker

// The broker's administration surface is four role objects, each a small
// value over the broker with the methods of one or two of the role
// interfaces package admin declares (admin/roles.go), so that *Broker
// itself keeps the core's own methods (start, stop, features, topics as
// the features see them). The methods are those of service.go: topic
// names are anything ParseTopicName accepts, errors wrap the package's
// sentinels, and every method is safe for concurrent use.

// TopicAdmin creates, lists, deletes topics and edits their properties
// (admin.Topics, admin.TopicProperties).
type TopicAdmin struct{ b *Broker }

// TopicReader reads a topic's stats, state and entries
// (admin.TopicReads).
type TopicReader struct{ b *Broker }

// TopicLifecycle unloads and terminates topics (admin.TopicLifecycle).
type TopicLifecycle struct{ b *Broker }

// SubscriptionAdmin manages a topic's subscriptions
// (admin.Subscriptions).
type SubscriptionAdmin struct{ b *Broker }

// Node is the serving broker and its cluster as the API reports them:
// name, advertised URLs, bookies, policy store and defaults (admin.Node).
type Node struct{ b *Broker }

// Ownership is the broker in its cluster: lookups, bundles' loaded
// topics, readiness and health (admin.Ownership).
type Ownership struct{ b *Broker }

// TopicAdmin returns the broker's topic administration.
func (b *Broker) TopicAdmin() TopicAdmin { return TopicAdmin{b} }

// TopicReader returns the broker's topic reads.
func (b *Broker) TopicReader() TopicReader { return TopicReader{b} }

// TopicLifecycle returns the broker's topic unload and termination.
func (b *Broker) TopicLifecycle() TopicLifecycle { return TopicLifecycle{b} }

// SubscriptionAdmin returns the broker's subscription administration.
func (b *Broker) SubscriptionAdmin() SubscriptionAdmin { return SubscriptionAdmin{b} }

// Node returns the broker as its node: name, URLs, bookies, policies.
func (b *Broker) Node() Node { return Node{b} }

// Ownership returns the broker's ownership, lookups and health.
func (b *Broker) Ownership() Ownership { return Ownership{b} }
