package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/graph"
)

// graphRule is the API's rule of the graph read routes (graph.Register).
//
//nolint:gochecknoglobals // constant rule
var graphRule = auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}

// provenanceShown bounds the quotes an object's page shows.
const provenanceShown = 20

// quoteAround bounds the text a quote keeps on each side of the object's
// name.
const quoteAround = 160

// objectOwner is the API's owner of a graph object path (graph.Register).
func (h *Handler) objectOwner() *auth.Owner {
	return &auth.Owner{
		Param: "id", Kind: "graph-object", Resolve: auth.InProject(h.cfg.Graph.ObjectProject), NotFound: graph.ErrObjectNotFound, NamedProject: true,
	}
}

// objectSearch is the explorer's query: text in name, key or description,
// and a type.
type objectSearch struct {
	Query string
	Type  string
}

// graphPage searches the project's objects (q, type) with the API's
// service and lists them, newest first, with the types and their counts.
func (h *Handler) graphPage(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, graphRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := objectSearch{Query: strings.TrimSpace(q.Get("q")), Type: q.Get("type")}
	offset := pageOffset(r)
	list, total, err := h.cfg.Graph.ListObjects(r.Context(), a.ProjectID, graph.ObjectFilter{Query: f.Query, Type: f.Type, Limit: PageSize, Offset: offset})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	types, err := h.cfg.Graph.ObjectTypes(r.Context(), a.ProjectID)
	pg := pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/graph", Params: filterQuery("q", f.Query, "type", f.Type)}
	h.show(w, r, graphSearchPage(c.sess.CSRF, projectView{Project: p}, f, types, list, pg), err)
}

// objectView is an object's page: the object, the chunks it was
// extracted from, a page of its relationships and the elements of the
// drawing of them.
type objectView struct {
	Object     graph.Object
	Provenance []graph.Provenance
	ProvTotal  int
	// CanReadDocuments: the caller passes documentsRule, so the chunks'
	// text and documents' names are shown (else only their count).
	CanReadDocuments bool
	Neighbours       []graph.Neighbour
	Elements         string
	Relations        pager
	ObjectsBase      string
}

// objectPage shows an object: type, properties, the quotes it was
// extracted from (linked to their document's chunk), and its
// relationships, listed as links and drawn (Cytoscape.js, from the
// elements in the page).
func (h *Handler) objectPage(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, o, err := ownedResource(h, r, c, graphRule, h.objectOwner(), h.cfg.Graph.GetObject)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	prov, provTotal, err := h.cfg.Graph.ObjectProvenance(r.Context(), a.ProjectID, o.ID, provenanceShown, 0)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	canDocs := h.can(r, c, documentsRule)
	if !canDocs {
		// The chunks' text and their documents' names are the API's
		// documents:read (GET /api/documents/{id}/chunks): only the count.
		prov = nil
	}
	offset := pageOffset(r)
	ns, total, err := h.cfg.Graph.Neighbours(r.Context(), a.ProjectID, o.ID, PageSize, offset)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	elements, err := graphElements(p.ID, o, ns)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	base := projectURL(p.ID) + "/graph"
	v := objectView{
		Object: o, Provenance: prov, ProvTotal: provTotal, CanReadDocuments: canDocs, Neighbours: ns, Elements: elements,
		Relations: pager{Offset: offset, Total: total, Base: objectURL(p.ID, o.ID)}, ObjectsBase: base,
	}
	h.render(w, r, http.StatusOK, objectPageView(c.sess.CSRF, projectView{Project: p}, v))
}

// cyElement is a Cytoscape.js element (a node or an edge).
type cyElement struct {
	Group   string `json:"group"`
	Data    cyData `json:"data"`
	Classes string `json:"classes,omitempty"`
}

type cyData struct {
	ID     string `json:"id"`
	Label  string `json:"label"`
	Type   string `json:"type,omitempty"`
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
}

