package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"time"
)

// pageData is what index.html shows.
type pageData struct {
	Generated string
	Runs      int
	Overview  []figure      // plots across all runs
	Targets   *targetsTable // nil when no run is judged against the targets
	// TargetsIntro introduces the Targets section.
	TargetsIntro string
	Sections     []section
}

type section struct {
	ID      string // anchor
	Table   table
	Figures []figure
	Runs    []runView
}

type runView struct {
	Label  string
	Run    Run
	Params [][2]string
	Plot   *figure
}

func renderIndex(now time.Time, runs []Run, tabs []table, overview []figure, figs [][]figure, extras map[string]*runExtra) ([]byte, error) {
	d := pageData{Generated: now.UTC().Format(time.RFC3339), Runs: len(runs), Overview: overview, Targets: targetsOf(runs), TargetsIntro: targetsIntro}
	ids := map[string]bool{}
	for i, t := range tabs {
		id := "s-" + slug(t.Title)
		for n := 2; ids[id]; n++ {
			id = "s-" + slug(t.Title) + "-" + strconv.Itoa(n)
		}
		ids[id] = true
		s := section{ID: id, Table: t, Figures: figs[i]}
		for j, r := range t.Runs {
			x := extras[r.ID]
			s.Runs = append(s.Runs, runView{Label: t.Labels[j], Run: r, Params: params(r, x), Plot: x.Plot})
		}
		d.Sections = append(d.Sections, s)
	}
	var b bytes.Buffer
	if err := indexTemplate.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("report: rendering %s: %w", indexHTML, err)
	}
	return b.Bytes(), nil
}

// params lists a run's parameters and counts for its details on the page.
func params(r Run, x *runExtra) [][2]string {
	out := [][2]string{
		{"id", r.ID},
		{"mode", r.Mode},
		{"transport", r.Transport},
		{"schedule", r.Schedule},
		{"congestion control", r.CC},
		{"workload", r.Workload},
		{"bottleneck", fmtBps(float64(r.RateBps))},
		{"RTT", fmtMs(r.RTTMs)},
		{"queue limit", fmtMs(r.QueueMs)},
		{"loss", fmtLoss(r.Loss)},
		{"measured", fmtSec(r.DurationS) + " after " + fmtSec(r.WarmupS) + " warm-up"},
	}
	if r.JitterMs > 0 {
		out = append(out, [2]string{"jitter", fmtMs(r.JitterMs)})
	}
	if r.Writes > 0 {
		out = append(out, [2]string{"writes", strconv.Itoa(r.Writes)})
	}
	if r.Frames > 0 {
		out = append(out, [2]string{"frames", strconv.Itoa(r.Frames)})
	}
	if x != nil && x.Lines > 0 {
		out = append(out, [2]string{"record lines", strconv.Itoa(x.Lines)})
	}
	return out
}

var indexTemplate = template.Must(template.New(indexHTML).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Experiment results</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 78em; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #ddd; text-align: left; white-space: nowrap; }
th { background: #f3f3f3; }
.num { text-align: right; }
.cond, figcaption, dt { color: #555; }
.ratio { font-weight: 600; }
.scroll { overflow-x: auto; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0 1em; margin: 0.5em 0 0.5em 1.5em; }
dd { margin: 0; }
</style>
</head>
<body>
<h1>Experiment results</h1>
<p>Generated {{.Generated}} from {{.Runs}} runs. Data: <a href="summary.json">summary.json</a>, <a href="summary.md">summary.md</a>.</p>
<ul>
{{- if .Targets}}
<li><a href="#targets">Targets</a></li>
{{- end}}
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Table.Title}}</a></li>
{{- end}}
</ul>
{{- with .Targets}}
<section id="targets">
<h2>Targets</h2>
<p class="cond">{{$.TargetsIntro}}</p>
<table>
<thead><tr>{{range .CountHeader}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Counts}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
<div class="scroll"><table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
</section>
{{- end}}
{{- with .Overview}}
<section id="overview">
<h2>Across runs</h2>
{{- range .}}
<figure><a href="{{.File}}"><img src="{{.File}}" alt="{{.Caption}}"></a><figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
</section>
{{- end}}
{{- range .Sections}}
{{- $num := .Table.Numeric}}
<section id="{{.ID}}">
<h2>{{.Table.Title}}</h2>
{{- with .Table.Conditions}}
<p class="cond">{{.}}</p>
{{- end}}
<div class="scroll"><table>
<thead><tr>{{range $i, $h := .Table.Header}}<th{{if index $num $i}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Table.Rows}}
<tr>{{range $i, $c := .}}<td{{if index $num $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- range .Table.Ratios}}
<p class="ratio">{{.}}</p>
{{- end}}
{{- with .Table.Notes}}
<ul class="notes">
{{- range .}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
{{- range .Figures}}
<figure><a href="{{.File}}"><img src="{{.File}}" alt="{{.Caption}}"></a><figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
<h3>Runs</h3>
{{- range .Runs}}
<details><summary>{{.Label}}</summary>
<dl>
{{- range .Params}}
<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>
{{- end}}
</dl>
{{- with .Plot}}
<figure><a href="{{.File}}"><img src="{{.File}}" alt="{{.Caption}}" loading="lazy"></a><figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
</details>
{{- end}}
</section>
{{- end}}
</body>
</html>
`))
