package connectors

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/functions/sdk"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

const maxLine = 5 << 20

func fileSource(ctx context.Context, in *sdk.Instance, pol *iopolicy.Policy) error {
	cfg := in.Spec.UserConfig
	dir := str(cfg, "inputDirectory", "")
	if dir == "" {
		return errors.New("file source: configs.inputDirectory is required")
	}
	filter, err := regexp.Compile(str(cfg, "fileFilter", ".*"))
	if err != nil {
		return fmt.Errorf("file source: configs.fileFilter: %w", err)
	}
	// Both directories are opened below the operator's roots without
	// following symbolic links, and every file in them by name in the
	// open directory (ingestFile): nothing outside the roots is read,
	// moved or created.
	done, err := pol.OpenPath(in.Spec.Tenant, iopolicy.ProcessedDirectory(cfg, dir), true)
	if err != nil {
		return fmt.Errorf("file source: configs.processedDirectory: %w", err)
	}
	defer done.Close()
	p, err := in.Output(in.SourceName())
	if err != nil {
		return err
	}
	nextKey := "file-next-seq/" + strconv.Itoa(in.ID)
	for ctx.Err() == nil {
		if err := pollDir(ctx, in, pol, p, dir, done, filter, nextKey); err != nil {
			in.SystemError(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

// pollDir sends the files of the input directory that are this
// instance's, in name order.
func pollDir(ctx context.Context, in *sdk.Instance, pol *iopolicy.Policy, p *pulsarclient.Producer, dir string, done *os.File, filter *regexp.Regexp, nextKey string) error {
	d, err := pol.OpenPath(in.Spec.Tenant, dir, false)
	if err != nil {
		return err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || !filter.MatchString(n) {
			continue
		}
		if in.Spec.Parallelism > 1 && int(hash(n)%uint32(in.Spec.Parallelism)) != in.ID {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		if err := ingestFile(ctx, in, p, d, done, n, nextKey); err != nil && ctx.Err() == nil {
			in.SystemError(fmt.Errorf("file %s: %w", n, err))
		}
	}
	return nil
}

func hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// ingestFile sends one file's lines with sequence ids base+1.. where base
// is fixed (in state) before the first send, so a retry after a crash
// re-sends the same ids; then it moves the file away.
func ingestFile(ctx context.Context, in *sdk.Instance, p *pulsarclient.Producer, dir, done *os.File, name, nextKey string) error {
	f, err := iopolicy.OpenIn(dir, name, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	fileKey := fmt.Sprintf("file-seq/%d/%s/%d-%d-%d", in.ID, name, ino, fi.Size(), fi.ModTime().UnixNano())
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	var base int64
	if b, err := in.GetState(ctx, fileKey); err != nil {
		return err
	} else if b != nil {
		if base, err = strconv.ParseInt(string(b), 10, 64); err != nil {
			return fmt.Errorf("state %s: %w", fileKey, err)
		}
	} else {
		if base, err = in.GetCounter(ctx, nextKey); err != nil {
			return err
		}
		if err := in.PutState(ctx, fileKey, []byte(strconv.FormatInt(base, 10))); err != nil {
			return err
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var n int64
	errs := make(chan error, 1)
	t0 := time.Now()
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		n++
		seq := base + n
		in.Received(1)
		p.SendAsync(ctx, &pulsarclient.ProducerMessage{Payload: append([]byte(nil), line...), SequenceID: &seq,
			Properties: map[string]string{"file": name, "line": strconv.FormatInt(n, 10)}},
			func(_ pulsarclient.MessageID, _ *pulsarclient.ProducerMessage, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	in.Processed(n, time.Since(t0))
	cur, err := in.GetCounter(ctx, nextKey)
	if err != nil {
		return err
	}
	if d := base + n - cur; d > 0 {
		if _, err := in.IncrCounter(ctx, nextKey, d); err != nil {
			return err
		}
	}
	if err := unix.Renameat(int(dir.Fd()), name, int(done.Fd()), name); err != nil {
		return fmt.Errorf("move %s to %s: %w", name, done.Name(), err)
	}
	_ = dir.Sync()
	_ = done.Sync()
	in.Log.Info("file ingested", "file", name, "lines", n)
	return nil
}

func fileSink(ctx context.Context, in *sdk.Instance, pol *iopolicy.Policy) error {
	out := str(in.Spec.UserConfig, "outputFile", "")
	if out == "" {
		return errors.New("file sink: configs.outputFile is required")
	}
	// Its directory is opened below the operator's roots without
	// following symbolic links; the file itself may not be one.
	f, err := pol.OpenFile(in.Spec.Tenant, out, unix.O_CREAT|unix.O_WRONLY|unix.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("file sink: configs.outputFile: %w", err)
	}
	defer f.Close()
	return in.RunBatch(ctx, 500, 50*time.Millisecond, func(_ *sdk.Instance, msgs []*pulsarclient.Message) (map[int]error, error) {
		var b bytes.Buffer
		for _, m := range msgs {
			b.Write(m.Payload())
			b.WriteByte('\n')
		}
		if _, err := f.Write(b.Bytes()); err != nil {
			return nil, err
		}
		return nil, f.Sync()
	})
}

func logSink(ctx context.Context, in *sdk.Instance) error {
	return in.RunBatch(ctx, 100, 10*time.Millisecond, func(_ *sdk.Instance, msgs []*pulsarclient.Message) (map[int]error, error) {
		w := bufio.NewWriter(os.Stdout)
		for _, m := range msgs {
			fmt.Fprintf(w, "%s key=%q id=%v: %s\n", m.Topic(), m.Key(), m.ID(), m.Payload())
		}
		return nil, w.Flush()
	})
}
