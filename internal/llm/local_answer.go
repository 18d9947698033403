package llm

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Labels of the local provider's chat texts: its answers are not a
// model's, and say so.
const (
	// LocalExtractiveLabel opens every grounded answer of the local
	// provider.
	LocalExtractiveLabel = "Extractive answer (local provider):"
	// LocalSummaryLabel opens every summary of the local provider.
	LocalSummaryLabel = "Summary (local provider):"
	// localAnswerSentences bounds the sentences an extractive answer quotes.
	localAnswerSentences = 3
	// localSummaryChars bounds each line of a local summary.
	localSummaryChars = 200
)

var (
	localSourceRe   = regexp.MustCompile(`(?s)<source index="(\d+)"[^>]*>\n(.*?)\n</source>`) //nolint:gochecknoglobals // compiled pattern, constant
	localQuestionRe = regexp.MustCompile(`(?s)<question>\n(.*?)\n</question>`)                //nolint:gochecknoglobals // compiled pattern, constant
	// localMarkerRe matches what reads as a citation marker inside a
	// source's own text (a document's "[3]"): dropped from quotes, so that
	// it cannot pass for a citation of the answer.
	localMarkerRe = regexp.MustCompile(`\s*\[\d{1,3}\]`) //nolint:gochecknoglobals // compiled pattern, constant
)

// localStopWords are the function words a question's words are matched
// without.
const localStopWords = `a about after all also am an and any are as at be been before being but by can could did do does
for from had has have how i if in into is it its me more most my no not of on or our please said say says she so some
tell than that the their them then there these they this those to was we were what when where which who whom whose why
will with would you your`

// chatText answers the chat purposes that need no planner (the contract
// is at PurposeGroundedAnswer and PurposeSummary), streamed word by word.
func (c *localClient) chatText(start time.Time, req ChatRequest, text string) (*ChatResult, error) {
	res := &ChatResult{Model: LocalGenerateModel}
	if req.Purpose == PurposeSummary {
		res.Text = localSummary(text)
	} else {
		res.Text = localExtract(text)
	}
	if err := streamWords(req.OnDelta, res.Text); err != nil {
		return nil, err
	}
	res.Usage = Usage{InputText: req.EstimatedInputTokens(), Output: EstimateTokens(res.Text)}
	res.Duration = c.now().Sub(start)
	return res, nil
}

// localExtract is the extractive answer: the sentences of the sources that
// share the most question words (at least one, and at least three quarters
// as many as the best: at half, sentences about other things sharing the
// question's common words came in), best first, at most
// localAnswerSentences, each followed by its source's marker.
func localExtract(text string) string {
	q := ""
	if m := localQuestionRe.FindStringSubmatch(text); m != nil {
		q = UnescapePromptText(m[1])
	}
	want := map[string]bool{}
	for _, w := range StemWords(q) {
		want[w] = true
	}
	type candidate struct {
		sentence     string
		source, rank int
		score        int
	}
	var cands []candidate
	for _, m := range localSourceRe.FindAllStringSubmatch(text, -1) {
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		for i, s := range Sentences(localMarkerRe.ReplaceAllString(UnescapePromptText(m[2]), "")) {
			seen := map[string]bool{}
			for _, w := range StemWords(s) {
				if want[w] {
					seen[w] = true
				}
			}
			if len(seen) > 0 {
				cands = append(cands, candidate{sentence: s, source: idx, rank: i, score: len(seen)})
			}
		}
	}
	if len(cands) == 0 {
		return LocalExtractiveLabel + " the retrieved sources do not answer this question."
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	best := cands[0].score
	var b strings.Builder
	b.WriteString(LocalExtractiveLabel + " the passages that best match the question.\n")
	quoted := map[string]bool{}
	n := 0
	for _, c := range cands {
		if n == localAnswerSentences || 4*c.score < 3*best {
			break
		}
		if quoted[c.sentence] {
			continue
		}
		quoted[c.sentence] = true
		fmt.Fprintf(&b, "\n- %s [%d]", c.sentence, c.source)
		n++
	}
	return b.String()
}

// localSummary keeps the first sentence of each paragraph of a
// transcript, each at most localSummaryChars.
func localSummary(text string) string {
	var b strings.Builder
	b.WriteString(LocalSummaryLabel)
	for para := range strings.SplitSeq(text, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		role, rest, ok := strings.Cut(para, ": ")
		if !ok {
			role, rest = "", para
		}
		first := rest
		if ss := Sentences(rest); len(ss) > 0 {
			first = ss[0]
		}
		if r := []rune(first); len(r) > localSummaryChars {
			first = string(r[:localSummaryChars]) + "…"
		}
		if role != "" {
			first = role + ": " + first
		}
		b.WriteString("\n- " + first)
	}
	return b.String()
}

// Sentences splits text into sentences: at line breaks and after ".",
// "!" or "?" followed by white space; heading marks ("#") and list marks
// ("-", "*") at the start of a line are dropped, white space is folded.
func Sentences(text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#-*>|"))
		start := 0
		rs := []rune(line)
		for i, r := range rs {
			if (r == '.' || r == '!' || r == '?') && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])) {
				if s := strings.Join(strings.Fields(string(rs[start:i+1])), " "); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.Join(strings.Fields(string(rs[start:])), " "); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// StemWords returns the words of s that carry meaning, lower-cased and
// crudely stemmed (a plural or verb ending removed), stop words left out:
// what the local provider and chat citations compare texts by.
func StemWords(s string) []string {
	stop := map[string]bool{}
	for _, w := range strings.Fields(localStopWords) {
		stop[w] = true
	}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if stop[w] || len(w) < 2 {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem removes one common English ending from words longer than four
// letters.
func stem(w string) string {
	if len(w) <= 4 {
		return w
	}
	for _, suf := range []string{"ing", "ies", "ed", "s"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 4 {
			if suf == "ies" {
				return w[:len(w)-3] + "y"
			}
			return w[:len(w)-len(suf)]
		}
	}
	return w
}
