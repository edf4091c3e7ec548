package admincli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// watchable gives a stats command kubectl's -w: --watch re-runs it every
// --watch-interval and redraws its table (on a terminal the screen is
// cleared first; elsewhere frames follow each other, each under a
// header line), until Ctrl-C or --watch-count frames. An error on the
// first call ends the command; later errors are shown in the frame and
// the watch goes on (a broker restart is worth watching through).
func watchable(a *adminCLI, c *cobra.Command) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
		count    int
	)
	c.Flags().BoolVarP(&watch, "watch", "w", false, "refresh the output every --watch-interval until Ctrl-C")
	c.Flags().DurationVar(&interval, "watch-interval", 2*time.Second, "refresh interval of --watch")
	c.Flags().IntVar(&count, "watch-count", 0, "with --watch, stop after this many refreshes (0: until Ctrl-C)")
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if !watch {
			return run(cmd, args)
		}
		if interval <= 0 {
			return fmt.Errorf("--watch-interval must be positive, got %s", interval)
		}
		if count < 0 {
			return fmt.Errorf("--watch-count must be ≥ 0, got %d", count)
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return watchLoop(ctx, a, a.out, isTerminal(a.out), interval, count,
			"magnetar admin "+strings.TrimPrefix(cmd.CommandPath()+" "+strings.Join(args, " "), "magnetar admin "),
			func() error { return run(cmd, args) })
	}
	return c
}

// watchLoop runs one frame (with a.out captured) every interval.
func watchLoop(ctx context.Context, a *adminCLI, out io.Writer, tty bool, interval time.Duration, count int, title string, frame func() error) error {
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for n := 1; ; n++ {
		var buf bytes.Buffer
		a.out = &buf
		err := frame()
		a.out = out
		if err != nil && n == 1 {
			return err
		}
		var f bytes.Buffer
		if tty {
			f.WriteString("\x1b[H\x1b[2J")
		} else if n > 1 {
			f.WriteByte('\n')
		}
		fmt.Fprintf(&f, "Every %s: %s    %s\n\n", interval, strings.TrimSpace(title), time.Now().UTC().Format(time.RFC3339))
		if err != nil {
			fmt.Fprintf(&f, "error: %v\n", err)
		} else {
			f.Write(buf.Bytes())
		}
		if _, werr := out.Write(f.Bytes()); werr != nil {
			return werr
		}
		if count > 0 && n >= count {
			return nil
		}
		// Checked before the select: with both ready, select picks at
		// random and a cancelled watch could draw one frame more.
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tk.C:
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
