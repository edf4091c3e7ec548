package journal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// TestDirectCrashRecovery is TestCrashRecovery with DirectIO (aligned,
// padded group writes that rewrite the last partial block) on MemFS: crash
// clones keep synced data plus torn prefixes of unsynced writes, and every
// acknowledged record must replay.
func TestDirectCrashRecovery(t *testing.T) {
	crashRecovery(t, func(o *Options) {
		o.DirectIO = true
		o.Alignment = 512
	})
}

// TestDirectStageGroup checks the staging of groups: every write starts
// and ends on the alignment, starts with the tail of the previous group,
// and the bytes it puts at each offset are the file's logical bytes.
func TestDirectStageGroup(t *testing.T) {
	const align = 512
	hdr := bytes.Repeat([]byte{0xAB}, FileHeaderSize)
	d := newDirectState(align, nil, hdr, nil)
	file := append([]byte(nil), hdr...) // the logical file
	var disk []byte                     // what the writes left
	off := int64(FileHeaderSize)
	for i, size := range []int{1, 479, 480, 511, 512, 513, 1024, 3000, 7, 0, 4096 * 3} {
		var chunks [][]byte
		var group []byte
		for k := 0; k < size; {
			n := min(size-k, 100+i)
			c := make([]byte, n)
			for x := range c {
				c[x] = byte(i*13 + k + x)
			}
			chunks = append(chunks, c)
			group = append(group, c...)
			k += n
		}
		if size == 0 {
			continue // the committer never writes an empty group
		}
		at, buf := d.stageGroup(off, chunks, size)
		if at%align != 0 || len(buf)%align != 0 {
			t.Fatalf("group %d: write at %d of %d bytes, not aligned to %d", i, at, len(buf), align)
		}
		if p := uintptr(unsafe.Pointer(&buf[0])); p%align != 0 {
			t.Fatalf("group %d: buffer at %#x not aligned", i, p)
		}
		if at > off || at+int64(len(buf)) < off+int64(size) || off-at >= align {
			t.Fatalf("group %d at %d+%d: write [%d, %d)", i, off, size, at, at+int64(len(buf)))
		}
		file = append(file, group...)
		if n := int(at) + len(buf); len(disk) < n {
			disk = append(disk, make([]byte, n-len(disk))...)
		}
		copy(disk[at:], buf)
		if !bytes.Equal(disk[:len(file)], file) {
			t.Fatalf("group %d: file bytes differ from the logical ones", i)
		}
		for _, b := range disk[len(file):] {
			if b != 0 {
				t.Fatalf("group %d: padding is not zero", i)
			}
		}
		off += int64(size)
		if want := file[off/align*align:]; !bytes.Equal(d.tail, want) {
			t.Fatalf("group %d: tail %d bytes, want %d", i, len(d.tail), len(want))
		}
	}
}

// TestDirectOptions checks the alignment validation.
func TestDirectOptions(t *testing.T) {
	for _, a := range []int{1, 100, 511, 513, 3000, 2 << 20} {
		o := testOptions(vfs.NewMem())
		o.DirectIO, o.Alignment = true, a
		if _, err := Open(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("Alignment %d: Open = %v, want ErrBadOptions", a, err)
		}
	}
	o := testOptions(vfs.NewMem())
	o.DirectIO = true
	j := mustOpen(t, o)
	defer j.Close()
	if o.Alignment != 0 || j.opts.Alignment != DefaultAlignment {
		t.Errorf("default alignment %d, want %d", j.opts.Alignment, DefaultAlignment)
	}
}

// TestDirectOS runs a DirectIO journal on the OS file system (O_DIRECT
// descriptors; a misaligned write fails with EINVAL) with both write
// paths, small files (rolls) and concurrent appenders. While it runs, a
// copy of the directory is what a crash would leave (O_DIRECT writes and
// their fdatasync bypass the page cache): every record acknowledged before
// the copy must replay from it, the zero padding past the last record
// reads as a torn tail, and garbage appended to the last file too. Files
// left by a roll or Close hold no padding.
func TestDirectOS(t *testing.T) {
	liveCopyOS(t, func(o *Options) { o.DirectIO = true })
}

