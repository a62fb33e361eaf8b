package logger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestNewWritesDurationsAsText(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		New(format, "info", &buf).Info("stage stopped", "took", 1500*time.Millisecond)
		require.Contains(t, buf.String(), "1.5s", format)
		require.NotContains(t, buf.String(), "1500000000", format)
	}
}

func TestNewHonoursTheLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := New("json", "warn", &buf)
	l.Info("hidden")
	l.Warn("shown")
	require.NotContains(t, buf.String(), "hidden")
	require.Contains(t, buf.String(), "shown")
}

func TestParseKlog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line   string
		level  slog.Level
		caller string
		msg    string
	}{
		{`I1126 10:56:10.019111   25398 files.go:516] Initializing directory for POSIX log at "data/log" (this should only happen ONCE per log!)`,
			slog.LevelInfo, "files.go:516", `Initializing directory for POSIX log at "data/log" (this should only happen ONCE per log!)`},
		{`I1126 10:56:10.019877   25398 append_lifecycle.go:634] Failed to fetch old checkpoint: file does not exist`,
			slog.LevelDebug, "append_lifecycle.go:634", "Failed to fetch old checkpoint: file does not exist"},
		{`I1126 10:56:10.019877   25398 append_lifecycle.go:634] Failed to fetch old checkpoint: scan checkpoint: driver: bad connection`,
			slog.LevelWarn, "append_lifecycle.go:634", "Failed to fetch old checkpoint: scan checkpoint: driver: bad connection"},
		{`I1126 10:56:11.000001   25398 mysql.go:676] AwaitIntegration: Integrate from 3 (Target 5)`,
			slog.LevelDebug, "mysql.go:676", "AwaitIntegration: Integrate from 3 (Target 5)"},
		{`W1126 10:56:11.000001   25398 mysql.go:672] AwaitIntegration: readTreeState: driver: bad connection`,
			slog.LevelWarn, "mysql.go:672", "AwaitIntegration: readTreeState: driver: bad connection"},
		{`E1126 10:56:11.000001   25398 mysql.go:74] Failed to ping database: refused`,
			slog.LevelError, "mysql.go:74", "Failed to ping database: refused"},
		{`E1126 10:56:11.000001   25398 append_lifecycle.go:407] NextIndex: readTreeState: context canceled`,
			slog.LevelDebug, "append_lifecycle.go:407", "NextIndex: readTreeState: context canceled"},
		{`F1126 10:56:11.000001   25398 append_lifecycle.go:88] Failed to create metric`,
			slog.LevelError, "append_lifecycle.go:88", "Failed to create metric"},
		{"no header at all", slog.LevelInfo, "", "no header at all"},
		{"X] odd", slog.LevelInfo, "", "X] odd"},
		{"", slog.LevelInfo, "", ""},
	} {
		level, caller, msg := parseKlog(tc.line)
		require.Equal(t, tc.level, level, tc.line)
		require.Equal(t, tc.caller, caller, tc.line)
		require.Equal(t, tc.msg, msg, tc.line)
	}
}

func FuzzParseKlog(f *testing.F) {
	f.Add(`I1126 10:56:10.019111   25398 files.go:516] Initializing directory`)
	f.Add(`E1126 10:56:11.000001 1 a.go:1] x] y`)
	f.Add("] ")
	f.Fuzz(func(t *testing.T, line string) {
		_, _, msg := parseKlog(line)
		require.True(t, strings.HasSuffix(line, msg), "the message is the end of the line")
	})
}

// TestCaptureRoutesKlogAndTheLogPackage: what tessera writes to klog, and anything written to
// the standard library's log package, comes out as JSON lines of the captured logger at their
// levels. klog and log are process-wide, so this test does not run in parallel with others
// that capture (none do).
func TestCaptureRoutesKlogAndTheLogPackage(t *testing.T) { //nolint:paralleltest // changes process-wide loggers
	var buf anchordtest.SyncBuffer
	prev := slog.Default()
	Capture(New("json", "debug", &buf))
	t.Cleanup(func() {
		Capture(prev)
		slog.SetDefault(prev)
		log.SetOutput(os.Stderr)
		log.SetFlags(log.LstdFlags)
	})

	klog.Infof("Initializing directory for POSIX log at %q", "data/log")
	klog.Infof("Failed to fetch old checkpoint: %v", os.ErrNotExist)
	klog.Warningf("publishCheckpoint: %v", fmt.Errorf("busy"))
	klog.Errorf("Failed to ping database: %v", fmt.Errorf("refused"))
	log.Printf("http: a library's line")

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &obj), line)
		got = append(got, obj)
	}
	require.Len(t, got, 5)
	want := []struct{ level, msg string }{
		{"INFO", `Initializing directory for POSIX log at "data/log"`},
		{"DEBUG", "Failed to fetch old checkpoint: file does not exist"},
		{"WARN", "publishCheckpoint: busy"},
		{"ERROR", "Failed to ping database: refused"},
		{"INFO", "http: a library's line"},
	}
	for i, w := range want {
		require.Equal(t, w.level, got[i]["level"], got[i])
		require.Equal(t, w.msg, got[i]["msg"], got[i])
		if i < 4 {
			require.Equal(t, "tessera", got[i]["component"], got[i])
			require.Contains(t, got[i]["caller"], "logger_test.go:", got[i])
		}
	}
}

// TestCaptureAgainWhileKlogIsInUse: an in-process server of the tests captures the loggers while
// another one's tessera goroutines log through klog, even before the process's first Capture;
// klog's logger is set once at start, and each Capture re-routes klog's lines (structured ones
// too) without a race.
func TestCaptureAgainWhileKlogIsInUse(t *testing.T) { //nolint:paralleltest // changes process-wide loggers
	prev := slog.Default()
	t.Cleanup(func() {
		Capture(prev)
		log.SetOutput(os.Stderr)
		log.SetFlags(log.LstdFlags)
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				klog.V(1).Info("publishing")
				klog.InfoS("integrated", "size", 1)
			}
		}
	}()
	Capture(New("json", "debug", io.Discard))
	var last *anchordtest.SyncBuffer
	for range 50 {
		last = &anchordtest.SyncBuffer{}
		Capture(New("json", "debug", last))
	}
	close(stop)
	<-done

	klog.InfoS("integrated", "size", 7)
	klog.Infof("Initializing directory for POSIX log at %q", "data/log")
	lines := strings.Split(strings.TrimSpace(last.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	var structured, plain map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-2]), &structured))
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &plain))
	require.Equal(t, "integrated", structured["msg"], structured)
	require.Equal(t, "tessera", structured["component"], structured)
	require.EqualValues(t, 7, structured["size"], structured)
	require.Equal(t, `Initializing directory for POSIX log at "data/log"`, plain["msg"], plain)
	require.Equal(t, "tessera", plain["component"], plain)
}
