package llm

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The local provider's named-entity heuristics. Text is split into
// sentences, sentences into word tokens; runs of capitalised words (joined
// by "of", "for", "de", ...) are candidate names. Each mention collects
// evidence for a class from its words (organisation, place and event
// suffixes, honorifics, known first names and places, acronyms) and its
// context (a preposition before it, a verb after it, a role or employer
// phrase around it); an entity takes the class its mentions support most,
// Concept when nothing does. The analysis prefers precision: all-caps
// words, identifiers from code (snake_case, camelCase, file names), common
// words opening a sentence, heading or table cell, and numbers are not
// names; a single capitalised word opening a clause or in a heading counts
// only when the name also appears elsewhere with evidence; "Name of
// Organization" is split into a person and an organization; and a Concept
// is kept only when it looks like a product name (PostgreSQL) or is
// written capitalised mid-sentence more than once. Everything is ordered
// by position, so the same text always gives the same result.

// Entity classes of the local analysis.
const (
	classPerson       = "Person"
	classOrganization = "Organization"
	classLocation     = "Location"
	classEvent        = "Event"
	classConcept      = "Concept"
)

// lexicon holds the word lists of the heuristics, lower-case.
type lexicon struct {
	firstNames, places, honorifics, roles, ignore, techAcronyms map[string]bool
	orgSuffixes, orgHeads, locSuffixes, locHeads, eventSuffixes map[string]bool
	dateWords, startWords, connectors, personVerbs, workWords   map[string]bool
	orgVerbs, locPreps, eventPreps, orgAbbrevs, abbrevs         map[string]bool
	common, pronouns, orgSubjectVerbs, personPassives           map[string]bool
	occupations                                                 map[string]bool
}

// wordSet is the set of the space-separated words of words.
func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func newLexicon() *lexicon {
	places := map[string]bool{}
	for _, p := range strings.Split(lexPlaces, ",") {
		if p = strings.TrimSpace(p); p != "" {
			places[p] = true
		}
	}
	return &lexicon{
		firstNames: wordSet(lexFirstNames),
		places:     places,
		honorifics: wordSet("mr mrs ms miss mx dr prof professor sir dame lord lady rev president senator judge captain"),
		common:     wordSet(lexCommonWords),
		pronouns:   wordSet("he she his her him"),
		// "Walter Greaves, a fisherman", "the engineer, Rosalind Achebe".
		occupations: wordSet(lexOccupations),
		// An all-caps word is an organization only as the subject of one
		// of these ("IBM acquired ...") or after orgVerbs ("joined IBM").
		orgSubjectVerbs: wordSet("acquired acquires bought buys announced announces hired hires employs launched launches released releases sued sues reported reports"),
		// "<name> was born", "<name> is married".
		personPassives: wordSet("born raised educated married appointed elected knighted buried"),
		roles:          wordSet("ceo cto cfo coo cio cmo vp svp evp founder cofounder co-founder chairman chairwoman chair director minister governor mayor"),
		ignore:         wordSet("i ceo cto cfo coo cio cmo vp svp evp phd mba ok faq tbd etc am pm gmt utc kib mib gib tib kb mb gb tb"),
		techAcronyms:   wordSet("api apis sql json xml html css http https pdf csv url uri ai ml llm llms gpu cpu ram ssd os ui ux sdk cli rest grpc tcp ip dns vm vms iot nlp kpi roi saas"),
		orgSuffixes:    wordSet(lexOrgSuffixes),
		orgHeads:       wordSet("university institute bank college ministry department academy society council museum school federation bureau office"),
		locSuffixes:    wordSet("city town village county state province region district river lake sea ocean bay gulf island islands mountain mountains valley desert forest park street avenue road boulevard square bridge coast peninsula harbor harbour canyon falls hills beach"),
		locHeads:       wordSet("mount lake cape port fort isle"),
		eventSuffixes:  wordSet("conference summit symposium workshop festival olympics games championship championships cup war revolution election elections expo exhibition forum congress convention meeting hackathon awards ceremony marathon tournament crisis pandemic fair launch treaty agreement accord"),
		dateWords:      wordSet("january february march april may june july august september october november december monday tuesday wednesday thursday friday saturday sunday"),
		startWords:     wordSet(lexStartWords),
		connectors:     wordSet("of for de del della da di von van der den la le du"),
		personVerbs:    wordSet("said says told wrote explained announced argued added noted stated founded co-founded cofounded joined leads led met married believes thinks who praised recalled smiled laughed replied died retired presented taught"),
		workWords:      wordSet("works worked working work employed hired ceo cto cfo founder cofounder co-founder director head engineer president chairman manager scientist researcher professor student intern employee member team staff"),
		orgVerbs:       wordSet("joined acquired founded co-founded cofounded"),
		locPreps:       wordSet("in at from near across throughout outside inside around"),
		eventPreps:     wordSet("during attended attend attending hosted hosting organized organised"),
		orgAbbrevs:     wordSet("inc ltd corp co llc plc"),
		abbrevs:        wordSet("mr mrs ms mx dr prof st jr sr vs etc e.g i.e no fig approx mt gen col capt rev sen"),
	}
}

