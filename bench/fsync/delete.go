package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/magnetar-mq/magnetar/internal/vfs"
)

var (
	deleteMiB  = flag.Int("delete-mib", 0, "-floor: write and sync a file of this many MiB before the run and delete it -delete-at into it (an entry log GC removes)")
	deleteRate = flag.Int64("delete-rate", 64<<20, "-floor -delete-mib: free it at most this many bytes per second through vfs.Remover, as a bookie does (negative: os.Remove at once)")
	deleteStep = flag.Int64("delete-step", 0, "-floor -delete-mib: bytes freed per step (0: vfs.DefaultRemoveStep)")
	deleteAt   = flag.Duration("delete-at", 5*time.Second, "-floor -delete-mib: when to delete it, from the run's start")
)

// deleteVictim is the file -delete-mib deletes during a -floor run.
type deleteVictim struct {
	path  string
	rm    *vfs.Remover
	freed chan time.Duration // how long the delete took, once done
}

// prepareDelete writes and syncs the file (before the run, so that its
// writeback is not part of it); nil without -delete-mib.
func prepareDelete() *deleteVictim {
	if *deleteMiB <= 0 {
		return nil
	}
	path := filepath.Join(*dir, "fsync-delete.dat")
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range *deleteMiB {
		if _, err := f.Write(buf); err != nil {
			panic(err)
		}
	}
	if err := f.Sync(); err != nil {
		panic(err)
	}
	f.Close()
	return &deleteVictim{path: path, rm: vfs.NewRemover(vfs.NewOS(), *deleteRate, *deleteStep), freed: make(chan time.Duration, 1)}
}

// start deletes the file after -delete-at, in the background.
func (v *deleteVictim) start() {
	go func() {
		time.Sleep(*deleteAt)
		t := time.Now()
		if err := v.rm.Remove(v.path); err != nil {
			panic(err)
		}
		v.rm.Wait()
		v.freed <- time.Since(t)
	}()
}

// report prints how the delete went, after the run.
func (v *deleteVictim) report() {
	select {
	case d := <-v.freed:
		how := "os.Remove"
		if *deleteRate > 0 {
			how = fmt.Sprintf("vfs.Remover at %d MiB/s", *deleteRate>>20)
		}
		fmt.Printf("  deleted %d MiB at %v into the run with %s: freed in %.2f s\n", *deleteMiB, *deleteAt, how, d.Seconds())
	default:
		fmt.Printf("  the delete of %d MiB had not finished when the run ended\n", *deleteMiB)
	}
	v.rm.Close()
	os.Remove(v.path)
	os.Remove(v.path + vfs.TrashSuffix)
}
