package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
)

func TestReply(t *testing.T) {
	t.Parallel()
	failed := errors.New("boom")

	out, err := httpapi.Reply("v", nil)
	require.NoError(t, err)
	require.Equal(t, "v", out.Body)
	out, err = httpapi.Reply("v", failed)
	require.ErrorIs(t, err, failed)
	require.Nil(t, out)

	created, err := httpapi.ReplyCreated(7, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.Status)
	require.Equal(t, 7, created.Body)
	created, err = httpapi.ReplyCreated(7, failed)
	require.ErrorIs(t, err, failed)
	require.Nil(t, created)

	// A nil page is an empty list, with the page it was asked for.
	list, err := httpapi.ReplyList[string](nil, 12, httpapi.PageParams{Limit: 5, Offset: 10}, nil)
	require.NoError(t, err)
	body, err := json.Marshal(list.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[],"total":12,"limit":5,"offset":10}`, string(body))
	list, err = httpapi.ReplyList([]string{"a"}, 1, httpapi.PageParams{}, failed)
	require.ErrorIs(t, err, failed)
	require.Nil(t, list)
}
