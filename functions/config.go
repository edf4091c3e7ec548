package functions

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Kind is what a deployment is: a function, a source or a sink. The three
// share the worker, the runtime and the REST shape; they differ in their
// configuration type and in which side of the instance is external.
type Kind string

const (
	KindFunction Kind = "functions"
	KindSource   Kind = "sources"
	KindSink     Kind = "sinks"
)

// Processing guarantees (Pulsar's ProcessingGuarantees enum, as JSON).
const (
	AtLeastOnce     = "ATLEAST_ONCE"
	AtMostOnce      = "ATMOST_ONCE"
	EffectivelyOnce = "EFFECTIVELY_ONCE"
	Manual          = "MANUAL"
)

// Resources is Pulsar's Resources: cpu (cores), ram and disk (bytes).
type Resources struct {
	CPU  float64 `json:"cpu,omitempty"`
	RAM  int64   `json:"ram,omitempty"`
	Disk int64   `json:"disk,omitempty"`
}

// ConsumerConfig is one entry of inputSpecs.
type ConsumerConfig struct {
	SchemaType        string            `json:"schemaType,omitempty"`
	SerdeClassName    string            `json:"serdeClassName,omitempty"`
	IsRegexPattern    bool              `json:"regexPattern,omitempty"`
	ReceiverQueueSize *int              `json:"receiverQueueSize,omitempty"`
	ConsumerProps     map[string]string `json:"consumerProperties,omitempty"`
}

// FunctionConfig carries Pulsar's FunctionConfig JSON field names. Fields
// Magnetar has no use for (Java/Python class names, serde classes) are
// kept and echoed back so a pulsar-admin round trip loses nothing.
type FunctionConfig struct {
	Tenant                       string                    `json:"tenant"`
	Namespace                    string                    `json:"namespace"`
	Name                         string                    `json:"name"`
	ClassName                    string                    `json:"className,omitempty"`
	Inputs                       []string                  `json:"inputs,omitempty"`
	CustomSerdeInputs            map[string]string         `json:"customSerdeInputs,omitempty"`
	TopicsPattern                string                    `json:"topicsPattern,omitempty"`
	CustomSchemaInputs           map[string]string         `json:"customSchemaInputs,omitempty"`
	InputSpecs                   map[string]ConsumerConfig `json:"inputSpecs,omitempty"`
	Output                       string                    `json:"output,omitempty"`
	OutputSchemaType             string                    `json:"outputSchemaType,omitempty"`
	OutputSerdeClassName         string                    `json:"outputSerdeClassName,omitempty"`
	LogTopic                     string                    `json:"logTopic,omitempty"`
	ProcessingGuarantees         string                    `json:"processingGuarantees,omitempty"`
	RetainOrdering               *bool                     `json:"retainOrdering,omitempty"`
	RetainKeyOrdering            *bool                     `json:"retainKeyOrdering,omitempty"`
	ForwardSourceMessageProperty *bool                     `json:"forwardSourceMessageProperty,omitempty"`
	UserConfig                   map[string]any            `json:"userConfig,omitempty"`
	Secrets                      map[string]any            `json:"secrets,omitempty"`
	Runtime                      string                    `json:"runtime,omitempty"`
	AutoAck                      *bool                     `json:"autoAck,omitempty"`
	MaxMessageRetries            *int                      `json:"maxMessageRetries,omitempty"`
	DeadLetterTopic              string                    `json:"deadLetterTopic,omitempty"`
	SubName                      string                    `json:"subName,omitempty"`
	Parallelism                  *int                      `json:"parallelism,omitempty"`
	Resources                    *Resources                `json:"resources,omitempty"`
	FQFN                         string                    `json:"fqfn,omitempty"`
	TimeoutMs                    *int64                    `json:"timeoutMs,omitempty"`
	Jar                          string                    `json:"jar,omitempty"`
	Py                           string                    `json:"py,omitempty"`
	Go                           string                    `json:"go,omitempty"`
	RuntimeFlags                 string                    `json:"runtimeFlags,omitempty"`
	CleanupSubscription          *bool                     `json:"cleanupSubscription,omitempty"`
	SubscriptionPosition         string                    `json:"subscriptionPosition,omitempty"`
	CustomRuntimeOptions         string                    `json:"customRuntimeOptions,omitempty"`
}