// graphElements are the drawing's elements as JSON: the object (class
// center), the objects at the other ends of ns, and ns as edges.
func graphElements(project uuid.UUID, o graph.Object, ns []graph.Neighbour) (string, error) {
	els := []cyElement{{Group: "nodes", Classes: "center", Data: cyData{ID: o.ID.String(), Label: o.Name, Type: o.Type, URL: objectURL(project, o.ID)}}}
	seen := map[uuid.UUID]bool{o.ID: true}
	for _, n := range ns {
		if !seen[n.Other.ID] {
			seen[n.Other.ID] = true
			els = append(els, cyElement{Group: "nodes", Data: cyData{ID: n.Other.ID.String(), Label: n.Other.Name, Type: n.Other.Type, URL: objectURL(project, n.Other.ID)}})
		}
	}
	for _, n := range ns {
		rel := n.Relationship
		els = append(els, cyElement{Group: "edges", Data: cyData{ID: rel.ID.String(), Label: rel.Type, Source: rel.SourceID.String(), Target: rel.TargetID.String()}})
	}
	b, err := json.Marshal(els)
	return string(b), err
}

func objectURL(project, id uuid.UUID) string {
	return projectURL(project) + "/graph/objects/" + id.String()
}

// provenanceURL links a quote to its chunk (the console's chunk route
// sends to it on its document's page).
func provenanceURL(project uuid.UUID, pv graph.Provenance) string {
	return documentURL(project, pv.DocumentID) + "/chunks/" + pv.ChunkID.String()
}

// quote is the part of a chunk that mentions an object: the sentence
// around a mention of its name (cut to quoteAround characters on each
// side), the name marked. The first mention in a sentence of some length
// is taken (a heading that is only the name says little), else the first
// mention; the chunk's beginning when the name is not in it.
type quote struct {
	Before, Match, After string
}

// quoteContext is the context a mention needs around it to be preferred.
const quoteContext = 40

// sentenceEnd matches what ends a sentence or a line.
var sentenceEnd = regexp.MustCompile(`[.!?]\s|\n`)

func quoteOf(text, name string) quote {
	var locs [][]int
	if name = strings.TrimSpace(name); name != "" {
		if re, err := regexp.Compile(`(?i)` + regexp.QuoteMeta(name)); err == nil {
			locs = re.FindAllStringIndex(text, 8)
		}
	}
	if len(locs) == 0 {
		return quote{Before: clipEnd(strings.TrimSpace(text), 2*quoteAround)}
	}
	first := quoteAt(text, locs[0])
	for _, loc := range locs {
		if q := quoteAt(text, loc); utf8.RuneCountInString(q.Before+q.After) >= quoteContext {
			return q
		}
	}
	return first
}

// quoteAt is the quote of the mention at loc.
func quoteAt(text string, loc []int) quote {
	before, after := text[:loc[0]], text[loc[1]:]
	if ends := sentenceEnd.FindAllStringIndex(before, -1); len(ends) > 0 {
		before = before[ends[len(ends)-1][1]:]
	}
	if end := sentenceEnd.FindStringIndex(after); end != nil {
		after = after[:end[0]+1]
	}
	return quote{
		Before: clipStart(strings.TrimLeft(before, " \t#*>-"), quoteAround), Match: text[loc[0]:loc[1]],
		After: clipEnd(strings.TrimRight(after, " \t\n"), quoteAround),
	}
}

// clipEnd keeps the first n characters of s, with an ellipsis when cut.
func clipEnd(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// clipStart keeps the last n characters of s, with an ellipsis when cut.
func clipStart(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return "…" + string(rs[len(rs)-n:])
}

// propertyText shows a property's value: strings as they are, the rest
// as JSON.
func propertyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// objectsOfType is the graph list filtered on one type (the type encoded:
// "R&D #1" is one value, not a second parameter and a fragment).
func objectsOfType(base, typ string) string {
	return base + "?" + url.Values{"type": {typ}}.Encode()
}
