package broker

import (
	"fmt"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// topicName is a canonical topic name (see pulsarproto.ParseTopicName).
type topicName = pulsarproto.TopicName

// parseTopicName canonicalises a topic name as Pulsar does ("x" means
// persistent://public/default/x). Every topic name a client sends goes
// through it.
func parseTopicName(s string) (topicName, error) {
	tn, err := pulsarproto.ParseTopicName(s)
	if err != nil {
		return tn, fmt.Errorf("%w: %w", ErrInvalidTopicName, err)
	}
	return tn, nil
}

// ParseTopicName canonicalises a topic name as the broker does (for
// packages that key data by topic, such as topic-level policies).
func ParseTopicName(s string) (pulsarproto.TopicName, error) { return parseTopicName(s) }
