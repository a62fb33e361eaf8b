package loadgen

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// writeReportFile writes the HTML report of a run to path.
func writeReportFile(path string, cfg Config, s Summary) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := writeReport(f, cfg, s); err != nil {
		f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// writeReport renders a self-contained page: the run's settings and figures, and three plots
// drawn as inline SVG (no script, nothing fetched), so that the file can be mailed, committed
// and opened anywhere.
func writeReport(w io.Writer, cfg Config, s Summary) error {
	var accepted, errs, p50, p95, p99 plotSeries
	accepted = plotSeries{Name: "accepted/s", Color: "#1f77b4"}
	errs = plotSeries{Name: "errors/s", Color: "#d62728"}
	p50 = plotSeries{Name: "p50", Color: "#2ca02c"}
	p95 = plotSeries{Name: "p95", Color: "#ff7f0e"}
	p99 = plotSeries{Name: "p99", Color: "#d62728"}
	prev := time.Duration(0)
	for _, pt := range s.Series {
		x := pt.At.Seconds()
		// Each point covers the interval since the previous one; rate it per second.
		width := (pt.At - prev).Seconds()
		prev = pt.At
		if width <= 0 {
			continue
		}
		accepted.Points = append(accepted.Points, [2]float64{x, float64(pt.Accepted) / width})
		errs.Points = append(errs.Points, [2]float64{x, float64(pt.Errors) / width})
		if len(pt.POST) > 0 {
			p50.Points = append(p50.Points, [2]float64{x, ms(pt.POST[50])})
			p95.Points = append(p95.Points, [2]float64{x, ms(pt.POST[95])})
			p99.Points = append(p99.Points, [2]float64{x, ms(pt.POST[99])})
		}
	}
	resolved := plotSeries{Name: "accept→resolvable, one point per measured operation", Color: "#9467bd", Scatter: true}
	for _, smp := range s.Samples {
		resolved.Points = append(resolved.Points, [2]float64{smp.At.Seconds(), smp.Latency.Seconds()})
	}
	// One time axis for the three plots: the timed phase.
	xMax := s.Elapsed.Seconds()
	if cfg.Duration > 0 {
		xMax = min(xMax, cfg.Duration.Seconds())
	}
	plots := []template.HTML{
		plot{Title: "Accepted operations per second", YUnit: "/s", Series: []plotSeries{accepted, errs}}.svg(xMax),
		plot{Title: "POST latency percentiles, per second", YUnit: "ms", Series: []plotSeries{p50, p95, p99}}.svg(xMax),
		plot{Title: "Accept → resolvable latency, by time of acceptance", YUnit: "s", Series: []plotSeries{resolved}}.svg(xMax),
	}
	fell := 0
	for _, n := range s.FellBack {
		fell += n
	}
	return reportPage.Execute(w, map[string]any{
		"Cfg": cfg, "S": s, "Plots": plots, "Rate": rateString(cfg.Rate),
		"POST":     fmt.Sprintf("p50 %s · p95 %s · p99 %s · max %s", fmtDur(s.POST[50]), fmtDur(s.POST[95]), fmtDur(s.POST[99]), fmtDur(s.POST[100])),
		"Resolve":  fmt.Sprintf("p50 %s · p95 %s · max %s", fmtDur(s.Resolve[50]), fmtDur(s.Resolve[95]), fmtDur(s.Resolve[100])),
		"PerSec":   fmt.Sprintf("%.0f", s.AcceptedPerSec),
		"Errors":   formatCounts(s.Errors),
		"ByType":   formatCounts(s.AcceptedByType),
		"FellBack": fell, "FellBackBy": formatCounts(s.FellBack),
		"Elapsed": s.Elapsed.Round(time.Millisecond).String(),
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var reportPage = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>anchord loadgen: {{.Cfg.Target}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:960px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}
th{font-weight:600;color:#555}svg{display:block;margin:1.5em 0}
</style></head><body>
<h1>anchord loadgen report</h1>
<table>
<tr><th>target</th><td>{{.Cfg.Target}} (DID method {{.Cfg.Method}})</td></tr>
<tr><th>load</th><td>mix {{.Cfg.Mix}}, concurrency {{.Cfg.Concurrency}}, rate {{.Rate}}, duration {{.Cfg.Duration}}{{if .Cfg.Count}}, count {{.Cfg.Count}}{{end}}</td></tr>
<tr><th>sent / accepted</th><td>{{.S.Sent}} / {{.S.Accepted}} in {{.Elapsed}}: <b>{{.PerSec}} accepted/s</b> ({{.ByType}})</td></tr>
<tr><th>POST latency</th><td>{{.POST}}</td></tr>
<tr><th>accept → resolvable</th><td>{{.Resolve}} ({{.S.Followed}} measured, {{.S.FollowTimeouts}} timed out)</td></tr>
<tr><th>errors by status:code</th><td>{{.Errors}}</td></tr>
{{if .S.Usage.Cores}}<tr><th>cpu</th><td>{{.S.Usage}}</td></tr>{{end}}
{{if .FellBack}}<tr><th>mix fell back</th><td>{{.FellBack}} picks sent as creates, no published DID was free ({{.FellBackBy}})</td></tr>{{end}}
</table>
{{range .Plots}}{{.}}{{end}}
<p>x: seconds since the start of the timed phase (a mixed run's warm-up is not shown).</p>
</body></html>
`))

// plotSeries is one line (or cloud of points) of a plot.
type plotSeries struct {
	Name    string
	Color   string
	Points  [][2]float64
	Scatter bool
}

// plot is a small line or scatter chart with linear axes starting at zero.
type plot struct {
	Title  string
	YUnit  string
	Series []plotSeries
}

const (
	plotW, plotH                         = 900, 260
	padLeft, padRight, padTop, padBottom = 60, 20, 30, 40
)

// svg draws the plot over [0, xMax] seconds. Values are numbers the run measured, formatted by
// the code itself; the only text (titles, names) is escaped.
func (p plot) svg(xMax float64) template.HTML {
	maxY := 0.0
	for _, s := range p.Series {
		for _, pt := range s.Points {
			maxY = math.Max(maxY, pt[1])
		}
	}
	xStep, yStep := niceStep(xMax), niceStep(maxY)
	xTop, yTop := math.Ceil(xMax/xStep)*xStep, math.Ceil(maxY/yStep)*yStep
	if yTop == 0 {
		yTop = yStep
	}
	iw, ih := float64(plotW-padLeft-padRight), float64(plotH-padTop-padBottom)
	// The last progress line and the last samples come a little after the timed phase ends,
	// while the last requests finish: they are drawn at its end.
	px := func(x float64) float64 { return padLeft + math.Min(x, xTop)/xTop*iw }
	py := func(y float64) float64 { return padTop + ih - y/yTop*ih }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="15" font-weight="600">%s</text>`, padLeft, template.HTMLEscapeString(p.Title))
	for y := 0.0; y <= yTop+yStep/2; y += yStep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, padLeft, plotW-padRight, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s%s</text>`, padLeft-6, py(y)+4, tick(y), template.HTMLEscapeString(p.YUnit))
	}
	for x := 0.0; x <= xTop+xStep/2; x += xStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%ss</text>`, px(x), plotH-padBottom+16, tick(x))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, padLeft, padTop, iw, ih)
	if maxY == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" fill="#999">no data</text>`, padLeft+iw/2, padTop+ih/2)
	}
	lx := float64(padLeft + 10)
	for _, s := range p.Series {
		if s.Scatter {
			for _, pt := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s" fill-opacity="0.6"/>`, px(pt[0]), py(pt[1]), s.Color)
			}
		} else if len(s.Points) > 0 {
			b.WriteString(`<polyline fill="none" stroke-width="1.8" stroke="` + s.Color + `" points="`)
			for _, pt := range s.Points {
				fmt.Fprintf(&b, "%.1f,%.1f ", px(pt[0]), py(pt[1]))
			}
			b.WriteString(`"/>`)
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="10" height="10" fill="%s"/><text x="%.0f" y="%d" font-size="12">%s</text>`,
			lx, plotH-14, s.Color, lx+14, plotH-5, template.HTMLEscapeString(s.Name))
		lx += 24 + 7*float64(len([]rune(s.Name)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built above from numbers and escaped text
}

// niceStep returns a tick step of 1, 2, 2.5 or 5 times a power of ten that cuts [0, v] into
// at most seven parts.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v/4)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v/(m*exp) <= 7 {
			return m * exp
		}
	}
	return 10 * exp
}

func tick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
