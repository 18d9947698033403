package llm

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Output shapes of the local provider's extraction and discovery.

type extractedObject struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Key         string         `json:"key"`
	Description string         `json:"description"`
	Properties  map[string]any `json:"properties"`
	Confidence  float64        `json:"confidence"`
}

type extractedRelationship struct {
	Type        string  `json:"type"`
	Source      string  `json:"source"`
	Target      string  `json:"target"`
	Description string  `json:"description"`
	Confidence  float64 `json:"confidence"`
}

type extractionOutput struct {
	Objects       []extractedObject       `json:"objects"`
	Relationships []extractedRelationship `json:"relationships"`
}

// classSynonyms lists, for each class, the type names it maps onto, best
// first. An allowed type matches a class when its normalised name equals a
// synonym, or failing that contains one.
func classSynonyms(class string) []string {
	switch class {
	case classPerson:
		return []string{"person", "people", "individual", "human", "employee", "author", "researcher", "scientist", "contact", "member", "user", "character"}
	case classOrganization:
		return []string{"organization", "organisation", "org", "company", "corporation", "business", "institution", "agency", "employer", "university", "vendor", "enterprise", "team"}
	case classLocation:
		return []string{"location", "place", "city", "country", "region", "site", "geo", "area", "venue", "address"}
	case classEvent:
		return []string{"event", "meeting", "conference", "incident", "occurrence", "milestone", "activity"}
	default:
		return []string{"concept", "topic", "idea", "technology", "term", "subject", "theme", "product", "skill", "keyword"}
	}
}

// isGenericType reports whether a normalised type name is a catch-all
// that any class may fall back to.
func isGenericType(norm string) bool {
	switch norm {
	case "entity", "thing", "other", "misc", "miscellaneous", "object", "item":
		return true
	}
	return false
}

// normName lower-cases a type name and drops everything but letters and
// digits ("WORKS_FOR" and "works-for" are both "worksfor").
func normName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mapClass picks the allowed type for class: nil allowed means no
// constraint (the class name itself); "" means none fits.
func mapClass(class string, allowed []string) string {
	if allowed == nil {
		return class
	}
	syn := classSynonyms(class)
	for _, s := range syn {
		for _, a := range allowed {
			if normName(a) == s {
				return a
			}
		}
	}
	for _, s := range syn {
		if len(s) < 4 {
			continue
		}
		for _, a := range allowed {
			if strings.Contains(normName(a), s) {
				return a
			}
		}
	}
	for _, a := range allowed {
		if isGenericType(normName(a)) {
			return a
		}
	}
	return ""
}

// relRule proposes relationship type names for a pair of classes, best
// first; with cues it applies only to sentences containing one of them.
type relRule struct {
	source, target string
	cues           []string
	names          []string
}

