package templatepack

// The built-in default pack. Its definition lives here; Service.Start
// writes it to template_packs and bumps its version whenever it changes.

func str(desc string) map[string]any {
	return map[string]any{"type": "string", "maxLength": 2000, "description": desc}
}

func strList(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string", "maxLength": 500}, "maxItems": 100, "description": desc}
}

func number(desc string, minimum, maximum float64) map[string]any {
	return map[string]any{"type": "number", "minimum": minimum, "maximum": maximum, "description": desc}
}

// objectSchema is a JSON Schema for properties: an object with the given
// properties, other properties allowed (extraction may find more).
func objectSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": true,
	}
	setRequired(s, required)
	return s
}

func example(name, description string, props map[string]any) map[string]any {
	return map[string]any{"name": name, "description": description, "properties": props}
}

// defaultObjectTypes are the object types of the built-in pack.
func defaultObjectTypes() []ObjectType {
	return []ObjectType{
		{
			Name:        "Person",
			Description: "A human being, real or fictional, named in the text.",
			Schema: objectSchema(map[string]any{
				"aliases":     strList("Other names the person is known by."),
				"title":       str("Job title or honorific, e.g. CEO, Professor."),
				"occupation":  str("What the person does."),
				"birthDate":   str("Date of birth as written, ISO 8601 when known."),
				"deathDate":   str("Date of death as written, ISO 8601 when known."),
				"nationality": str("Nationality or citizenship."),
				"email":       str("E-mail address."),
			}),
			Examples: []map[string]any{example("Ada Lovelace", "English mathematician, author of the first published computer program.",
				map[string]any{"occupation": "mathematician", "birthDate": "1815-12-10", "nationality": "British"})},
		},
		{
			Name:        "Organization",
			Description: "A company, institution, agency, team or other organised group.",
			Schema: objectSchema(map[string]any{
				"aliases":      strList("Other names or abbreviations."),
				"kind":         str("Kind of organization, e.g. company, university, government agency, non-profit."),
				"industry":     str("Industry or field."),
				"foundedDate":  str("Founding date as written, ISO 8601 when known."),
				"website":      str("Web site URL."),
				"headquarters": str("Where it is based."),
			}),
			Examples: []map[string]any{example("Analytical Engine Company", "A fictional maker of mechanical computers.",
				map[string]any{"kind": "company", "industry": "computing", "foundedDate": "1842"})},
		},
		{
			Name:        "Location",
			Description: "A place: a country, region, city, address, building or natural feature.",
			Schema: objectSchema(map[string]any{
				"aliases":   strList("Other names of the place."),
				"kind":      str("Kind of place, e.g. city, country, region, building."),
				"country":   str("Country the place is in."),
				"address":   str("Postal address."),
				"latitude":  number("Latitude in degrees.", -90, 90),
				"longitude": number("Longitude in degrees.", -180, 180),
			}),
			Examples: []map[string]any{example("London", "Capital of the United Kingdom.",
				map[string]any{"kind": "city", "country": "United Kingdom", "latitude": 51.5072, "longitude": -0.1276})},
		},
		{
			Name:        "Event",
			Description: "Something that happens at a time: a meeting, conference, release, incident or historical event.",
			Schema: objectSchema(map[string]any{
				"aliases":   strList("Other names of the event."),
				"kind":      str("Kind of event, e.g. conference, meeting, launch, incident."),
				"startDate": str("Start date as written, ISO 8601 when known."),
				"endDate":   str("End date as written, ISO 8601 when known."),
			}),
			Examples: []map[string]any{example("Turin Conference 1840", "Babbage's presentation of the Analytical Engine in Turin.",
				map[string]any{"kind": "conference", "startDate": "1840"})},
		},
		{
			Name:        "Product",
			Description: "A product, service, software package or other thing made or offered by an organization.",
			Schema: objectSchema(map[string]any{
				"aliases":     strList("Other names of the product."),
				"kind":        str("Kind of product, e.g. software, device, service."),
				"version":     str("Version or model."),
				"releaseDate": str("Release date as written, ISO 8601 when known."),
				"url":         str("Product page URL."),
				"price":       number("List price in the currency given.", 0, 1e15),
				"currency":    str("ISO 4217 currency code of the price."),
			}),
			Examples: []map[string]any{example("Analytical Engine", "A proposed mechanical general-purpose computer.",
				map[string]any{"kind": "device"})},
		},
		{
			Name:        "Concept",
			Description: "An idea, topic, method, technology or term the text defines or discusses.",
			Schema: objectSchema(map[string]any{
				"aliases":    strList("Synonyms or abbreviations."),
				"domain":     str("Field the concept belongs to."),
				"definition": str("Short definition."),
			}),
			Examples: []map[string]any{example("Algorithm", "A finite sequence of instructions to solve a problem.",
				map[string]any{"domain": "computer science"})},
		},
		{
			Name:        "Document",
			Description: "A written work referred to by the text: a paper, book, article, report, web page or file.",
			Schema: objectSchema(map[string]any{
				"title":         str("Full title."),
				"kind":          str("Kind of document, e.g. paper, book, article, report."),
				"authors":       strList("Authors as written."),
				"publishedDate": str("Publication date as written, ISO 8601 when known."),
				"url":           str("Where it can be read."),
				"language":      str("Language, as an ISO 639 code when known."),
			}),
			Examples: []map[string]any{example("Sketch of the Analytical Engine", "Menabrea's paper, translated and annotated by Ada Lovelace.",
				map[string]any{"kind": "paper", "publishedDate": "1843", "authors": []any{"Luigi Menabrea", "Ada Lovelace"}})},
		},
	}
}

