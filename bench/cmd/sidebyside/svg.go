package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Series is one line of the plot: points (x, y), both positive, drawn in Color.
type Series struct {
	Name   string
	Color  string
	Points [][2]float64
}

// Plot is a line plot with logarithmic axes, written as SVG by WriteSVG.
type Plot struct {
	Title, XLabel, YLabel string
	Series                []Series
}

const (
	plotW, plotH                   = 640, 420
	padL, padR, padT, padB float64 = 72, 24, 40, 56
)

// decades returns the round numbers (1, 2 or 5 times a power of ten) that bracket [lo, hi]
// most closely.
func decades(lo, hi float64) (from, to float64) {
	from = math.Pow(10, math.Floor(math.Log10(lo)))
	for _, m := range []float64{5, 2} {
		if v := from * m; v <= lo {
			from = v
			break
		}
	}
	to = math.Pow(10, math.Ceil(math.Log10(hi)))
	for _, m := range []float64{0.2, 0.5} {
		if v := to * m; v >= hi {
			to = v
			break
		}
	}
	return from, to
}

// logScale maps v in [lo, hi] (powers of ten) onto [a, b] logarithmically.
func logScale(v, lo, hi, a, b float64) float64 {
	return a + (b-a)*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
}

// bounds returns the decades that bracket every point of every series.
func (p Plot) bounds() (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			x0, x1 = min(x0, pt[0]), max(x1, pt[0])
			y0, y1 = min(y0, pt[1]), max(y1, pt[1])
		}
	}
	x0, x1 = decades(x0, x1)
	y0, y1 = decades(y0, y1)
	return x0, x1, y0, y1
}

// WriteSVG writes the plot: a grid line per decade (and at 2 and 5 within it), a polyline
// with a dot per point for each series, a legend, and the labels.
func (p Plot) WriteSVG(w io.Writer) error {
	x0, x1, y0, y1 := p.bounds()
	if x0 <= 0 || y0 <= 0 || math.IsInf(x0, 0) || math.IsInf(y0, 0) {
		return fmt.Errorf("sidebyside: a log plot needs positive points")
	}
	sx := func(v float64) float64 { return logScale(v, x0, x1, padL, plotW-padR) }
	sy := func(v float64) float64 { return logScale(v, y0, y1, plotH-padB, padT) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%g" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", (padL+plotW-padR)/2, esc(p.Title))
	gridLines(x0, x1, func(v float64) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", sx(v), padT, sx(v), plotH-padB)
	}, func(v float64) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", sx(v), plotH-padB+16, human(v))
	})
	gridLines(y0, y1, func(v float64) {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", padL, sy(v), plotW-padR, sy(v))
	}, func(v float64) {
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, sy(v)+4, human(v))
	})
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n", padL, padT, plotW-padR-padL, plotH-padB-padT)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", (padL+plotW-padR)/2, float64(plotH)-14, esc(p.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (padT+plotH-padB)/2, esc(p.YLabel))
	for i, s := range p.Series {
		var pts []string
		for _, pt := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(pt[0]), sy(pt[1])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", sx(pt[0]), sy(pt[1]), s.Color)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.Color)
		ly := padT + 18 + 18*float64(i)
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/>`+"\n", padL+12, ly-4, padL+36, ly-4, s.Color)
		fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", padL+42, ly, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// gridLines calls line for every 1, 2 and 5 times a power of ten in [lo, hi], and label for
// the powers of ten, the ends, and, when the range spans at most two decades, the 2s and 5s
// too.
func gridLines(lo, hi float64, line, label func(float64)) {
	few := hi/lo <= 100
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v < lo*0.9999 || v > hi*1.0001 {
				continue
			}
			line(v)
			if m == 1 || few || v == lo || v == hi {
				label(v)
			}
		}
	}
}

// human writes v shortly: 150k, 1M, 0.5, 20.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".0") }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
