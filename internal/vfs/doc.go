// Package vfs is the file-system seam of the storage engine: every storage
// package opens, writes and syncs files through an FS, never through os
// directly, so that tests can swap in an in-memory file system that models
// crashes (MemFS) or one that injects failures (ErrorFS).
//
// # Implementations
//
//   - Default / NewOS: the OS. File.Sync is fdatasync(2), File.Preallocate is
//     fallocate(FALLOC_FL_KEEP_SIZE) (a no-op where the file system answers
//     EOPNOTSUPP or ENOSYS), SyncDir opens the directory and fsyncs it. Files
//     implement Fder, which the io_uring writer in internal/uring needs, and
//     the FS implements DiskUsager through statfs(2) (free = f_bavail).
//   - NewMem: MemFS, in memory, with crash clones (below).
//   - NewErrorFS: wraps any FS and asks an Injector before every operation.
//     Its files do not implement Fder, so writers fall back to WriteAt+Sync,
//     where the injected errors are seen.
//
// # Paced deletes
//
// Remover (remover.go) deletes large files at a bounded rate of freed
// bytes: Remove renames the file to its name plus TrashSuffix (the
// directory synced, so the rename is durable before Remove returns), and a
// background goroutine cuts it by a step at a time, syncing each cut and
// pausing to keep to the rate, then removes it. Invariants: after Remove
// returns the original name is gone; a trash file is never read again and
// may be cut or removed at any point (a crash leaves it part way; Sweep of
// its directory finishes it); while hurried (Hurry(true), a full disk) or
// with a rate of 0 or less, files are removed at once.
//
// # MemFS crash model
//
// MemFS keeps two views of everything: the live view that reads, List and
// Stat return, and the durable view that a crash leaves behind.
// CrashClone builds a new MemFS from the durable view only:
//
//   - File content. File.Sync (fdatasync) makes the file's whole current
//     content and size durable. Writes and truncates after the last Sync are
//     lost by CrashClone. Create on an existing file truncates it; that
//     truncate is an unsynced change too, so a crash brings the old synced
//     content back. Preallocate changes nothing.
//   - Directory entries. Creating, removing or renaming a file or directory
//     changes only the live view of the directories involved; SyncDir(dir)
//     copies dir's live entries to its durable view. So a new file needs a
//     Sync for its data and a SyncDir of its parent for its name; a rename
//     needs SyncDir of both directories (one if they are the same); a
//     directory made by MkdirAll needs SyncDir of its parent, recursively up
//     to the root. The root always exists.
//   - A durable entry points to a file node, not to a snapshot of a name: a
//     file that was synced, renamed and then crashed before SyncDir shows up
//     under its old name with its synced content. If a rename was made
//     durable in the new directory but not in the old one, both names survive
//     and share one file (like a hard link), as a journaling file system can
//     leave it.
//   - Open handles do not survive: the clone has no open files, and its
//     durable view equals its live view.
//
// CrashCloneRandom(rng) additionally models writeback that happened before
// the crash: for each file, a random prefix (in program order) of the writes
// and truncates made since its last Sync survives, and the write right after
// that prefix may survive torn, as a random non-empty strict prefix of its
// bytes. Directory entries follow the same rule as CrashClone. Clones are
// deterministic for a given rng state. Use it for torn-tail tests: a journal
// must recover every synced record and may find any prefix of what followed.
//
// CrashCloneSubset(rng) models writeback in any order: an arbitrary subset
// of each file's unsynced writes and truncates survives (applied in program
// order, writes possibly torn), so a later append may survive without an
// earlier one and leave zeros in between, as delayed allocation can.
//
// MemFS.DiskUsage reports a 1 TiB volume minus the bytes of reachable files,
// or fixed values after SetDiskUsage.
//
// # Error injection
//
// NewErrorFS(inner, inj) asks inj.MaybeError(op, path) before each operation
// (Op* constants; Rename reports the old name, File methods the name the
// file was opened with) and returns a non-nil answer as an *os.PathError
// instead of doing the operation. Ready-made injectors, composable with
// And (all must fire; asked in order, stopping at the first that does not)
// and Or (first that fires):
//
//	Error(err, ops...)       every listed op (all ops if none)
//	FailNth(op, n, err)      only the nth call of op
//	FailAfter(op, n, err)    the nth call of op and all later ones
//	PathMatch(pattern, inj)  only paths matching pattern ("*.log" matches base names)
//	NewToggle(inj)           only between Enable and Disable (starts disabled)
//	Randomly(p, seed, inj)   with probability p, deterministic per seed
//	DiskFull(), IOError(ops...)  ENOSPC on allocating ops, EIO
//
// An injected ShortWrite(err) on OpWrite writes the first half of the buffer
// and returns err (io.ErrShortWrite if nil): a torn write. A failed Sync,
// Truncate or Preallocate is not performed, so over a MemFS a failed Sync
// really loses the data at the next CrashClone. ErrorFS.SetDiskUsage
// overrides what DiskUsage reports, to simulate a full volume.
//
// # Errors
//
// Both implementations return *os.PathError wrapping the errno Linux would
// return, so errors.Is(err, fs.ErrNotExist) or errors.Is(err, unix.ENOSPC)
// mean the same thing on both. Injected errors are wrapped the same way; see
// ErrorFS.
package vfs
