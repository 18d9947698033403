package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// The phases of graphmill ingest, each with its bar.
const (
	phaseUpload  = "upload"
	phaseParse   = "parse"
	phaseExtract = "extract"
	phaseEmbed   = "embed"
)

// phaseBars shows one progress bar per phase at once. progressbar/v3
// draws one bar per line and has no multi-bar mode, so each phase is a bar
// rendered into io.Discard (its String() is its line) and a host bar, on
// the error stream, shows those lines as its detail rows
// (OptionSetMaxDetailRow, AddDetail), which the library redraws below its
// own line; the host bar counts the phases done. Without a terminal (or
// with --json) nothing is drawn: a line per phase is written when it ends.
type phaseBars struct {
	s        *session
	names    []string
	bars     []*progressbar.ProgressBar
	done     []bool
	host     *progressbar.ProgressBar // nil without a terminal
	finished bool
}

func (s *session) newPhaseBars(names []string) *phaseBars {
	p := &phaseBars{s: s, names: names, done: make([]bool, len(names))}
	for _, name := range names {
		p.bars = append(p.bars, progressbar.NewOptions64(1,
			progressbar.OptionSetWriter(io.Discard),
			progressbar.OptionSetDescription(fmt.Sprintf("%-8s", name)),
			progressbar.OptionShowBytes(name == phaseUpload),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetRenderBlankState(true),
		))
	}
	if !s.json && isTerminal(s.stderr) {
		p.host = progressbar.NewOptions(len(names),
			progressbar.OptionSetWriter(s.stderr),
			progressbar.OptionSetDescription(fmt.Sprintf("%-8s", "ingest")),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetItsString("phases"),
			progressbar.OptionSetMaxDetailRow(len(names)),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	return p
}

// set moves a phase's bar to done of total; final tells that the phase
// has ended (its total will not grow), summary is its line without a
// terminal.
func (p *phaseBars) set(name string, done, total int64, final bool, summary string) {
	for i, n := range p.names {
		if n != name || p.done[i] {
			continue
		}
		if final && total == 0 {
			done, total = 1, 1 // nothing to do: shown as done
		}
		bar := p.bars[i]
		bar.ChangeMax64(max(total, 1))
		_ = bar.Set64(min(done, max(total, 1)))
		if final {
			p.done[i] = true
			_ = bar.Finish()
			if p.host == nil {
				fmt.Fprintf(p.s.stderr, "%s: %s\n", name, summary)
			}
		}
	}
}

// ended is the number of phases that have ended.
func (p *phaseBars) ended() int {
	n := 0
	for _, d := range p.done {
		if d {
			n++
		}
	}
	return n
}

// complete tells whether every phase has ended.
func (p *phaseBars) complete() bool { return p.ended() == len(p.done) }

// draw redraws the phases' lines under the host bar.
func (p *phaseBars) draw() {
	if p.host == nil || p.finished {
		return
	}
	for _, bar := range p.bars {
		_ = p.host.AddDetail(strings.TrimLeft(bar.String(), "\r"))
	}
	_ = p.host.Set(p.ended())
	if p.complete() {
		// The finished host bar has drawn its details and left the
		// cursor after the last one.
		p.finished = true
		fmt.Fprintln(p.s.stderr)
	}
}

// close leaves the terminal below the bars when they did not finish (an
// error or an interrupt).
func (p *phaseBars) close() {
	if p.host == nil || p.finished {
		return
	}
	p.finished = true
	_ = p.host.Exit()
	fmt.Fprint(p.s.stderr, strings.Repeat("\n", len(p.bars)+1))
}