func relRules() []relRule {
	p, o, l, e, c := classPerson, classOrganization, classLocation, classEvent, classConcept
	return []relRule{
		{p, o, []string{"founded", "co-founded", "cofounded", "founder", "co-founder", "established"}, []string{"FOUNDED", "FOUNDER_OF", "CO_FOUNDED"}},
		{p, o, []string{"ceo", "cto", "cfo", "director", "president", "chairman", "head", "leads", "led", "manages"}, []string{"LEADS", "CEO_OF", "HEADS", "WORKS_FOR", "EMPLOYED_BY"}},
		{p, o, []string{"studied", "graduated", "student", "alumnus", "alumna", "alumni"}, []string{"STUDIED_AT", "ALUMNUS_OF", "EDUCATED_AT", "AFFILIATED_WITH"}},
		{p, o, nil, []string{"WORKS_FOR", "WORKS_AT", "EMPLOYED_BY", "MEMBER_OF", "AFFILIATED_WITH", "ASSOCIATED_WITH"}},
		{p, l, []string{"born"}, []string{"BORN_IN"}},
		{p, l, []string{"lives", "lived", "resides", "resided", "moved"}, []string{"LIVES_IN", "RESIDES_IN"}},
		{p, l, nil, []string{"LOCATED_IN", "BASED_IN", "LIVES_IN"}},
		{o, l, []string{"headquartered", "headquarters", "hq"}, []string{"HEADQUARTERED_IN", "LOCATED_IN", "BASED_IN"}},
		{o, l, nil, []string{"LOCATED_IN", "BASED_IN", "HEADQUARTERED_IN", "OPERATES_IN"}},
		{e, l, nil, []string{"HELD_IN", "TOOK_PLACE_IN", "TAKES_PLACE_IN", "OCCURRED_IN", "LOCATED_IN"}},
		{l, l, nil, []string{"LOCATED_IN", "PART_OF"}},
		{p, e, nil, []string{"PARTICIPATED_IN", "ATTENDED", "SPOKE_AT"}},
		{o, e, []string{"organized", "organised", "hosted", "sponsored"}, []string{"ORGANIZED", "HOSTED", "SPONSORED"}},
		{o, e, nil, []string{"PARTICIPATED_IN", "ORGANIZED", "SPONSORED"}},
		{o, o, []string{"acquired", "bought", "purchased", "acquisition"}, []string{"ACQUIRED", "OWNS"}},
		{o, o, []string{"subsidiary", "division", "owned"}, []string{"SUBSIDIARY_OF", "PART_OF"}},
		{o, o, []string{"partner", "partners", "partnered", "partnership", "collaborates", "collaborated", "collaboration"}, []string{"PARTNER_OF", "PARTNERS_WITH", "COLLABORATES_WITH"}},
		{p, p, []string{"married", "wife", "husband", "spouse"}, []string{"MARRIED_TO", "SPOUSE_OF"}},
		{p, p, nil, []string{"KNOWS", "WORKS_WITH", "COLLABORATES_WITH", "COLLEAGUE_OF"}},
		{p, c, []string{"works", "working", "worked", "researches", "studies", "develops", "developed", "created", "invented", "expert", "uses", "used"}, []string{"WORKS_ON", "EXPERT_IN", "KNOWS_ABOUT", "RESEARCHES", "USES"}},
		{o, c, []string{"develops", "developed", "builds", "built", "makes", "produces", "offers", "sells", "launched", "released", "created", "uses", "used"}, []string{"DEVELOPS", "USES", "PRODUCES", "OFFERS", "WORKS_ON"}},
	}
}

// relatedTo is the fallback relationship type.
const relatedTo = "RELATED_TO"

// pickRelationship chooses the type of the relationship between a and b
// (a mentioned first) in a sentence with the given words, and its
// direction. ok is false when no allowed type fits.
func pickRelationship(a, b string, words map[string]bool, allowed []string, rules []relRule) (name string, swap, cued, ok bool) {
	allow := func(n string) (string, bool) {
		if allowed == nil {
			return n, true
		}
		for _, x := range allowed {
			if normName(x) == normName(n) {
				return x, true
			}
		}
		return "", false
	}
	for _, r := range rules {
		var sw bool
		switch {
		case r.source == a && r.target == b:
		case r.source == b && r.target == a:
			sw = true
		default:
			continue
		}
		if r.cues != nil && !slices.ContainsFunc(r.cues, func(c string) bool { return words[c] }) {
			continue
		}
		for _, n := range r.names {
			if got, ok := allow(n); ok {
				return got, sw, r.cues != nil, true
			}
		}
	}
	if got, ok := allow(relatedTo); ok {
		return got, false, false, true
	}
	return "", false, false, false
}

// sentenceWords is the set of lower-case words of a sentence.
func sentenceWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	}) {
		out[w] = true
	}
	return out
}

// excerpt returns a sentence of the text, whitespace collapsed, at most
// 200 bytes.
func (a *analysis) excerpt(si int) string {
	s := a.sentences[si]
	return truncate(strings.Join(strings.Fields(a.text[s.start:s.end]), " "), 200)
}

// pairRel is a relationship found by co-occurrence.
type pairRel struct {
	name           string
	source, target *entity
	sentence       int
	count          int
	cued, adjacent bool
}

