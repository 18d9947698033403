package console

import "net/url"

// filterQuery is the query of a list page's filters, given as name, value
// pairs: a filter not set (empty) is left out, so the page's links carry
// only the filters in use.
func filterQuery(namesAndValues ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(namesAndValues); i += 2 {
		if v := namesAndValues[i+1]; v != "" {
			q.Set(namesAndValues[i], v)
		}
	}
	return q
}
