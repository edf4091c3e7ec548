package functions

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// State is Pulsar's FunctionState: one key of a function's state. A
// counter is a key whose numberValue is set; a value is a key with
// byteValue (and stringValue when the bytes are UTF-8 text).
type State struct {
	Key         string `json:"key"`
	StringValue string `json:"stringValue,omitempty"`
	ByteValue   []byte `json:"byteValue,omitempty"`
	NumberValue *int64 `json:"numberValue,omitempty"`
	Version     int64  `json:"version"`
}

// MaxStateValue bounds one state value (bytes).
const MaxStateValue = 1 << 20

func statePath(t, ns, name, key string) string {
	return rootState + "/" + t + "/" + ns + "/" + name + "/" + hex.EncodeToString([]byte(key))
}

// getState reads key of function t/ns/name.
func (s store) getState(ctx context.Context, t, ns, name, key string) (*State, error) {
	if key == "" {
		return nil, badf("state key is empty")
	}
	b, v, err := s.md.Get(ctx, statePath(t, ns, name, key))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, fmt.Errorf("%w: key %q doesn't exist", ErrNotFound, key)
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state %q: %w", key, err)
	}
	st.Key, st.Version = key, int64(v)
	return &st, nil
}

// putState writes a value (bytes) for key; the write is durable when it
// returns (the metadata store syncs).
func (s store) putState(ctx context.Context, t, ns, name string, st *State) (*State, error) {
	if st.Key == "" {
		return nil, badf("state key is empty")
	}
	if len(st.ByteValue) > MaxStateValue || len(st.StringValue) > MaxStateValue {
		return nil, badf("state value over %d bytes", MaxStateValue)
	}
	out := State{Key: st.Key, NumberValue: st.NumberValue, ByteValue: st.ByteValue, StringValue: st.StringValue}
	if out.ByteValue == nil && out.StringValue != "" {
		out.ByteValue = []byte(out.StringValue)
	}
	b, _ := json.Marshal(out)
	v, err := s.md.Put(ctx, statePath(t, ns, name, st.Key), b, metadata.AnyVersion)
	if err != nil {
		return nil, err
	}
	out.Version = int64(v)
	return &out, nil
}

// incrCounter adds delta to the counter key (absent counts as 0) with
// compare-and-set and returns the new value.
func (s store) incrCounter(ctx context.Context, t, ns, name, key string, delta int64) (int64, error) {
	if key == "" {
		return 0, badf("counter key is empty")
	}
	p := statePath(t, ns, name, key)
	for {
		b, v, err := s.md.Get(ctx, p)
		expected := v
		var cur int64
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			expected = metadata.NotExists
		case err != nil:
			return 0, err
		default:
			var st State
			if err := json.Unmarshal(b, &st); err != nil {
				return 0, fmt.Errorf("counter %q: %w", key, err)
			}
			if st.NumberValue == nil {
				return 0, badf("key %q holds a value, not a counter", key)
			}
			cur = *st.NumberValue
		}
		if (delta > 0 && cur > (1<<63-1)-delta) || (delta < 0 && cur < (-1<<63)-delta) {
			return 0, badf("counter %q would overflow int64", key)
		}
		n := cur + delta
		nb, _ := json.Marshal(State{Key: key, NumberValue: &n})
		_, err = s.md.Put(ctx, p, nb, expected)
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// deleteState removes every key of a function (on function delete).
func (s store) deleteState(ctx context.Context, t, ns, name string) {
	base := rootState + "/" + t + "/" + ns + "/" + name
	keys, _ := s.md.Children(ctx, base)
	for _, k := range keys {
		_ = s.md.Delete(ctx, base+"/"+k, metadata.AnyVersion)
	}
	_ = s.md.Delete(ctx, base, metadata.AnyVersion)
}
