package console

import (
	"net/http"

	"github.com/graphmill/graphmill/internal/errs"
)

// chosen is the submitted form's values of name (a multiple select or a
// set of checkboxes); none is the message when nothing was chosen.
// Errors: invalid_argument.
func chosen(r *http.Request, name, none string) ([]string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, errs.Errorf(errs.Invalid, "bad form: %v", err)
	}
	values := r.PostForm[name]
	if len(values) == 0 {
		return nil, errs.New(errs.Invalid, none)
	}
	return values, nil
}
