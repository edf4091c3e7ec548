//go:build !linux

package embedded

// mmapFlags: no prefault where MAP_POPULATE does not exist.
const mmapFlags = 0