const lexFirstNames = `aaron adam adrian ahmed aisha alan albert alex alexander alexandra alice alicia amanda amelia amy ana andrea andrew angela anna anne anthony antonio arthur barbara ben benjamin bill bob brian carl carlos carol caroline catherine charles charlotte chris christian christina christopher claire daniel david deborah diana diego dmitri donald dorothy edward elena elizabeth ella emily emma eric erik eva fatima fernando frank george grace hannah hans harry helen henry hiroshi igor isaac isabella jack jacob james jane janet jason jean jennifer jessica jim joan joe johann john jonathan jose joseph juan julia julie karen kate katherine kevin laura leo linda lisa lucas lucy luis maria marie mark martin mary matthew michael michelle mohammed muhammad nancy natalie nicholas nina noah olga oliver olivia omar patricia paul peter philip priya rachel raj ravi rebecca richard robert roberto ruth ryan sam samuel sandra sara sarah sean sergey sophia sophie stephen steve steven susan thomas tim timothy tom victoria wei william yuki`

const lexOccupations = `accountant actor actress architect artist author baker banker biologist captain carpenter chef chemist clerk coach composer cook correspondent curator dancer dentist designer detective developer diplomat doctor driver economist editor electrician engineer explorer farmer fisherman geologist historian inventor journalist judge lawyer lecturer librarian mathematician mechanic merchant midwife miner musician novelist nurse officer painter pharmacist philosopher photographer physician physicist pilot playwright poet politician priest producer programmer psychologist publisher reporter sailor scholar sculptor singer soldier spokesman spokeswoman spokesperson surgeon tailor teacher translator veterinarian weaver widow writer`

const lexPlaces = `afghanistan, africa, alaska, amsterdam, argentina, asia, athens, atlanta, australia, austria, bangalore, bangkok, barcelona, beijing, belgium, berlin, boston, brazil, brussels, budapest, buenos aires, cairo, california, canada, chicago, chile, china, colombia, copenhagen, cuba, delhi, denmark, dubai, dublin, egypt, england, europe, finland, florence, france, frankfurt, geneva, germany, greece, hamburg, helsinki, hong kong, india, indonesia, iran, iraq, ireland, israel, istanbul, italy, jakarta, japan, kenya, korea, lagos, lisbon, london, los angeles, madrid, malaysia, manchester, mexico, miami, milan, montreal, moscow, mumbai, munich, nairobi, netherlands, new york, new zealand, nigeria, norway, oslo, pakistan, paris, peru, philippines, poland, portugal, prague, rome, russia, san francisco, santiago, sao paulo, scotland, seattle, seoul, shanghai, singapore, south africa, spain, stockholm, sweden, switzerland, sydney, taiwan, texas, thailand, tokyo, toronto, turkey, ukraine, united kingdom, united states, usa, uk, us, u.s, u.k, uae, vancouver, vienna, vietnam, wales, warsaw, washington, zurich`

const lexOrgSuffixes = `inc incorporated corp corporation co company ltd limited llc llp plc gmbh ag sa nv bv oy ab kk spa srl pty university institute foundation association agency bank group labs laboratories laboratory college school ministry department council society committee commission authority organization organisation federation union alliance consortium partners holdings ventures capital technologies industries enterprises airlines motors pharmaceuticals therapeutics studios press trust fund hospital clinic museum library academy bureau board party club center centre analytics systems software solutions networks media works optics logistics robotics maritime shipping railways energy telecom insurance herald times gazette tribune chronicle journal`