// liveCopyOS is TestDirectOS's body for every writer mode, with the
// journal's options passed through mod (TestZeroFillOS sets ZeroFill).
func liveCopyOS(t *testing.T, mod func(*Options)) {
	modes := []uring.Mode{uring.ModePwrite}
	if uring.Available() {
		modes = append(modes, uring.ModeUring)
	}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := DefaultOptions(filepath.Join(dir, "journal"))
			o.WriterMode, o.MaxGroupWait = mode, 0
			o.MaxFileSize = 256 << 10
			o.PreallocSize = 64 << 10
			mod(&o)
			j := mustOpen(t, o)
			if k := j.WriterKind(); strings.HasSuffix(k, "+direct") != o.DirectIO {
				t.Fatalf("WriterKind = %q with DirectIO %v", k, o.DirectIO)
			}
			const writers, perWriter = 4, 600
			var (
				mu    sync.Mutex
				acked = make([]int, writers)
				wg    sync.WaitGroup
			)
			snap := func(name string) (string, []int) {
				mu.Lock()
				want := append([]int(nil), acked...)
				mu.Unlock()
				dst := filepath.Join(dir, name)
				copyDir(t, o.Dir, dst)
				return dst, want
			}
			type snapshot struct {
				dir  string
				want []int
			}
			var snaps []snapshot
			for w := range writers {
				wg.Go(func() {
					var inner sync.WaitGroup
					for i := range perWriter {
						inner.Add(1)
						j.AppendFunc(Record{Type: Entry, LedgerID: int64(w), EntryID: int64(i), Payload: crashPayload(w, i)},
							func(_ Position, err error) {
								defer inner.Done()
								if err != nil {
									t.Errorf("writer %d entry %d: %v", w, i, err)
									return
								}
								mu.Lock()
								acked[w] = i + 1
								mu.Unlock()
							})
						if i%150 == 149 {
							inner.Wait()
						}
					}
					inner.Wait()
				})
			}
			for k := range 3 {
				d, want := snap("crash" + string(rune('a'+k)))
				snaps = append(snaps, snapshot{d, want})
			}
			wg.Wait()
			d, want := snap("crash-end")
			snaps = append(snaps, snapshot{d, want})
			// Garbage after the padding of the last file: a torn tail.
			last := lastFile(t, d)
			f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("torn record bytes"))
			f.Close()
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			// After Close every file ends at its last record.
			ids, err := listFiles(vfs.NewOS(), o.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) < 3 {
				t.Fatalf("%d journal files, want rolls", len(ids))
			}
			for _, id := range ids {
				checkNoPadding(t, filepath.Join(o.Dir, fileName(id)))
			}
			snaps = append(snaps, snapshot{o.Dir, []int{perWriter, perWriter, perWriter, perWriter}})
			for _, s := range snaps {
				ro := o
				ro.Dir = s.dir
				j, err := Open(ro)
				if err != nil {
					t.Fatalf("%s: Open = %v", s.dir, err)
				}
				next := make([]int, writers)
				err = j.Replay(Position{}, func(r Record, _ Position) error {
					w := int(r.LedgerID)
					if r.EntryID != int64(next[w]) || !bytes.Equal(r.Payload, crashPayload(w, next[w])) {
						t.Fatalf("%s: writer %d entry %d, want %d with its payload", s.dir, w, r.EntryID, next[w])
					}
					next[w]++
					return nil
				})
				if err != nil {
					t.Fatalf("%s: Replay = %v", s.dir, err)
				}
				for w := range writers {
					if next[w] < s.want[w] {
						t.Fatalf("%s: writer %d replayed %d, %d were acknowledged", s.dir, w, next[w], s.want[w])
					}
				}
				// The recovered journal keeps taking appends.
				appendAll(t, j, makeRecords(50, 300, 9))
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// copyDir copies the regular files of src, which a journal may be writing
// to, into a new dir dst so that the copy is an image a crash could leave.
// A forward copy is not: it can read a block before the group that fills
// it was written and a later block after the next group landed, a hole no
// crash produces (a group is written only after the previous one's sync).
// So files are copied newest first and each from its end backwards, one
// block at a time: whatever a block read later holds was already on disk
// when every block after it was read.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	const block = 4096
	for i := len(ents) - 1; i >= 0; i-- {
		e := ents[i]
		f, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, st.Size())
		for end := int64(len(b)); end > 0; {
			start := (end - 1) / block * block
			// A roll may truncate the file's padding meanwhile: zeros.
			if _, err := f.ReadAt(b[start:end], start); err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("%s at %d: %v", e.Name(), start, err)
			}
			end = start
		}
		f.Close()
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// lastFile returns the path of the newest journal file in dir.
func lastFile(t *testing.T, dir string) string {
	t.Helper()
	ids, err := listFiles(vfs.NewOS(), dir)
	if err != nil || len(ids) == 0 {
		t.Fatalf("no journal files in %s: %v", dir, err)
	}
	return filepath.Join(dir, fileName(ids[len(ids)-1]))
}

// checkNoPadding fails unless the file's records run to its very end.
func checkNoPadding(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	off := FileHeaderSize
	for off < len(b) {
		rest, _, _, err := decodeRecord(b[off:])
		if err != nil {
			t.Fatalf("%s: bytes at %d of %d are not a record: %v", p, off, len(b), err)
		}
		off = len(b) - len(rest)
	}
}
