package memmeta

import (
	"sync"
	"testing"

	"github.com/magnetar-mq/magnetar/metadata"
	"github.com/magnetar-mq/magnetar/metadata/metadatatest"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	trees := map[*testing.T]*Store{}
	metadatatest.Run(t, func(t *testing.T) metadata.Store {
		mu.Lock()
		defer mu.Unlock()
		s, ok := trees[t]
		if !ok {
			s = New()
			trees[t] = s
		}
		return s.Client()
	})
}
