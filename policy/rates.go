package policy

import (
	"errors"
	"fmt"
	"math"
)

// PublishRate bounds what the producers of one topic may publish per
// second (0 or -1 in a field: that dimension is unlimited), as Pulsar's
// PublishRate.
type PublishRate struct {
	PublishThrottlingRateInMsg  int   `json:"publishThrottlingRateInMsg"`
	PublishThrottlingRateInByte int64 `json:"publishThrottlingRateInByte"`
}

// Validate refuses values below -1.
func (p PublishRate) Validate() error {
	if p.PublishThrottlingRateInMsg < -1 || p.PublishThrottlingRateInByte < -1 {
		return errors.New("publish rates must be >= -1")
	}
	if p.PublishThrottlingRateInMsg > MaxInt32Value {
		return fmt.Errorf("publishThrottlingRateInMsg %d is above %d", p.PublishThrottlingRateInMsg, MaxInt32Value)
	}
	return nil
}

// Enabled reports whether either dimension is limited.
func (p PublishRate) Enabled() bool {
	return p.PublishThrottlingRateInMsg > 0 || p.PublishThrottlingRateInByte > 0
}

// DispatchRate bounds what a topic (or each of its subscriptions)
// dispatches per RatePeriodInSecond (default 1), as Pulsar's DispatchRate.
// A field <= 0 leaves that dimension unlimited. With
// RelativeToPublishRate the limits are added to the topic's current
// publish rate.
type DispatchRate struct {
	DispatchThrottlingRateInMsg  int   `json:"dispatchThrottlingRateInMsg"`
	DispatchThrottlingRateInByte int64 `json:"dispatchThrottlingRateInByte"`
	RelativeToPublishRate        bool  `json:"relativeToPublishRate"`
	RatePeriodInSecond           int   `json:"ratePeriodInSecond"`
}

// Normalize fills the default period and refuses bad values.
func (d *DispatchRate) Normalize() error {
	if d.RatePeriodInSecond == 0 {
		d.RatePeriodInSecond = 1
	}
	switch {
	case d.DispatchThrottlingRateInMsg < -1 || d.DispatchThrottlingRateInByte < -1:
		return errors.New("dispatch rates must be >= -1")
	case d.RatePeriodInSecond < 1 || d.RatePeriodInSecond > 86400:
		return fmt.Errorf("ratePeriodInSecond %d must be between 1 and 86400", d.RatePeriodInSecond)
	case d.DispatchThrottlingRateInMsg > MaxInt32Value:
		return fmt.Errorf("dispatchThrottlingRateInMsg %d is above %d", d.DispatchThrottlingRateInMsg, MaxInt32Value)
	}
	return nil
}

// Enabled reports whether either dimension is limited.
func (d DispatchRate) Enabled() bool {
	return d.DispatchThrottlingRateInMsg > 0 || d.DispatchThrottlingRateInByte > 0
}

// PerSecond returns the limits per second (0: unlimited).
func (d DispatchRate) PerSecond() (msgs, bytes float64) {
	period := float64(max(d.RatePeriodInSecond, 1))
	if d.DispatchThrottlingRateInMsg > 0 {
		msgs = float64(d.DispatchThrottlingRateInMsg) / period
	}
	if d.DispatchThrottlingRateInByte > 0 {
		bytes = float64(d.DispatchThrottlingRateInByte) / period
	}
	return msgs, bytes
}

// SubscribeRate bounds how many SUBSCRIBEs one consumer (by name and
// client address) may make per RatePeriodInSecond (default 30), as
// Pulsar's SubscribeRate. 0 or -1: unlimited.
type SubscribeRate struct {
	SubscribeThrottlingRatePerConsumer int `json:"subscribeThrottlingRatePerConsumer"`
	RatePeriodInSecond                 int `json:"ratePeriodInSecond"`
}

// Normalize fills the default period and refuses bad values.
func (s *SubscribeRate) Normalize() error {
	if s.RatePeriodInSecond == 0 {
		s.RatePeriodInSecond = 30
	}
	switch {
	case s.SubscribeThrottlingRatePerConsumer < -1:
		return errors.New("subscribeThrottlingRatePerConsumer must be >= -1")
	case s.RatePeriodInSecond < 1 || s.RatePeriodInSecond > 86400:
		return fmt.Errorf("ratePeriodInSecond %d must be between 1 and 86400", s.RatePeriodInSecond)
	}
	return nil
}

// Enabled reports whether subscribes are limited.
func (s SubscribeRate) Enabled() bool { return s.SubscribeThrottlingRatePerConsumer > 0 }

// Inactive topic delete modes (InactiveTopicPolicies.InactiveTopicDeleteMode).
const (
	// DeleteWhenNoSubscriptions deletes an inactive topic that has no
	// subscriptions.
	DeleteWhenNoSubscriptions = "delete_when_no_subscriptions"
	// DeleteWhenSubscriptionsCaughtUp deletes an inactive topic whose
	// subscriptions have no backlog.
	DeleteWhenSubscriptionsCaughtUp = "delete_when_subscriptions_caught_up"
)

// InactiveTopicPolicies says when a topic without producers and
// consumers is deleted, as Pulsar's inactive_topic_policies.
type InactiveTopicPolicies struct {
	InactiveTopicDeleteMode    string `json:"inactiveTopicDeleteMode"`
	MaxInactiveDurationSeconds int    `json:"maxInactiveDurationSeconds"`
	DeleteWhileInactive        bool   `json:"deleteWhileInactive"`
}

// Normalize fills the default mode and refuses bad values.
func (p *InactiveTopicPolicies) Normalize() error {
	switch p.InactiveTopicDeleteMode {
	case "":
		p.InactiveTopicDeleteMode = DeleteWhenNoSubscriptions
	case DeleteWhenNoSubscriptions, DeleteWhenSubscriptionsCaughtUp:
	default:
		return fmt.Errorf("inactiveTopicDeleteMode must be %s or %s", DeleteWhenNoSubscriptions, DeleteWhenSubscriptionsCaughtUp)
	}
	if p.MaxInactiveDurationSeconds < 0 || p.MaxInactiveDurationSeconds > MaxInt32Value {
		return fmt.Errorf("maxInactiveDurationSeconds %d must be between 0 and %d", p.MaxInactiveDurationSeconds, MaxInt32Value)
	}
	return nil
}

// clusterValue returns m[cluster], or the only value of m when it has no
// entry for cluster (documents written with another cluster name).
func clusterValue[V any](m map[string]V, cluster string) (V, bool) {
	if v, ok := m[cluster]; ok {
		return v, true
	}
	var zero V
	if len(m) == 1 {
		for _, v := range m {
			return v, true
		}
	}
	return zero, false
}

// Nonneg32 checks a policy integer against Pulsar's int range.
func Nonneg32(n int64) error {
	if n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("value %d must be between 0 and %d", n, math.MaxInt32)
	}
	return nil
}
