package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A figure of operations per second says little without the machine it was measured on: on two
// cores shared with other work the same server gives half the rate, and a server that leaves a
// core idle is bound by something other than CPU. So every summary and interval carries how busy
// the machine was, how many cores the servers used and how many the generator itself took.

// usageSample is what the machine, the servers and this process had used at one moment.
type usageSample struct {
	at    time.Time
	busy  uint64 // jiffies of all CPUs not idle (idle and iowait are idle)
	steal uint64 // of busy: taken by the hypervisor for other machines
	total uint64
	cores int
	// server is the sum of the targets' process_cpu_seconds_total, NaN when a target did not
	// give it (another Sidetree node, a token-protected /metrics).
	server float64
	self   time.Duration // this process's user and system time
}

// Usage is what happened between two samples.
type Usage struct {
	// Cores is the machine's CPU count; Busy its busy share (0–1) over the span, NaN unknown;
	// Steal the share of it a hypervisor gave to other machines (a virtual machine's cores
	// then do less per second).
	Cores int
	Busy  float64
	Steal float64
	// ServerCores is the targets' CPU seconds per second (NaN unknown); GeneratorCores this
	// process's.
	ServerCores    float64
	GeneratorCores float64
}

// String is the usage as the summary and the interval lines print it.
func (u Usage) String() string {
	busy := "busy ?"
	if !math.IsNaN(u.Busy) {
		busy = fmt.Sprintf("%d cores %.0f %% busy", u.Cores, 100*u.Busy)
		if u.Steal >= 0.005 {
			busy += fmt.Sprintf(" (%.0f %% stolen)", 100*u.Steal)
		}
	}
	server := "server cores ?"
	if !math.IsNaN(u.ServerCores) {
		server = fmt.Sprintf("server %.2f cores", u.ServerCores)
	}
	return fmt.Sprintf("machine %s, %s, generator %.2f cores", busy, server, u.GeneratorCores)
}

// usageMeter samples the machine (/proc/stat), the targets' /metrics and this process.
type usageMeter struct {
	client  *http.Client
	targets []string
	stat    string // /proc/stat; a test points it elsewhere
}

func newUsageMeter(client *http.Client, targets []string) *usageMeter {
	return &usageMeter{client: client, targets: targets, stat: "/proc/stat"}
}

// sample takes one sample; what cannot be read is left unknown, never an error: the figures
// are context for the run, not part of it.
func (m *usageMeter) sample(ctx context.Context) usageSample {
	s := usageSample{at: time.Now(), server: 0}
	if b, err := os.ReadFile(m.stat); err == nil {
		s.busy, s.steal, s.total, s.cores = parseProcStat(b)
	}
	for _, t := range m.targets {
		v, err := m.serverCPU(ctx, t)
		if err != nil {
			s.server = math.NaN()
			break
		}
		s.server += v
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// serverCPU reads process_cpu_seconds_total from target's /metrics.
func (m *usageMeter) serverCPU(ctx context.Context, target string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics: HTTP %s", resp.Status)
	}
	return metricValue(io.LimitReader(resp.Body, 8<<20), "process_cpu_seconds_total")
}

// metricValue finds an unlabelled metric's value in the Prometheus text format.
func metricValue(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		return strconv.ParseFloat(strings.TrimSpace(rest), 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s", name)
}

// parseProcStat returns the busy, stolen and total jiffies of the "cpu" line of /proc/stat and
// the number of "cpuN" lines. Guest time is already counted in user time.
func parseProcStat(b []byte) (busy, steal, total uint64, cores int) {
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cores++
			continue
		}
		for i, v := range f[1:min(len(f), 9)] { // user nice system idle iowait irq softirq steal
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, 0, 0
			}
			total += n
			if i != 3 && i != 4 {
				busy += n
			}
			if i == 7 {
				steal = n
			}
		}
	}
	return busy, steal, total, cores
}

// usageBetween is the usage from a to b.
func usageBetween(a, b usageSample) Usage {
	u := Usage{Cores: b.cores, Busy: math.NaN(), Steal: math.NaN(), ServerCores: math.NaN()}
	wall := b.at.Sub(a.at).Seconds()
	if b.total > a.total && b.busy >= a.busy {
		u.Busy = float64(b.busy-a.busy) / float64(b.total-a.total)
		u.Steal = float64(b.steal-a.steal) / float64(b.total-a.total)
	}
	if wall > 0 {
		u.ServerCores = (b.server - a.server) / wall // NaN stays NaN
		u.GeneratorCores = (b.self - a.self).Seconds() / wall
	}
	return u
}