const lexStartWords = `the a an this that these those there here it its he she they we you his her their our my your in on at by for from to of with as after before during when while since until although though because if however meanwhile moreover furthermore additionally also then later today yesterday tomorrow now first second third finally next last each every both many most some several all any no not but and or so yet according under over into through like unlike about above below between among within without across along around despite instead thus hence therefore still even just only such what which who whom whose where why how`

// span is a byte range of the text.
type span struct{ start, end int }

// token is a word of a sentence.
type token struct {
	text       string // as written, without a possessive 's
	lower      string
	start, end int    // byte offsets in the text
	gap        string // non-space characters between the previous token and this one
	possessive bool
}

func (t token) capitalised() bool {
	r, _ := utf8.DecodeRuneInString(t.text)
	return unicode.IsUpper(r)
}

// acronym: two or more letters, all upper case ("IBM", "AT&T", "U.S").
func (t token) acronym() bool {
	letters := 0
	for _, r := range t.text {
		switch {
		case unicode.IsLetter(r):
			if !unicode.IsUpper(r) {
				return false
			}
			letters++
		case unicode.IsDigit(r), r == '&', r == '.', r == '-':
		default:
			return false
		}
	}
	return letters >= 2
}

// identifier: a word from code rather than prose: snake_case, a file
// name ("CONTRIBUTING.md"), camelCase ("accountId"), CamelCase made of
// capitalised words ("TransferRequest"), or letters around digits
// ("UTF8String"). "PostgreSQL" (an all-caps part) and "McDonald" are not.
func (t token) identifier() bool {
	if strings.ContainsAny(t.text, "_=/") {
		return true
	}
	if i := strings.LastIndexByte(t.text, '.'); i > 0 && i < len(t.text)-1 {
		if r, _ := utf8.DecodeRuneInString(t.text[i+1:]); unicode.IsLower(r) {
			return true
		}
	}
	var prev rune
	humps, letters, digitInside := 0, 0, false
	for i, r := range t.text {
		switch {
		case unicode.IsDigit(r):
			if letters > 0 && i < len(t.text)-1 {
				digitInside = true
			}
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(prev):
			humps++
		}
		if unicode.IsLetter(r) {
			letters++
		}
		prev = r
	}
	if digitInside && letters > 1 && !t.acronym() {
		return true
	}
	first, _ := utf8.DecodeRuneInString(t.text)
	if humps == 0 {
		return false
	}
	if unicode.IsLower(first) {
		return true
	}
	// CamelCase of capitalised words: every capital followed by a lower-case
	// letter, and not a name prefix (Mc, Mac, De, La, Van, O').
	for _, p := range []string{"Mc", "Mac", "De", "Di", "La", "Le", "Van", "Von", "O'"} {
		if strings.HasPrefix(t.text, p) {
			return false
		}
	}
	rs := []rune(t.text)
	for i, r := range rs {
		if unicode.IsUpper(r) && (i+1 >= len(rs) || !unicode.IsLower(rs[i+1])) {
			return false
		}
	}
	return true
}

// number: digits with separators ("3.2", "1,250").
func (t token) number() bool {
	r, _ := utf8.DecodeRuneInString(t.text)
	return unicode.IsDigit(r)
}

func (t token) year() bool {
	if len(t.text) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		if t.text[i] < '0' || t.text[i] > '9' {
			return false
		}
	}
	return t.text[0] == '1' || (t.text[0] == '2' && t.text[1] == '0')
}

// mention is one occurrence of a candidate name.
type mention struct {
	key, name string
	sentence  int
	start     int
	end       int
	evidence  map[string]float64 // class -> strength; empty: no evidence
	// weak: without evidence, a single word opening a clause or any name
	// in a heading; kept only when the name is found elsewhere.
	weak bool
}

// entity groups the mentions of one name.
type entity struct {
	key, name string
	class     string
	strength  map[string]float64
	best      map[string]float64
	mentions  []*mention
	first     int
}

func (e *entity) confidence() float64 {
	c := e.best[e.class]
	if c == 0 {
		c = 0.5
	}
	c += 0.05 * float64(len(e.mentions)-1)
	return round2(min(0.9, max(0.5, c)))
}

func round2(f float64) float64 {
	return float64(int(f*100+0.5)) / 100
}

// analysis is the result of analyse.
type analysis struct {
	text      string
	sentences []span
	entities  []*entity // by first mention
	// inSentence lists the entities of each sentence, by first mention
	// there.
	inSentence [][]sentenceEntity
}

