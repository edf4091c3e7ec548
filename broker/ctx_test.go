package broker

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
)

func contextWithTimeout(d time.Duration) (context.Context, func()) {
	return context.WithTimeout(context.Background(), d)
}

func protoMarshal(m proto.Message) ([]byte, error) { return proto.Marshal(m) }
