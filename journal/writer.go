package journal

import (
	"io"

	"github.com/magnetar-mq/magnetar/internal/uring"
	"github.com/magnetar-mq/magnetar/internal/vfs"
)

// newWriter builds the durable-write path for f.
var newWriter = func(f vfs.File, mode uring.Mode) (uring.Writer, error) {
	return &syncWriter{f: f}, nil
}

// syncWriter is a portable uring.Writer: Submit does the writes and the
// sync itself and Wait reports the result.
type syncWriter struct {
	f   vfs.File
	err error
}

func (w *syncWriter) Submit(off int64, bufs [][]byte, sync bool) error {
	w.err = nil
	for _, b := range bufs {
		n, err := w.f.WriteAt(b, off)
		if err == nil && n < len(b) {
			err = io.ErrShortWrite
		}
		if err != nil {
			w.err = err
			return nil
		}
		off += int64(n)
	}
	if sync {
		w.err = w.f.Sync()
	}
	return nil
}

func (w *syncWriter) Wait() error  { err := w.err; w.err = nil; return err }
func (w *syncWriter) Close() error { return nil }