// SourceConfig carries Pulsar's SourceConfig JSON field names.
type SourceConfig struct {
	Tenant               string         `json:"tenant"`
	Namespace            string         `json:"namespace"`
	Name                 string         `json:"name"`
	ClassName            string         `json:"className,omitempty"`
	TopicName            string         `json:"topicName,omitempty"`
	SerdeClassName       string         `json:"serdeClassName,omitempty"`
	SchemaType           string         `json:"schemaType,omitempty"`
	Configs              map[string]any `json:"configs,omitempty"`
	Secrets              map[string]any `json:"secrets,omitempty"`
	Parallelism          *int           `json:"parallelism,omitempty"`
	ProcessingGuarantees string         `json:"processingGuarantees,omitempty"`
	Resources            *Resources     `json:"resources,omitempty"`
	Archive              string         `json:"archive,omitempty"`
	RuntimeFlags         string         `json:"runtimeFlags,omitempty"`
	CustomRuntimeOptions string         `json:"customRuntimeOptions,omitempty"`
}

// SinkConfig carries Pulsar's SinkConfig JSON field names.
type SinkConfig struct {
	Tenant                       string                    `json:"tenant"`
	Namespace                    string                    `json:"namespace"`
	Name                         string                    `json:"name"`
	ClassName                    string                    `json:"className,omitempty"`
	SourceSubscriptionName       string                    `json:"sourceSubscriptionName,omitempty"`
	SourceSubscriptionPosition   string                    `json:"sourceSubscriptionPosition,omitempty"`
	Inputs                       []string                  `json:"inputs,omitempty"`
	TopicToSerdeClassName        map[string]string         `json:"topicToSerdeClassName,omitempty"`
	TopicsPattern                string                    `json:"topicsPattern,omitempty"`
	TopicToSchemaType            map[string]string         `json:"topicToSchemaType,omitempty"`
	InputSpecs                   map[string]ConsumerConfig `json:"inputSpecs,omitempty"`
	MaxMessageRetries            *int                      `json:"maxMessageRetries,omitempty"`
	DeadLetterTopic              string                    `json:"deadLetterTopic,omitempty"`
	Configs                      map[string]any            `json:"configs,omitempty"`
	Secrets                      map[string]any            `json:"secrets,omitempty"`
	Parallelism                  *int                      `json:"parallelism,omitempty"`
	ProcessingGuarantees         string                    `json:"processingGuarantees,omitempty"`
	RetainOrdering               *bool                     `json:"retainOrdering,omitempty"`
	Resources                    *Resources                `json:"resources,omitempty"`
	AutoAck                      *bool                     `json:"autoAck,omitempty"`
	TimeoutMs                    *int64                    `json:"timeoutMs,omitempty"`
	NegativeAckRedeliveryDelayMs *int64                    `json:"negativeAckRedeliveryDelayMs,omitempty"`
	Archive                      string                    `json:"archive,omitempty"`
	CleanupSubscription          *bool                     `json:"cleanupSubscription,omitempty"`
	RuntimeFlags                 string                    `json:"runtimeFlags,omitempty"`
}

// Spec is the runtime's view of any of the three configurations: what an
// instance needs to run. It is also the JSON handed to the child process
// (MAGNETAR_FUNCTION_SPEC), so its fields are part of the SDK's contract.
type Spec struct {
	Kind                 Kind              `json:"kind"`
	Tenant               string            `json:"tenant"`
	Namespace            string            `json:"namespace"`
	Name                 string            `json:"name"`
	Inputs               []string          `json:"inputs,omitempty"`
	TopicsPattern        string            `json:"topicsPattern,omitempty"`
	Output               string            `json:"output,omitempty"`
	LogTopic             string            `json:"logTopic,omitempty"`
	DeadLetterTopic      string            `json:"deadLetterTopic,omitempty"`
	MaxMessageRetries    int               `json:"maxMessageRetries"`
	SubName              string            `json:"subName"`
	SubscriptionType     string            `json:"subscriptionType"` // Shared or Failover
	SubscriptionPosition string            `json:"subscriptionPosition,omitempty"`
	ProcessingGuarantees string            `json:"processingGuarantees"`
	AutoAck              bool              `json:"autoAck"`
	UserConfig           map[string]any    `json:"userConfig,omitempty"`
	Secrets              map[string]any    `json:"secrets,omitempty"`
	Parallelism          int               `json:"parallelism"`
	Resources            Resources         `json:"resources"`
	TimeoutMs            int64             `json:"timeoutMs,omitempty"`
	Package              string            `json:"package,omitempty"` // builtin://NAME or a stored package
	Properties           map[string]string `json:"properties,omitempty"`
}

