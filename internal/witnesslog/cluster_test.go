package witnesslog

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// Environment of the child instance of TestMariaDBLogSurvivesAKilledInstance.
const (
	envChildURL  = "ANCHORD_TEST_WITNESSLOG_CHILD_URL"
	envChildSeed = "ANCHORD_TEST_WITNESSLOG_CHILD_SEED"
)

// runChild is a second instance of the domain: it appends to the log in the MariaDB database
// of envChildURL from four goroutines until it is killed, printing "appended <index> <entry>"
// to stdout for every index it was given.
func runChild() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	seed, err := hex.DecodeString(os.Getenv(envChildSeed))
	if err != nil || len(seed) != ed25519.SeedSize {
		logger.Error("child: bad key seed", "error", err)
		return 2
	}
	cfg := Config{Origin: testOrigin, Key: ed25519.NewKeyFromSeed(seed), Logger: logger}
	l, err := OpenMariaDB(context.Background(), cfg, os.Getenv(envChildURL))
	if err != nil {
		logger.Error("child: open", "error", err)
		return 1
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				entry := fmt.Sprintf("child-%d-%d", w, i)
				idx, err := l.Append(context.Background(), []byte(entry))
				if err != nil {
					logger.Error("child: append", "error", err)
					continue
				}
				out.Lock()
				fmt.Printf("appended %d %s\n", idx, entry)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

type indexed struct {
	index uint64
	entry []byte
}

// TestMariaDBTwoAppendersNeverFork runs two instances of one domain's log on one database,
// appending concurrently, and closes one half-way: every index is given once, the other
// instance goes on, and the one log holds every entry either instance returned an index for,
// at that index, proven against the domain's checkpoint.
func TestMariaDBTwoAppendersNeverFork(t *testing.T) {
	t.Parallel()
	u := mariaDBDatabase(t)
	tb := setup(t)
	a := openMariaDB(t, freshRegistry(tb.cfg), u)
	b := openMariaDB(t, freshRegistry(tb.cfg), u)
	ctx := anchordtest.Context(t, testTimeout)

	const perWorker = 40
	var mu sync.Mutex
	var got []indexed
	var wg sync.WaitGroup
	aHalf := make(chan struct{})
	var aHalfOnce sync.Once
	for name, l := range map[string]*Log{"a": a, "b": b} {
		for w := range 8 {
			wg.Go(func() {
				for i := range perWorker {
					entry := fmt.Appendf(nil, "%s-%d-%d", name, w, i)
					idx, err := l.Append(ctx, entry)
					if name == "a" && errors.Is(err, ErrClosed) {
						return
					}
					if !assertNoError(t, err) {
						return
					}
					mu.Lock()
					got = append(got, indexed{idx, entry})
					mu.Unlock()
					if name == "a" && i == perWorker/2 {
						aHalfOnce.Do(func() { close(aHalf) })
					}
				}
			})
		}
	}
	<-aHalf
	closeLog(t, a)
	wg.Wait()
	require.False(t, t.Failed())

	seen := map[uint64]bool{}
	for _, g := range got {
		require.False(t, seen[g.index], "index %d given twice", g.index)
		seen[g.index] = true
	}
	var fromA int
	for _, g := range got {
		if g.entry[0] == 'a' {
			fromA++
		}
	}
	require.Less(t, fromA, 8*perWorker, "a was closed before it finished")
	require.Positive(t, fromA)
	t.Logf("%d entries, %d from the instance closed half-way", len(got), fromA)

	cp, err := b.AwaitCheckpoint(ctx, uint64(len(got)-1))
	require.NoError(t, err)
	require.Equal(t, uint64(len(got)), cp.Size, "no index was lost or left as a gap")
	p := httpPeer(t, serve(t, b), tb.pub)
	served, err := p.Checkpoint(ctx)
	require.NoError(t, err)
	require.Equal(t, cp.Size, served.Size)
	for _, g := range got {
		require.NoError(t, p.VerifyInclusion(ctx, served, g.index, g.entry))
	}
}

// TestMariaDBLogSurvivesAKilledInstance kills (SIGKILL) an instance, a separate process,
// while it appends, and while this process appends too: this instance goes on, and every
// index the killed one had returned still holds its entry in a log consistent with the
// checkpoints seen before the kill.
func TestMariaDBLogSurvivesAKilledInstance(t *testing.T) {
	t.Parallel()
	u := mariaDBDatabase(t)
	tb := setup(t)
	l := openMariaDB(t, tb.cfg, u)
	ctx := anchordtest.Context(t, 2*testTimeout)
	p := httpPeer(t, serve(t, l), tb.pub)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChildURL+"="+u, envChildSeed+"="+hex.EncodeToString(tb.cfg.Key.Seed()))
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	var childLog anchordtest.SyncBuffer
	child.Stderr = &childLog
	require.NoError(t, child.Start())
	childAppended := make(chan indexed, 100_000)
	var childErr error
	childExited := make(chan struct{})
	go func() {
		defer close(childExited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "appended" {
				continue
			}
			i, err := strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				childAppended <- indexed{i, []byte(f[2])}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		close(childAppended)
		childErr = child.Wait()
	}()
	t.Cleanup(func() {
		_ = child.Process.Kill()
		<-childExited
		if t.Failed() {
			t.Logf("child log:\n%s", childLog.String())
		}
	})

	// This instance appends all along.
	var mine []indexed
	var mineMu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				entry := fmt.Appendf(nil, "parent-%d-%d", w, i)
				idx, err := l.Append(ctx, entry)
				if !assertNoError(t, err) {
					return
				}
				mineMu.Lock()
				mine = append(mine, indexed{idx, entry})
				mineMu.Unlock()
			}
		})
	}

	// Kill the child once it has had 200 indices, and a checkpoint has covered some of them.
	var theirs []indexed
	for len(theirs) < 200 {
		select {
		case g, ok := <-childAppended:
			require.True(t, ok, "the child stopped early:\n%s", childLog.String())
			theirs = append(theirs, g)
		case <-ctx.Done():
			t.Fatalf("the child appended only %d entries", len(theirs))
		}
	}
	var highestTheirs uint64
	for _, g := range theirs {
		highestTheirs = max(highestTheirs, g.index)
	}
	before, err := l.AwaitCheckpoint(ctx, highestTheirs)
	require.NoError(t, err)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	for g := range childAppended {
		theirs = append(theirs, g)
	}
	<-childExited
	require.ErrorContains(t, childErr, "signal: killed")

	// This instance goes on after the kill: more appends, each given an index.
	mineMu.Lock()
	atKill := len(mine)
	mineMu.Unlock()
	anchordtest.Eventually(t, testTimeout, 10*time.Millisecond, func() bool {
		mineMu.Lock()
		defer mineMu.Unlock()
		return len(mine) >= atKill+200
	}, "appends go on after the kill")
	close(stop)
	wg.Wait()
	require.False(t, t.Failed())

	all := append(append([]indexed(nil), theirs...), mine...)
	var highest uint64
	seen := map[uint64]bool{}
	for _, g := range all {
		require.False(t, seen[g.index], "index %d given twice", g.index)
		seen[g.index] = true
		highest = max(highest, g.index)
	}
	_, err = l.AwaitCheckpoint(ctx, highest)
	require.NoError(t, err)
	after, err := p.Checkpoint(ctx)
	require.NoError(t, err)
	t.Logf("killed instance: %d indices; this one: %d; checkpoint before the kill %d, after %d (entries the child had integrated but not yet reported: %d)",
		len(theirs), len(mine), before.Size, after.Size, int(after.Size)-len(all))
	require.NoError(t, p.VerifyConsistency(ctx, before, after))
	for _, g := range all {
		require.NoError(t, p.VerifyInclusion(ctx, after, g.index, g.entry), "%s at %d", g.entry, g.index)
	}
}

func freshRegistry(cfg Config) Config {
	cfg.Registerer = nil
	return cfg
}

// assertNoError reports err from a goroutine other than the test's without stopping it.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
