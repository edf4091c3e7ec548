package broker

import (
	"context"
	"errors"

	"github.com/magnetar-mq/magnetar/schema"
)

// SchemaService is the schema registry as the admin API sees it. Errors
// wrapping schema.ErrIncompatible are refusals (HTTP 409), ErrInvalid a
// malformed schema (HTTP 422).
type SchemaService interface {
	// Schema returns version (latest if < 0) of a topic's schema.
	Schema(ctx context.Context, topic string, version int64) (SchemaInfo, bool, error)
	// Schemas returns the live versions, oldest first.
	Schemas(ctx context.Context, topic string) ([]SchemaInfo, error)
	// CreateSchema registers s (or finds an equal live version) under the
	// topic's compatibility strategy and returns its version.
	CreateSchema(ctx context.Context, topic string, s SchemaInfo) (int64, error)
	// TestSchema reports whether s would be accepted, and the strategy.
	TestSchema(ctx context.Context, topic string, s SchemaInfo) (string, error)
	// SchemaVersion returns the live version equal to s (found false if
	// none).
	SchemaVersion(ctx context.Context, topic string, s SchemaInfo) (int64, bool, error)
	// DeleteSchema deletes the topic's schema (a deletion marker; the
	// next schema starts a new history). It returns the marker's version.
	DeleteSchema(ctx context.Context, topic string) (int64, error)
	// TopicSchemaStrategy returns the topic's compatibility strategy
	// override ("" if none) and the strategy in effect.
	TopicSchemaStrategy(ctx context.Context, topic string) (override, effective string, err error)
	// SetTopicSchemaStrategy sets the override ("" removes it).
	SetTopicSchemaStrategy(ctx context.Context, topic, strategy string) error
}

// SchemaInfo is one schema version of a topic.
type SchemaInfo struct {
	// Version is the version's number (ignored by CreateSchema).
	Version int64
	// Type is the Pulsar schema type (pb.Schema_Type value).
	Type       int32
	Data       []byte
	Properties map[string]string
	// Timestamp is when the version was registered (Unix ms).
	Timestamp int64
}

func (si SchemaInfo) info() schema.Info {
	props := si.Properties
	if len(props) == 0 {
		props = nil
	}
	return schema.Info{Type: si.Type, Data: si.Data, Properties: props}
}

func entryInfo(e schemaEntry, v int) SchemaInfo {
	return SchemaInfo{Version: int64(v), Type: e.Type, Data: e.Data, Properties: e.Properties, Timestamp: e.Timestamp}
}

// Schema implements Service.
func (b *Broker) Schema(ctx context.Context, topic string, version int64) (SchemaInfo, bool, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return SchemaInfo{}, false, err
	}
	e, v, found, err := b.schemas.get(ctx, tn, version)
	if err != nil || !found {
		return SchemaInfo{}, false, err
	}
	return entryInfo(e, v), true, nil
}

// Schemas implements Service.
func (b *Broker) Schemas(ctx context.Context, topic string) ([]SchemaInfo, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return nil, err
	}
	es, first, err := b.schemas.all(ctx, tn)
	if err != nil {
		return nil, err
	}
	out := make([]SchemaInfo, 0, len(es))
	for i, e := range es {
		out = append(out, entryInfo(e, first+i))
	}
	return out, nil
}

// CreateSchema implements Service.
func (b *Broker) CreateSchema(ctx context.Context, topic string, si SchemaInfo) (int64, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return 0, err
	}
	v, err := b.schemas.register(ctx, tn, si.info(), schemaAdmin)
	return int64(v), err
}

// TestSchema implements Service.
func (b *Broker) TestSchema(ctx context.Context, topic string, si SchemaInfo) (string, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return "", err
	}
	st, err := b.schemas.check(ctx, tn, si.info())
	return st.String(), err
}

// SchemaVersion implements Service.
func (b *Broker) SchemaVersion(ctx context.Context, topic string, si SchemaInfo) (int64, bool, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return 0, false, err
	}
	v, err := b.schemas.versionOf(ctx, tn, si.info())
	return int64(v), v >= 0, err
}

// DeleteSchema implements Service.
func (b *Broker) DeleteSchema(ctx context.Context, topic string) (int64, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return 0, err
	}
	v, err := b.schemas.markDeleted(ctx, tn)
	return int64(v), err
}

// TopicSchemaStrategy implements Service.
func (b *Broker) TopicSchemaStrategy(ctx context.Context, topic string) (string, string, error) {
	tn, err := parseTopicName(topic)
	if err != nil {
		return "", "", err
	}
	rec, _, err := b.schemas.load(ctx, schemaTopic(tn))
	if err != nil {
		return "", "", err
	}
	return rec.Compatibility, b.schemas.strategy(schemaTopic(tn), rec).String(), nil
}

// SetTopicSchemaStrategy implements Service.
func (b *Broker) SetTopicSchemaStrategy(ctx context.Context, topic, strategy string) error {
	tn, err := parseTopicName(topic)
	if err != nil {
		return err
	}
	st, err := schema.ParseStrategy(strategy)
	if err != nil {
		return errors.Join(schema.ErrInvalid, err)
	}
	return b.schemas.setStrategy(ctx, tn, st)
}
