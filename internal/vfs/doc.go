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
// MemFS.DiskUsage reports a 1 TiB volume minus the bytes of reachable files,
// or fixed values after SetDiskUsage.
//
// # Errors
//
// Both implementations return *os.PathError wrapping the errno Linux would
// return, so errors.Is(err, fs.ErrNotExist) or errors.Is(err, unix.ENOSPC)
// mean the same thing on both. Injected errors are wrapped the same way; see
// ErrorFS.
package vfs
