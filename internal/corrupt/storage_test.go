package corrupt_test

import (
	"errors"
	"testing"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/index"
	"github.com/magnetar-mq/magnetar/internal/corrupt"
	"github.com/magnetar-mq/magnetar/journal"
	"github.com/magnetar-mq/magnetar/metadata/embedded"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
)

// TestStorageSentinelsShareTheMarker: every storage package's corruption
// sentinel is the shared marker, and no two are the same error.
func TestStorageSentinelsShareTheMarker(t *testing.T) {
	all := []error{journal.ErrCorrupt, entrylog.ErrCorrupt, index.ErrCorrupt,
		embedded.ErrCorrupt, mledger.ErrCorrupt, offload.ErrCorrupt}
	for i, e := range all {
		if !errors.Is(e, corrupt.Err) {
			t.Errorf("%v is not the shared marker", e)
		}
		for j, o := range all {
			if i != j && errors.Is(e, o) {
				t.Errorf("%v matches %v", e, o)
			}
		}
	}
}
