package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// rssFeed is an RSS 2.0 feed of items {guid, title, date, text}.
func rssFeed(items ...[4]string) string {
	out := `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Orbit news</title><link>https://orbit.test/</link><description>News</description>`
	for _, it := range items {
		out += fmt.Sprintf(`<item><guid isPermaLink="false">%s</guid><title>%s</title><link>https://orbit.test/%s</link><pubDate>%s</pubDate><description><![CDATA[<p>%s</p>]]></description></item>`,
			it[0], it[1], it[0], it[2], it[3])
	}
	return out + `</channel></rss>`
}

// TestIntegrationSyncRSS: a feed synced through the whole server becomes
// parsed, extracted, searchable documents; a re-sync of the unchanged
// feed moves nothing; one edited item is updated and nothing else moves.
func TestIntegrationSyncRSS(t *testing.T) {
	t.Parallel()
	one := [4]string{"item-1", "Orbit 1.0 released", "Mon, 02 Nov 2026 10:00:00 +0000", "Maria Gonzalez of Northwind Labs in Berlin released Orbit with the heliotrope scheduler."}
	two := [4]string{"item-2", "Console update", "Tue, 03 Nov 2026 10:00:00 +0000", "David Chen of Acme Corporation in Toronto updated the console."}
	three := [4]string{"item-3", "Installer news", "Wed, 04 Nov 2026 10:00:00 +0000", "Priya Raman of Contoso Systems in Madrid shipped the installer."}
	site := newTestSite(t, map[string]string{"/feed.xml": rssFeed(one, two, three)})
	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	in := s.createIntegration(project, "news", "rss", map[string]any{"feed_url": site.srv.URL + "/feed.xml"})

	docs := in.firstSync(3, "heliotrope")
	require.Equal(t, "Orbit 1.0 released", docs["item-1"].SourceTitle)
	require.Equal(t, "https://orbit.test/item-1", docs["item-1"].SourceURL)

	before := in.resyncUnchanged()

	two[2] = "Thu, 05 Nov 2026 10:00:00 +0000"
	two[3] = "David Chen of Acme Corporation in Toronto rebuilt the console with the marmalite toolkit."
	site.set("/feed.xml", rssFeed(one, two, three))
	require.Equal(t, syncCounts{Total: 3, Processed: 3, Updated: 1, Unchanged: 2}, in.sync(nil))
	in.waitExtractionIdle()
	in.requireOnlyMoved(before, []string{"item-2"}, nil)
	in.requireFound("marmalite", docs["item-2"].ID)
}
