package ui

import (
	"fmt"
	"hash/fnv"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// Charts are drawn on the server as SVG: bars from the overview's fixed
// buckets, a <title> per bar for its figures (a tooltip, no script), and
// classes for colours (the stylesheet's), never a style attribute.

const (
	chartW   = 720
	chartH   = 96
	chartTop = 12 // room for the maximum's label
	chartBot = 16 // room for the time axis
)

// layer is one stacked series of a chart: its class and counts.
type layer struct {
	Name   string
	Class  string
	Counts []uint64
}

// barChart draws stacked bars, one per bucket of s, from the layers
// (bottom first). Each bucket's label is its start time.
func barChart(title string, s apitypes.Series, layers []layer) template.HTML {
	n := 0
	for _, l := range layers {
		n = max(n, len(l.Counts))
	}
	step := time.Duration(s.StepSeconds) * time.Second
	var peak uint64
	for i := 0; i < n; i++ {
		var sum uint64
		for _, l := range layers {
			if i < len(l.Counts) {
				sum += l.Counts[i]
			}
		}
		peak = max(peak, sum)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, chartH, chartW, chartH, html.EscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(title))
	plot := float64(chartH - chartTop - chartBot)
	fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%d" x2="%d" y2="%d"/>`, chartH-chartBot, chartW, chartH-chartBot)
	if n > 0 {
		slot := float64(chartW) / float64(n)
		gap := min(2.0, slot/4)
		for i := 0; i < n; i++ {
			start := s.Start.Add(time.Duration(i) * step).UTC()
			x := float64(i)*slot + gap/2
			y := float64(chartH - chartBot)
			var parts []string
			for _, l := range layers {
				if i >= len(l.Counts) || l.Counts[i] == 0 {
					continue
				}
				c := l.Counts[i]
				hgt := plot * float64(c) / float64(max(peak, 1))
				hgt = max(hgt, 1)
				y -= hgt
				fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, l.Class, x, y, slot-gap, hgt)
				parts = append(parts, fmt.Sprintf("%d %s", c, l.Name))
			}
			if len(parts) == 0 {
				parts = []string{"none"}
			}
			// A hit area over the whole bucket carries its tooltip.
			fmt.Fprintf(&b, `<rect class="hit" x="%.1f" y="0" width="%.1f" height="%d"><title>%s %s: %s</title></rect>`,
				x, slot, chartH-chartBot, bucketLabel(start, step), "UTC", html.EscapeString(strings.Join(parts, ", ")))
		}
		first := s.Start.UTC()
		last := s.Start.Add(time.Duration(n) * step).UTC()
		fmt.Fprintf(&b, `<text class="lbl" x="0" y="%d">%s</text>`, chartH-3, bucketLabel(first, step))
		fmt.Fprintf(&b, `<text class="lbl end" x="%d" y="%d">%s</text>`, chartW, chartH-3, bucketLabel(last, step))
	}
	fmt.Fprintf(&b, `<text class="lbl" x="0" y="10">max %d</text>`, peak)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// bucketLabel names a bucket by its start: the time of day for minutes,
// with the date for hours (a day's series spans two dates).
func bucketLabel(t time.Time, step time.Duration) string {
	if step >= time.Hour {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("15:04")
}

// seriesLayers are a series' layers: accepted, and each failure code.
func seriesLayers(s apitypes.Series) (accepted []layer, failures []layer) {
	accepted = []layer{{Name: "accepted", Class: "acc", Counts: s.Accepted}}
	for _, c := range s.Failures {
		failures = append(failures, layer{Name: string(c.Code), Class: codeClass(c.Code), Counts: c.Counts})
	}
	return accepted, failures
}

// codeClass is an error code's colour class, the same on every chart and
// legend: one of six, by the code's hash.
func codeClass(c protocol.Code) string {
	h := fnv.New32a()
	h.Write([]byte(c))
	return fmt.Sprintf("f%d", h.Sum32()%6)
}