// FQFN is tenant/namespace/name.
func (s *Spec) FQFN() string { return s.Tenant + "/" + s.Namespace + "/" + s.Name }

var nameRe = regexp.MustCompile(`^[-=:.\w]+$`)

// ErrBadConfig wraps every validation failure (HTTP 400).
var ErrBadConfig = errors.New("invalid config")

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
}

// MaxParallelism bounds parallelism: every instance is a process.
const MaxParallelism = 1024

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// qualify turns a short topic name into persistent://tenant/ns/name.
func qualify(topic, tenant, ns string) string {
	if topic == "" || strings.Contains(topic, "://") {
		return topic
	}
	parts := strings.Split(topic, "/")
	switch len(parts) {
	case 1:
		return "persistent://" + tenant + "/" + ns + "/" + topic
	case 3:
		return "persistent://" + topic
	}
	return topic
}

func validateCommon(kind Kind, tenant, ns, name, guarantee string, parallelism int, res *Resources) error {
	for _, f := range []struct{ k, v string }{{"tenant", tenant}, {"namespace", ns}, {"name", name}} {
		if f.v == "" {
			return badf("%s %s is required", strings.TrimSuffix(string(kind), "s"), f.k)
		}
		if !nameRe.MatchString(f.v) {
			return badf("%s %q has characters outside [-=:.\\w]", f.k, f.v)
		}
	}
	switch guarantee {
	case AtLeastOnce, AtMostOnce, EffectivelyOnce:
	case Manual:
		return badf("processingGuarantees MANUAL is not supported; use ATLEAST_ONCE, ATMOST_ONCE or EFFECTIVELY_ONCE")
	default:
		return badf("processingGuarantees %q: want ATLEAST_ONCE, ATMOST_ONCE or EFFECTIVELY_ONCE", guarantee)
	}
	if parallelism < 1 || parallelism > MaxParallelism {
		return badf("parallelism %d: want 1..%d", parallelism, MaxParallelism)
	}
	if res != nil && (res.CPU < 0 || res.RAM < 0 || res.Disk < 0) {
		return badf("resources must not be negative")
	}
	return nil
}

// Spec validates c and turns it into the runtime spec.
func (c *FunctionConfig) Spec() (*Spec, error) {
	s := &Spec{Kind: KindFunction, Tenant: c.Tenant, Namespace: c.Namespace, Name: c.Name,
		ProcessingGuarantees: c.ProcessingGuarantees, Parallelism: deref(c.Parallelism, 1),
		MaxMessageRetries: deref(c.MaxMessageRetries, 0), AutoAck: deref(c.AutoAck, true),
		UserConfig: c.UserConfig, Secrets: c.Secrets, TimeoutMs: deref(c.TimeoutMs, 0),
		SubscriptionPosition: c.SubscriptionPosition}
	if s.ProcessingGuarantees == "" {
		s.ProcessingGuarantees = AtLeastOnce
	}
	if err := validateCommon(KindFunction, c.Tenant, c.Namespace, c.Name, s.ProcessingGuarantees, s.Parallelism, c.Resources); err != nil {
		return nil, err
	}
	inputs := append([]string(nil), c.Inputs...)
	for t := range c.CustomSerdeInputs {
		inputs = append(inputs, t)
	}
	for t := range c.CustomSchemaInputs {
		inputs = append(inputs, t)
	}
	pattern := c.TopicsPattern
	for t, spec := range c.InputSpecs {
		if spec.IsRegexPattern {
			if pattern != "" {
				return nil, badf("only one topics pattern is supported")
			}
			pattern = t
			continue
		}
		inputs = append(inputs, t)
	}
	return finishSpec(s, inputs, pattern, c.Output, c.LogTopic, c.DeadLetterTopic, c.SubName,
		deref(c.RetainOrdering, false) || deref(c.RetainKeyOrdering, false), c.Resources)
}