// relationships finds the co-occurrence relationships between entities of
// the given types (typeOf returns "" for an entity that is left out). A
// cue word (founded, hosted, headquartered, ...) counts only between two
// entities mentioned next to each other, so that in "Alice met Bob Smith,
// CEO of Globex" the CEO is Bob's and not Alice's.
func (a *analysis) relationships(typeOf func(*entity) string, allowed []string) []*pairRel {
	rules := relRules()
	var out []*pairRel
	byKey := map[string]*pairRel{}
	for si, es := range a.inSentence {
		if len(es) < 2 {
			continue
		}
		for x := 0; x < len(es); x++ {
			for y := x + 1; y < len(es); y++ {
				src, tgt := es[x].e, es[y].e
				if typeOf(src) == "" || typeOf(tgt) == "" {
					continue
				}
				var cues map[string]bool
				adjacent := y == x+1
				if adjacent {
					cues = sentenceWords(a.text[es[x].start:es[y].start])
				}
				name, swap, cued, ok := pickRelationship(src.class, tgt.class, cues, allowed, rules)
				if !ok {
					continue
				}
				if swap {
					src, tgt = tgt, src
				}
				k := name + "\x00" + src.key + "\x00" + tgt.key
				if r := byKey[k]; r != nil {
					r.count++
					r.cued = r.cued || cued
					r.adjacent = r.adjacent || adjacent
					continue
				}
				r := &pairRel{name: name, source: src, target: tgt, sentence: si, count: 1, cued: cued, adjacent: adjacent}
				byKey[k] = r
				out = append(out, r)
			}
		}
	}
	return out
}

func (r *pairRel) confidence() float64 {
	c := 0.5 + 0.1*float64(r.count-1)
	if r.adjacent {
		c += 0.05
	}
	if r.cued {
		c += 0.15
	}
	if r.name == relatedTo {
		c = min(c, 0.7)
	}
	return round2(min(0.9, c))
}

// extraction is the local extraction response: the entities of the text
// whose class maps onto an allowed object type, and co-occurrence
// relationships of allowed types between them.
func extraction(a *analysis, objectTypes, relTypes []string) extractionOutput {
	out := extractionOutput{Objects: []extractedObject{}, Relationships: []extractedRelationship{}}
	typeOf := func(e *entity) string { return mapClass(e.class, objectTypes) }
	for _, e := range a.entities {
		t := typeOf(e)
		if t == "" {
			continue
		}
		n := len(e.mentions)
		times := "once"
		if n > 1 {
			times = fmt.Sprintf("%d times", n)
		}
		out.Objects = append(out.Objects, extractedObject{
			Type:        t,
			Name:        e.name,
			Key:         e.key,
			Description: fmt.Sprintf("%s mentioned %s, first in: %q", e.class, times, a.excerpt(e.mentions[0].sentence)),
			Properties:  map[string]any{},
			Confidence:  e.confidence(),
		})
	}
	for _, r := range a.relationships(typeOf, relTypes) {
		out.Relationships = append(out.Relationships, extractedRelationship{
			Type:        r.name,
			Source:      r.source.name,
			Target:      r.target.name,
			Description: fmt.Sprintf("Mentioned together in: %q", a.excerpt(r.sentence)),
			Confidence:  r.confidence(),
		})
	}
	return out
}

// classProperties are the properties proposed for a discovered class.
func classProperties(class string) (string, map[string]discoveryProperty) {
	str := func(d string) discoveryProperty { return discoveryProperty{Type: "string", Description: d} }
	switch class {
	case classPerson:
		return "A person named in the documents.", map[string]discoveryProperty{
			"role":        str("Job title or role of the person"),
			"affiliation": str("Organization the person belongs to"),
		}
	case classOrganization:
		return "A company, institution or other organization.", map[string]discoveryProperty{
			"industry":     str("Sector the organization works in"),
			"headquarters": str("Where the organization is based"),
		}
	case classLocation:
		return "A place: city, country, region or site.", map[string]discoveryProperty{
			"kind":    str("City, country, region, site, ..."),
			"country": str("Country the place is in"),
		}
	case classEvent:
		return "Something that happened or takes place at a time.", map[string]discoveryProperty{
			"date":     str("When it happened (ISO 8601 date when known)"),
			"location": str("Where it happened"),
		}
	default:
		return "A named concept, product, technology or topic.", map[string]discoveryProperty{
			"definition": str("Short definition"),
			"domain":     str("Field the concept belongs to"),
		}
	}
}
