// Package atomicfile writes a file so that a reader, or the same path
// after a crash, sees either the whole new contents or the old file,
// never a part.
//
// The write goes to a temporary file in the destination's directory
// (same file system, so the rename is atomic), which is filled, given its
// mode, fsynced and closed, then renamed over the destination. On any
// error the temporary file is removed and the destination is untouched.
// The rename itself is made durable only by an fsync of the directory:
// Write does it when asked (SyncDir), callers that write many files may
// sync the directory once at the end instead.
//
// WriteFS is the same sequence for the storage packages (the bookie's
// cookie, the journal's lastMark, the index's metadata) on their vfs.FS,
// so crash clones and fault injection see every step, with a temporary
// file of a fixed name they clean up on open. Rename is the last step
// alone (rename, fsync the directory) for a file put in place another
// way, such as a hard link; CreateFS is WriteFS keeping the new file
// open for appends (the index's metadata log). Every replace-by-rename
// in the project goes through this package.
package atomicfile