// analyse finds the named entities of text.
func analyse(text string, lex *lexicon) *analysis {
	a := &analysis{text: text, sentences: splitSentences(text, lex)}
	headings := headingSpans(text)
	var mentions []*mention
	var prevFirst *mention
	for si, s := range a.sentences {
		toks := tokenize(text, s)
		heading := slices.ContainsFunc(headings, func(h span) bool { return s.start >= h.start && s.end <= h.end })
		ms := findMentions(toks, si, heading, lex)
		// "Elias Thornbury was born ... His father ...": a name opening a
		// sentence that the next one calls he or she is a person's.
		if prevFirst != nil && len(toks) > 0 && lex.pronouns[toks[0].lower] && prevFirst.evidence[classOrganization] == 0 &&
			prevFirst.evidence[classLocation] == 0 && prevFirst.evidence[classEvent] == 0 && strings.Contains(prevFirst.key, " ") {
			prevFirst.evidence[classPerson] = max(prevFirst.evidence[classPerson], 0.7)
			prevFirst.weak = false
		}
		prevFirst = nil
		if len(ms) > 0 && len(toks) > 0 && ms[0].start == toks[0].start {
			prevFirst = ms[0]
		}
		coordinate(text, ms)
		mentions = append(mentions, ms...)
	}
	lowerWords := lowercaseWords(text)
	// Drop weak mentions (without evidence, a single capitalised word
	// opening a clause, or a name in a heading) unless the name also
	// appears with evidence or mid-sentence, alone or as the first or last
	// word of a longer name, and never in lower case.
	strong := map[string]bool{}
	for _, m := range mentions {
		if !m.weak {
			strong[m.key] = true
			// "Johnson" opening a sentence is the Alice Johnson named
			// elsewhere.
			if words := strings.Fields(m.key); len(words) > 1 {
				strong[words[0]] = true
				strong[words[len(words)-1]] = true
			}
		}
	}
	kept := mentions[:0]
	for _, m := range mentions {
		if m.weak && (!strong[m.key] || lowerWords[m.key]) {
			continue
		}
		kept = append(kept, m)
	}
	a.entities = keepNamed(mergeShortNames(group(kept)), lowerWords)
	a.inSentence = entitiesBySentence(a.entities, len(a.sentences))
	return a
}

// headingSpans are the blocks of text (between blank lines) that read as
// headings, captions, bylines, table rows or navigation: at most 12 words
// and no sentence punctuation at the end.
func headingSpans(text string) []span {
	var out []span
	start := 0
	for start < len(text) {
		end := strings.Index(text[start:], "\n\n")
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		block := strings.TrimSpace(text[start:end])
		if block != "" && len(strings.Fields(block)) <= 12 && !strings.ContainsAny(block[len(block)-1:], ".!?\"”") {
			out = append(out, span{start, end})
		}
		start = end + 2
	}
	return out
}

// coordinate gives a mention without evidence the class of the mention it
// is listed with ("from Kestrel Bay and Dunmore"), a little weaker. A
// comma is not enough: "Anselm Rykov, Brindlemoor Institute" is an
// apposition.
func coordinate(text string, ms []*mention) {
	for n := 1; n < len(ms); n++ {
		a, b := ms[n-1], ms[n]
		switch strings.TrimSpace(text[a.end:b.start]) {
		case "and", "or":
		default:
			continue
		}
		for _, pair := range [][2]*mention{{a, b}, {b, a}} {
			from, to := pair[0], pair[1]
			if len(to.evidence) > 0 || len(from.evidence) != 1 {
				continue
			}
			for c, s := range from.evidence {
				if c == classLocation || c == classOrganization {
					to.evidence[c] = min(s, 0.6)
					to.weak = false
				}
			}
		}
	}
}

