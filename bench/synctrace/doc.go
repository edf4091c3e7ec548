// Command synctrace says where the time of a file's fdatasyncs goes: in
// the device, on the CPU, asleep waiting for I/O, or runnable and waiting
// for a CPU. It runs a command under `perf record -a` with the kernel's
// scheduler, ext4, block and io_uring tracepoints, then reads the events
// back (`perf script`) and prints four tables:
//
//   - block requests by kind (perf's rwbs: WS a synchronous write, FF a
//     cache flush, WSM a metadata write such as an ext4 fast commit, DS a
//     discard): count, issue-to-complete time, size;
//   - the fdatasyncs (ext4_sync_file with datasync set) of the inode that
//     took the most: total time, split into on-CPU, asleep (waiting for the
//     device or another thread), woken but waiting for a CPU ("runnable"),
//     and preempted; the same means over the slow ones (> -slow);
//   - io_uring write+fsync chains: submission of the first linked write to
//     the fsync's completion, with the time before the fsync began on the
//     io-wq worker (the punt to the worker and the write itself);
//   - scheduling delay (wake-up to running) by kind of thread: the process
//     under test, its io-wq workers, kernel workers.
//
// Usage:
//
//	go run ./bench/synctrace [-out DIR] [-slow 1ms] -- CMD [ARGS...]
//	go run ./bench/synctrace -script FILE   # analyse `perf script` output
//
// e.g. the bookie alone at peak, its ledger dirs on tmpfs:
//
//	go run ./bench/synctrace -- magnetar bench bookie --dir /tmp/d \
//	    --ledger-dir /dev/shm/l --sizes 100 --outstanding 4096 --modes uring \
//	    --runs 1 --duration 3s --warmup 1s --batch 64 --raw=false --half-peak=false
//
// Needs perf and root (or perf_event_paranoid -1) and a kernel with the
// tracepoints (ext4, block, sched, io_uring). The state of each thread is
// followed from sched_switch (prev_state R: preempted, else asleep) and
// sched_wakeup (runnable from then); a sync's time is charged to the state
// its thread was in. Flush requests carry no sector, so a completion is
// matched to the latest flush issued; a flush the block layer completed
// without a completion event would otherwise shift every later match.
package main
