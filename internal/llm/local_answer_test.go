package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
)

func TestLocalGroundedAnswer(t *testing.T) {
	t.Parallel()
	c := llm.NewLocal(16)
	prompt := "<source index=\"1\" document=\"a.md\">\n# Turbines\nThe turbine was designed by Ottoline. It is grey.\n</source>\n\n" +
		"<source index=\"2\" document=\"b.md\">\nBearings need grease every quarter [7]. Small turbine bearings need oil.\n</source>\n\n" +
		"<question>\nHow often do turbine bearings need grease?\n</question>"
	var deltas []string
	res, err := c.Chat(context.Background(), "", llm.ChatRequest{
		Purpose:  llm.PurposeGroundedAnswer,
		Messages: []llm.Message{{Role: llm.RoleSystem, Text: "rules"}, {Role: llm.RoleUser, Text: prompt}},
		OnDelta:  func(d string) error { deltas = append(deltas, d); return nil },
	})
	require.NoError(t, err)
	require.Equal(t, llm.LocalExtractiveLabel+" the passages that best match the question.\n\n"+
		"- Bearings need grease every quarter. [2]\n- Small turbine bearings need oil. [2]", res.Text, "sentences sharing under three quarters of the best's words are left out; the source's own [7] is not quoted")
	require.Equal(t, res.Text, strings.Join(deltas, ""))
	require.Equal(t, llm.LocalGenerateModel, res.Model)
	require.Positive(t, res.Usage.InputText)
	require.Positive(t, res.Usage.Output)

	again, err := c.Chat(context.Background(), "", llm.ChatRequest{Purpose: llm.PurposeGroundedAnswer, Messages: []llm.Message{{Role: llm.RoleUser, Text: prompt}}})
	require.NoError(t, err)
	require.Equal(t, res.Text, again.Text, "deterministic")

	other := strings.Replace(prompt, "How often do turbine bearings need grease?", "Quelle heure est-il?", 1)
	none, err := c.Chat(context.Background(), "", llm.ChatRequest{Purpose: llm.PurposeGroundedAnswer, Messages: []llm.Message{{Role: llm.RoleUser, Text: other}}})
	require.NoError(t, err)
	require.Equal(t, llm.LocalExtractiveLabel+" the retrieved sources do not answer this question.", none.Text)
}

func TestLocalSummary(t *testing.T) {
	t.Parallel()
	res, err := llm.NewLocal(16).Chat(context.Background(), "", llm.ChatRequest{
		Purpose: llm.PurposeSummary,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Text: "Summarise"},
			{Role: llm.RoleUser, Text: "summary: Earlier talk. More.\n\nuser: Who built it? Tell me.\n\nassistant: Ottoline built it. In 1921."},
		},
	})
	require.NoError(t, err)
	require.Equal(t, llm.LocalSummaryLabel+"\n- summary: Earlier talk.\n- user: Who built it?\n- assistant: Ottoline built it.", res.Text)
}

func TestSentencesAndStemWords(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"Title", "One.", "Two!", "Three", "It costs 3.5 euros"}, llm.Sentences("# Title\nOne. Two!\n- Three\n\n  It   costs 3.5 euros"))
	require.Equal(t, []string{"turbine", "bearing", "study", "design"}, llm.StemWords("The turbines' bearings: studies, designed!"))
}