// keepNamed drops the Concepts that are probably not names: a Concept is
// kept when it is one word written like a product name ("PostgreSQL"),
// or one word written capitalised mid-sentence at least twice
// and never in lower case.
func keepNamed(es []*entity, lowerWords map[string]bool) []*entity {
	out := es[:0]
	for _, e := range es {
		if e.class == classConcept && !conceptName(e, lowerWords) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func conceptName(e *entity, lowerWords map[string]bool) bool {
	if strings.Contains(e.key, " ") || lowerWords[e.key] {
		return false
	}
	// A capital right after a letter: "PostgreSQL", not "Retry-After".
	var prev rune
	for _, r := range e.name {
		if unicode.IsUpper(r) && unicode.IsLetter(prev) {
			return true
		}
		prev = r
	}
	strong := 0
	for _, m := range e.mentions {
		if !m.weak {
			strong++
		}
	}
	return strong >= 2
}

// sentenceEntity is an entity of a sentence and the offset of its first
// mention there.
type sentenceEntity struct {
	e     *entity
	start int
}

// entitiesBySentence lists the entities of each sentence in the order of
// their first mention there.
func entitiesBySentence(es []*entity, n int) [][]sentenceEntity {
	out := make([][]sentenceEntity, n)
	for _, e := range es {
		for _, m := range e.mentions {
			list := out[m.sentence]
			if i := slices.IndexFunc(list, func(x sentenceEntity) bool { return x.e == e }); i >= 0 {
				list[i].start = min(list[i].start, m.start)
				continue
			}
			out[m.sentence] = append(list, sentenceEntity{e, m.start})
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(x, y sentenceEntity) int { return x.start - y.start })
	}
	return out
}

// lowercaseWords is the set of words of text written entirely in lower
// case: a capitalised sentence opener that also occurs in lower case is an
// ordinary word.
func lowercaseWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
		if w == strings.ToLower(w) {
			out[w] = true
		}
	}
	return out
}

// group gathers mentions by key into entities and classifies them.
func group(mentions []*mention) []*entity {
	byKey := map[string]*entity{}
	var out []*entity
	for _, m := range mentions {
		e := byKey[m.key]
		if e == nil {
			e = &entity{key: m.key, name: m.name, first: m.start}
			byKey[m.key] = e
			out = append(out, e)
		}
		e.mentions = append(e.mentions, m)
	}
	for _, e := range out {
		e.classify()
	}
	return out
}

func (e *entity) classify() {
	e.strength = map[string]float64{}
	e.best = map[string]float64{}
	for _, m := range e.mentions {
		for c, s := range m.evidence {
			e.strength[c] += s
			e.best[c] = max(e.best[c], s)
		}
	}
	e.class = classConcept
	bestStrength := 0.0
	// The order breaks ties.
	for _, c := range []string{classOrganization, classPerson, classLocation, classEvent} {
		if s := e.strength[c]; s > bestStrength+1e-9 {
			e.class, bestStrength = c, s
		}
	}
}

// mergeShortNames folds a one-word entity into the one multi-word Person
// whose last word, or Organization whose first word, it is ("Curie" into
// "Marie Curie", "Acme" into "Acme Corp").
func mergeShortNames(es []*entity) []*entity {
	var out []*entity
	for _, e := range es {
		if strings.Contains(e.key, " ") {
			continue
		}
		var target *entity
		n := 0
		for _, o := range es {
			words := strings.Fields(o.key)
			if len(words) < 2 {
				continue
			}
			if (o.class == classPerson && words[len(words)-1] == e.key) || (o.class == classOrganization && words[0] == e.key) {
				target = o
				n++
			}
		}
		if n == 1 && (e.class == classConcept || e.class == target.class) {
			target.mentions = append(target.mentions, e.mentions...)
			slices.SortFunc(target.mentions, func(x, y *mention) int { return x.start - y.start })
			target.first = min(target.first, e.first)
			e.mentions = nil
		}
	}
	for _, e := range es {
		if len(e.mentions) > 0 {
			e.classify()
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(x, y *entity) int { return x.first - y.first })
	return out
}

// splitSentences splits text at sentence ends (., !, ? followed by space
// and not ending an abbreviation or initial) and at line breaks that do not
// fall inside running text.
func splitSentences(text string, lex *lexicon) []span {
	var out []span
	start := 0
	emit := func(end int) {
		if strings.TrimSpace(text[start:end]) != "" {
			out = append(out, span{start, end})
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\n':
			if lineBreakEndsSentence(text, i) {
				emit(i + 1)
			}
		case '.', '!', '?':
			j := i + 1
			for j < len(text) && (text[j] == '"' || text[j] == '\'' || text[j] == ')' || text[j] == ']') {
				j++
			}
			if j < len(text) && text[j] != ' ' && text[j] != '\n' && text[j] != '\t' && text[j] != '\r' {
				continue
			}
			next := nextWord(text, j)
			if next != "" {
				r, _ := utf8.DecodeRuneInString(next)
				if unicode.IsLower(r) {
					continue
				}
			}
			if c == '.' {
				prev := strings.ToLower(prevWord(text, i))
				if lex.orgAbbrevs[prev] {
					if !lex.startWords[strings.ToLower(next)] {
						continue
					}
				} else if lex.abbrevs[prev] || utf8.RuneCountInString(prev) == 1 || strings.Contains(prev, ".") {
					continue
				}
			}
			emit(j)
			i = j - 1
		}
	}
	emit(len(text))
	return out
}

// lineBreakEndsSentence: a line break between two lower-case letters (or
// after a comma or hyphen) is a wrapped line, any other ends a sentence.
func lineBreakEndsSentence(text string, i int) bool {
	p := i - 1
	for p >= 0 && (text[p] == ' ' || text[p] == '\r' || text[p] == '\t') {
		p--
	}
	n := i + 1
	for n < len(text) && (text[n] == ' ' || text[n] == '\t') {
		n++
	}
	if p < 0 || n >= len(text) {
		return true
	}
	before, _ := utf8.DecodeLastRuneInString(text[:p+1])
	after, _ := utf8.DecodeRuneInString(text[n:])
	if before == ',' || before == '-' {
		return false
	}
	return !unicode.IsLower(before) || !unicode.IsLower(after)
}

func nextWord(text string, i int) string {
	for i < len(text) && !isWordRune(rune(text[i])) && text[i] < utf8.RuneSelf {
		i++
	}
	j := i
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !isWordRune(r) {
			break
		}
		j += size
	}
	return text[i:j]
}

