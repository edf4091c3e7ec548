package embedded

import "syscall"

// mmapFlags: MAP_POPULATE reads the whole file into the mapping at open in
// file order (readahead), before bbolt walks every page of its tree to
// rebuild the freelist (see the package doc, "Opening").
const mmapFlags = syscall.MAP_POPULATE
