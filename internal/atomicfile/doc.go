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
package atomicfile