func prevWord(text string, i int) string {
	j := i
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:j])
		if !isWordRune(r) && r != '.' {
			break
		}
		j -= size
	}
	return text[j:i]
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// tokenize returns the words of one sentence. Inner hyphens, apostrophes,
// ampersands and dots join ("co-founded", "AT&T", "U.S").
func tokenize(text string, s span) []token {
	var out []token
	i := s.start
	gapStart := s.start
	for i < s.end {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		start := i
		for i < s.end {
			r, size = utf8.DecodeRuneInString(text[i:])
			if isWordRune(r) {
				i += size
				continue
			}
			if r == '-' || r == '\'' || r == '’' || r == '&' || r == '.' || r == '_' {
				if n, _ := utf8.DecodeRuneInString(text[i+size:]); i+size < s.end && isWordRune(n) {
					i += size
					continue
				}
			}
			break
		}
		t := token{text: text[start:i], start: start, end: i}
		for _, suf := range []string{"'s", "’s"} {
			if len(t.text) > len(suf) && strings.HasSuffix(t.text, suf) {
				t.text = strings.TrimSuffix(t.text, suf)
				t.possessive = true
			}
		}
		t.lower = strings.ToLower(t.text)
		t.gap = strings.Join(strings.Fields(text[gapStart:start]), "")
		out = append(out, t)
		gapStart = i
	}
	return out
}

// clauseStart reports whether toks[i] opens a clause: the first word of
// the sentence (after list numbers), or the first after a colon, a table
// bar or a bullet.
func clauseStart(toks []token, i int) bool {
	if strings.ContainsAny(toks[i].gap, ":|•*#>") {
		return true
	}
	for p := 0; p < i; p++ {
		if !toks[p].number() {
			return false
		}
	}
	return true
}