// defaultRelationshipTypes are the relationship types of the built-in pack.
func defaultRelationshipTypes() []RelationshipType {
	return []RelationshipType{
		{
			Name: "WORKS_FOR", SourceType: "Person", TargetType: "Organization", Cardinality: ManyToMany,
			Description: "The person works or worked for the organization.",
		},
		{
			Name: "FOUNDED", SourceType: "Person", TargetType: "Organization", Cardinality: ManyToMany,
			Description: "The person founded or co-founded the organization.",
		},
		{
			Name: "LOCATED_IN", SourceType: Any, TargetType: "Location", Cardinality: ManyToOne,
			Description: "The source is situated in, or based at, the location.",
		},
		{
			Name: "PART_OF", SourceType: Any, TargetType: Any, Cardinality: ManyToOne,
			Description: "The source is a part, member or subdivision of the target.",
		},
		{
			Name: "PARTICIPATED_IN", SourceType: "Person", TargetType: "Event", Cardinality: ManyToMany,
			Description: "The person took part in the event.",
		},
		{
			Name: "HELD_IN", SourceType: "Event", TargetType: "Location", Cardinality: ManyToOne,
			Description: "The event took place at the location.",
		},
		{
			Name: "PRODUCES", SourceType: "Organization", TargetType: "Product", Cardinality: OneToMany,
			Description: "The organization makes, sells or maintains the product.",
		},
		{
			Name: "AUTHORED", SourceType: "Person", TargetType: "Document", Cardinality: ManyToMany,
			Description: "The person wrote or co-wrote the document.",
		},
		{
			Name: "MENTIONS", SourceType: "Document", TargetType: Any, Cardinality: ManyToMany,
			Description: "The document mentions or discusses the target.",
		},
		{
			Name: "RELATED_TO", SourceType: Any, TargetType: Any, Cardinality: ManyToMany,
			Description: "A relation not covered by a more specific type.",
		},
	}
}

// DefaultPack is the definition of the built-in default pack, used by
// projects that installed no pack.
func DefaultPack() PackInput {
	return PackInput{
		Name:              DefaultPackName,
		Description:       "General-purpose types: people, organizations, places, events, products, concepts and documents.",
		Source:            SourceBuiltin,
		ObjectTypes:       defaultObjectTypes(),
		RelationshipTypes: defaultRelationshipTypes(),
	}
}
