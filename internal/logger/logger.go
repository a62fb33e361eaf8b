// Package logger builds the process's slog logger from --log-format and --log-level, and routes
// into it what libraries log past it: klog (which tessera, the witness log's storage, writes to)
// and the standard library's log package. With JSON logs every line the process writes is then
// one JSON object.
//
// Components never use this package: they are handed a *slog.Logger. Only main calls it, once.
package logger

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// New returns a logger writing text or, with format "json", one JSON object per line to w, at
// level ("debug", "info", "warn", "error"; info when it does not parse).
func New(format, level string, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationText}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationText logs every duration one way, as Go duration text ("1.5s"), in JSON as in text:
// the JSON handler would otherwise write nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// Capture makes l the destination of klog and of the standard library's log package (and
// slog's default logger). Both are process-wide: main calls it once, before anything logs; the
// tests call it once per in-process server, while goroutines of another (tessera's) may log.
func Capture(l *slog.Logger) {
	slog.SetDefault(l)
	klogTarget.Store(l.With("component", "tessera"))
}

// klogTarget is where klog's lines go: the last Capture's logger, or slog's default before any.
var klogTarget atomic.Pointer[slog.Logger]

func klogLogger() *slog.Logger {
	if l := klogTarget.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// klog's logger may only be set before anything logs through it (klog reads it without a lock),
// so it is set once, when the process starts, to a logger that follows klogTarget.
func init() {
	// klog hands unstructured calls (Infof, Warningf, Errorf: all tessera makes) to the buffer
	// writer with klog's header, which carries the severity; its structured calls go to the logr
	// side as they are.
	klog.SetLoggerWithOptions(logr.FromSlogHandler(followHandler{}),
		klog.WriteKlogBuffer(func(b []byte) { writeKlog(klogLogger(), b) }))
}

// followHandler is a slog.Handler that hands each record to klogTarget's handler of the moment,
// with the attributes and groups added to it on the way.
type followHandler struct {
	steps []func(slog.Handler) slog.Handler
}

func (h followHandler) target() slog.Handler {
	t := klogLogger().Handler()
	for _, step := range h.steps {
		t = step(t)
	}
	return t
}

func (h followHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.target().Enabled(ctx, level)
}

func (h followHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

func (h followHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })
}

func (h followHandler) WithGroup(name string) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithGroup(name) })
}

func (h followHandler) with(step func(slog.Handler) slog.Handler) followHandler {
	return followHandler{steps: append(slices.Clip(h.steps), step)}
}

// writeKlog logs one klog line, "Lmmdd hh:mm:ss.uuuuuu threadid file:line] message", at the
// level its severity letter (or a rule below) gives it.
func writeKlog(l *slog.Logger, b []byte) {
	b = bytes.TrimRight(b, "\n")
	level, caller, msg := parseKlog(string(b))
	if !l.Enabled(context.Background(), level) {
		return
	}
	attrs := []slog.Attr{}
	if caller != "" {
		attrs = append(attrs, slog.String("caller", caller))
	}
	l.LogAttrs(context.Background(), level, msg, attrs...)
}

// parseKlog splits a klog line into its level, the caller (file:line) and the message. A line
// without klog's header is logged whole at info.
func parseKlog(line string) (slog.Level, string, string) {
	header, msg, ok := strings.Cut(line, "] ")
	if !ok || header == "" {
		return slog.LevelInfo, "", line
	}
	fields := strings.Fields(header)
	if len(fields) < 4 {
		return slog.LevelInfo, "", line
	}
	caller := fields[len(fields)-1]
	if strings.HasSuffix(msg, context.Canceled.Error()) {
		// tessera's loops report their context's end as they stop, with the log: shutdown,
		// not a failure.
		return slog.LevelDebug, caller, msg
	}
	switch header[0] {
	case 'I':
		return infoLevel(msg), caller, msg
	case 'W':
		return slog.LevelWarn, caller, msg
	case 'E', 'F':
		return slog.LevelError, caller, msg
	}
	return slog.LevelInfo, "", line
}

// infoLevel gives the level of a message tessera logs at info. Most keep it; these do not
// report a state change an operator needs at info.
func infoLevel(msg string) slog.Level {
	switch {
	case strings.HasPrefix(msg, "Failed to fetch old checkpoint: "):
		// Read before each checkpoint is published, for the witnesses tessera may ask; a fresh
		// log has none yet, which is expected. Any other failure to read it is worth a look.
		if strings.HasSuffix(msg, "file does not exist") {
			return slog.LevelDebug
		}
		return slog.LevelWarn
	case strings.HasPrefix(msg, "AwaitIntegration: Integrate"),
		strings.HasPrefix(msg, "PublicationAwaiter exiting"):
		// One per integration on MariaDB, and one per stopped awaiter: iterations, not changes.
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