func finishSpec(s *Spec, inputs []string, pattern, output, logTopic, dlq, sub string, ordered bool, res *Resources) (*Spec, error) {
	seen := map[string]bool{}
	for _, in := range inputs {
		q := qualify(in, s.Tenant, s.Namespace)
		if !seen[q] {
			seen[q] = true
			s.Inputs = append(s.Inputs, q)
		}
	}
	if pattern != "" {
		if _, err := regexp.Compile(pattern); err != nil {
			return nil, badf("topicsPattern %q: %v", pattern, err)
		}
		s.TopicsPattern = qualify(pattern, s.Tenant, s.Namespace)
	}
	if s.Kind != KindSource && len(s.Inputs) == 0 && s.TopicsPattern == "" {
		return nil, badf("no input topic: set inputs, topicsPattern or inputSpecs")
	}
	s.Output = qualify(output, s.Tenant, s.Namespace)
	s.LogTopic = qualify(logTopic, s.Tenant, s.Namespace)
	s.DeadLetterTopic = qualify(dlq, s.Tenant, s.Namespace)
	if s.Output != "" && seen[s.Output] {
		return nil, badf("output topic %s is also an input", s.Output)
	}
	if s.MaxMessageRetries < 0 {
		return nil, badf("maxMessageRetries %d must not be negative", s.MaxMessageRetries)
	}
	if s.DeadLetterTopic != "" && s.MaxMessageRetries == 0 {
		// Pulsar sends to the dead-letter topic after maxMessageRetries
		// redeliveries; with none configured, one retry.
		s.MaxMessageRetries = 1
	}
	switch s.SubscriptionPosition {
	case "", "Latest", "Earliest":
	default:
		return nil, badf("subscriptionPosition %q: want Latest or Earliest", s.SubscriptionPosition)
	}
	s.SubName = sub
	if s.SubName == "" {
		s.SubName = s.FQFN()
	}
	// EFFECTIVELY_ONCE and retained ordering need one consumer at a time
	// per partition (Failover); otherwise instances share the input.
	s.SubscriptionType = "Shared"
	if ordered || s.ProcessingGuarantees == EffectivelyOnce {
		s.SubscriptionType = "Failover"
	}
	if res != nil {
		s.Resources = *res
	}
	return s, nil
}

// Spec validates c and turns it into the runtime spec.
func (c *SourceConfig) Spec() (*Spec, error) {
	s := &Spec{Kind: KindSource, Tenant: c.Tenant, Namespace: c.Namespace, Name: c.Name,
		ProcessingGuarantees: c.ProcessingGuarantees, Parallelism: deref(c.Parallelism, 1),
		UserConfig: c.Configs, Secrets: c.Secrets, AutoAck: true, Package: c.Archive}
	if s.ProcessingGuarantees == "" {
		s.ProcessingGuarantees = AtLeastOnce
	}
	if err := validateCommon(KindSource, c.Tenant, c.Namespace, c.Name, s.ProcessingGuarantees, s.Parallelism, c.Resources); err != nil {
		return nil, err
	}
	if c.TopicName == "" {
		return nil, badf("source topicName is required")
	}
	return finishSpec(s, nil, "", c.TopicName, "", "", "", false, c.Resources)
}

// Spec validates c and turns it into the runtime spec.
func (c *SinkConfig) Spec() (*Spec, error) {
	s := &Spec{Kind: KindSink, Tenant: c.Tenant, Namespace: c.Namespace, Name: c.Name,
		ProcessingGuarantees: c.ProcessingGuarantees, Parallelism: deref(c.Parallelism, 1),
		MaxMessageRetries: deref(c.MaxMessageRetries, 0), AutoAck: deref(c.AutoAck, true),
		UserConfig: c.Configs, Secrets: c.Secrets, TimeoutMs: deref(c.TimeoutMs, 0),
		SubscriptionPosition: c.SourceSubscriptionPosition, Package: c.Archive}
	if s.ProcessingGuarantees == "" {
		s.ProcessingGuarantees = AtLeastOnce
	}
	if err := validateCommon(KindSink, c.Tenant, c.Namespace, c.Name, s.ProcessingGuarantees, s.Parallelism, c.Resources); err != nil {
		return nil, err
	}
	inputs := append([]string(nil), c.Inputs...)
	for t := range c.TopicToSerdeClassName {
		inputs = append(inputs, t)
	}
	for t := range c.TopicToSchemaType {
		inputs = append(inputs, t)
	}
	pattern := c.TopicsPattern
	for t, spec := range c.InputSpecs {
		if spec.IsRegexPattern {
			pattern = t
			continue
		}
		inputs = append(inputs, t)
	}
	return finishSpec(s, inputs, pattern, "", "", c.DeadLetterTopic, c.SourceSubscriptionName, deref(c.RetainOrdering, false), c.Resources)
}