// findMentions finds the candidate names of one sentence; in a heading
// every mention needs evidence of its own or elsewhere.
func findMentions(toks []token, si int, heading bool, lex *lexicon) []*mention {
	var out []*mention
	startable := func(t token) bool {
		if t.identifier() || lex.ignore[t.lower] {
			return false
		}
		return t.capitalised() && !lex.dateWords[t.lower] || t.acronym()
	}
	for i := 0; i < len(toks); {
		if !startable(toks[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(toks) && !toks[j-1].possessive {
			u := toks[j]
			joined := u.gap == "" || (u.gap == "." && (lex.honorifics[toks[j-1].lower] || utf8.RuneCountInString(toks[j-1].text) == 1))
			if !joined {
				break
			}
			// A capitalised sentence word inside a run is a sentence the
			// parser glued on ("1. Introduction This note ...").
			if startable(u) && !lex.dateWords[u.lower] && !lex.startWords[u.lower] {
				j++
				continue
			}
			// A year ends a name ("World Energy Summit 2024").
			if u.year() && (j+1 == len(toks) || !startable(toks[j+1]) || toks[j+1].gap != "") {
				j++
				break
			}
			// "for" joins an institution's name ("Institute for Advanced
			// Study"), not two names ("from Lisbon for Northwind Labs").
			forName := u.lower != "for" || lex.orgSuffixes[toks[j-1].lower] || lex.orgHeads[toks[j-1].lower]
			if lex.connectors[u.lower] && forName {
				k := j + 1
				if k < len(toks) && toks[k].lower == "the" && toks[k].gap == "" {
					k++
				}
				if k < len(toks) && toks[k].gap == "" && startable(toks[k]) {
					j = k + 1
					continue
				}
			}
			break
		}
		// "Acme, Inc."
		if j < len(toks) && toks[j].gap == "," && lex.orgAbbrevs[toks[j].lower] {
			j++
		}
		clause := clauseStart(toks, i)
		if c := affiliationSplit(toks, i, j, lex); c > 0 {
			// "Professor Kenji Abernathy of Northgate University": a
			// person and the organization they belong to.
			k := c + 1
			if toks[k].lower == "the" {
				k++
			}
			if m := makeMention(toks, i, c, si, clause, heading, lex); m != nil {
				m.evidence[classPerson] = max(m.evidence[classPerson], 0.8)
				m.weak = false
				out = append(out, m)
			}
			if m := makeMention(toks, k, j, si, false, heading, lex); m != nil {
				out = append(out, m)
			}
		} else if m := makeMention(toks, i, j, si, clause, heading, lex); m != nil {
			out = append(out, m)
		}
		i = j
	}
	return out
}

// affiliationSplit returns the index of the "of" that splits toks[i:j]
// into a person and an organization ("Helga Marsh of Corvane Security
// Group"), or 0: the part before has an honorific or two or three words
// that are neither common nor organisation, place or event words, and the
// part after has an organization's suffix or head.
func affiliationSplit(toks []token, i, j int, lex *lexicon) int {
	c := -1
	for p := i + 1; p < j; p++ {
		if toks[p].lower == "of" {
			c = p
			break
		}
	}
	if c < 0 || c+1 >= j {
		return 0
	}
	k := c + 1
	if toks[k].lower == "the" {
		k++
	}
	if k >= j {
		return 0
	}
	first, last := toks[k].lower, toks[j-1].lower
	if !lex.orgSuffixes[last] && !lex.orgHeads[first] {
		return 0
	}
	honorific := false
	words := 0
	for p := i; p < c; p++ {
		w := toks[p].lower
		switch {
		case lex.honorifics[w] || lex.roles[w]:
			honorific = true
		case lex.orgSuffixes[w] || lex.orgHeads[w] || lex.locSuffixes[w] || lex.locHeads[w] || lex.eventSuffixes[w] || lex.places[w]:
			return 0
		case lex.common[w] && !lex.firstNames[w], toks[p].acronym(), toks[p].year():
			return 0
		default:
			words++
		}
	}
	if words == 0 || words > 3 || (!honorific && words < 2) {
		return 0
	}
	return c
}

// makeMention builds the mention of toks[i:j], stripping leading sentence
// words, honorifics, role titles, years and, at the start of a clause,
// common words, and weighs its evidence. It returns nil for what is not a
// name: common words, numbers, and all-caps words (keywords, constants)
// unless context makes one an organization.
func makeMention(toks []token, i, j, si int, clause, heading bool, lex *lexicon) *mention {
	ev := map[string]float64{}
	add := func(c string, s float64) { ev[c] = max(ev[c], s) }
	k := i
strip:
	for ; k < j; k++ {
		w := toks[k].lower
		switch {
		case lex.honorifics[w] && k+1 < j:
			add(classPerson, 0.9)
		case lex.roles[w] && k+1 < j:
			add(classPerson, 0.8)
		case lex.startWords[w], toks[k].year():
		case clause && lex.common[w] && !lex.firstNames[w] && !lex.places[w] && !lex.orgHeads[w] && !lex.locHeads[w]:
		default:
			break strip
		}
	}
	run := toks[k:j]
	if len(run) == 0 {
		return nil
	}
	words := make([]string, len(run))
	caps := 0
	for n, t := range run {
		words[n] = strings.TrimSuffix(t.lower, ".")
		if t.acronym() {
			caps++
		}
	}
	key := strings.Join(words, " ")
	name := run[0].text
	for n := 1; n < len(run); n++ {
		name += " " + run[n].text
	}
	if lex.ignore[key] || lex.startWords[key] {
		return nil
	}
	first, last := words[0], words[len(words)-1]
	multi := len(words) > 1
	if !multi && lex.common[key] && !lex.places[key] && !lex.firstNames[key] {
		return nil
	}
	// Context: the two words before the name (skipping an article) and the
	// two after it, within its table cell.
	var before []string
	for p := k - 1; p >= 0 && len(before) < 2 && !strings.Contains(toks[p+1].gap, "|"); p-- {
		w := toks[p].lower
		if len(before) == 0 && (w == "the" || w == "a" || w == "an") {
			continue
		}
		before = append(before, w)
	}
	before = append(before, "", "")
	prev, prev2 := before[0], before[1]
	var next, next2 string
	appositive := false
	if j < len(toks) && !strings.Contains(toks[j].gap, "|") {
		next = toks[j].lower
		if j+1 < len(toks) && !strings.Contains(toks[j+1].gap, "|") {
			next2 = toks[j+1].lower
		}
		if toks[j].gap == "," {
			role := next
			if (role == "the" || role == "a" || role == "an") && j+1 < len(toks) {
				role = toks[j+1].lower
			}
			appositive = lex.roles[role] || lex.occupations[role]
		}
	}
	orgContext := lex.orgVerbs[prev] || ((prev == "for" || prev == "at" || prev == "by" || prev == "of") && lex.workWords[prev2])
	if caps == len(run) && !lex.places[key] {
		// Keywords and constants (TRUE, NULL, ZEROIZE, SEQUENCE OF): an
		// all-caps word is an organization only as one's subject or
		// object ("IBM acquired", "joined IBM").
		if multi || lex.techAcronyms[key] || (!lex.orgSubjectVerbs[next] && !orgContext) {
			return nil
		}
		add(classOrganization, 0.7)
	}

	switch {
	case lex.orgSuffixes[last] && (multi || run[0].acronym()):
		add(classOrganization, 0.9)
	case multi && lex.orgHeads[first]:
		add(classOrganization, 0.9)
	case multi && slices.ContainsFunc(words[:len(words)-1], func(w string) bool { return lex.orgSuffixes[w] && !lex.orgAbbrevs[w] }) && slices.Contains(words, "of"):
		// "Saltmere Museum of Industry", "Brindlemoor Institute of
		// Technology".
		add(classOrganization, 0.85)
	}
	if multi && lex.eventSuffixes[last] {
		add(classEvent, 0.85)
	}
	if multi && run[len(run)-1].year() {
		add(classEvent, 0.75)
	}
	if multi && (lex.locSuffixes[last] || lex.locHeads[first]) {
		add(classLocation, 0.85)
	}
	if lex.places[key] {
		add(classLocation, 0.85)
	}
	if lex.firstNames[first] && !lex.places[key] {
		if multi {
			add(classPerson, 0.85)
		} else {
			add(classPerson, 0.75)
		}
	}
	if lex.roles[prev] || appositive || (lex.occupations[prev] && k > 0 && toks[k].gap == ",") {
		add(classPerson, 0.8)
	}
	personVerb := lex.personVerbs[next] || ((next == "was" || next == "is") && lex.personPassives[next2])
	if personVerb && len(words) <= 3 && caps == 0 && ev[classOrganization] == 0 && ev[classLocation] == 0 && ev[classEvent] == 0 {
		add(classPerson, 0.7)
	}
	if orgContext && ev[classPerson] == 0 {
		add(classOrganization, 0.8)
	}
	// "in Berlin", "in Wrenfield in 1931", but not "in the Authorization
	// header": a preposition makes a place of a name that no noun follows.
	nounAfter := next != "" && j < len(toks) && toks[j].gap == "" && !toks[j].number() && !lex.startWords[next] && !lex.connectors[next] &&
		!lex.locPreps[next] && next != "and" && next != "or" && next != "on" && !toks[j].capitalised()
	if lex.locPreps[prev] && !orgContext && ev[classLocation] == 0 && !nounAfter {
		add(classLocation, 0.65)
	}
	if lex.eventPreps[prev] || (k > 0 && toks[k-1].year()) {
		add(classEvent, 0.7)
	}
	return &mention{
		key:      key,
		name:     name,
		sentence: si,
		start:    run[0].start,
		end:      run[len(run)-1].end,
		evidence: ev,
		weak:     len(ev) == 0 && ((clause && !multi) || heading),
	}
}
