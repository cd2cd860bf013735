package ghemu

import (
	"net/http"
	"strconv"
	"time"
)

// Documentation links GitHub puts in error bodies. go-github recognises a
// secondary rate limit by the suffix of documentation_url, so that one must
// be exact.
const (
	docsRoot           = "https://docs.github.com/rest"
	docsCreatePull     = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	docsUpdatePull     = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request"
	docsRequestReview  = "https://docs.github.com/rest/pulls/review-requests#request-reviewers-for-a-pull-request"
	docsCreateIssue    = "https://docs.github.com/rest/issues/issues#create-an-issue"
	docsUpdateIssue    = "https://docs.github.com/rest/issues/issues#update-an-issue"
	docsCreateComment  = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
	docsAddLabels      = "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue"
	docsAccessToken    = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	docsPrimaryLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docsSecondaryLimit = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// errorBody is GitHub's error document. Since 2024 it also repeats the
// status code as a string.
type errorBody struct {
	Message          string            `json:"message"`
	Errors           []validationError `json:"errors,omitempty"`
	DocumentationURL string            `json:"documentation_url"`
	Status           string            `json:"status"`
}

// validationError is one entry of a 422's "errors" list.
type validationError struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func errorResponse(status int, message, docs string, errs ...validationError) *response {
	return &response{status: status, body: errorBody{
		Message:          message,
		Errors:           errs,
		DocumentationURL: docs,
		Status:           strconv.Itoa(status),
	}}
}

// errs names the resource and documentation of an endpoint's 422 answers.
type errs struct{ resource, docs string }

// invalid is a 422 for a field that is missing or has a wrong value.
func (e errs) invalid(field, code string) *response {
	return e.fail(validationError{Field: field, Code: code})
}

// refuse is a 422 with GitHub's own words for why.
func (e errs) refuse(field, message string) *response {
	return e.fail(validationError{Field: field, Code: "custom", Message: message})
}

func (e errs) fail(v validationError) *response {
	v.Resource = e.resource
	return errorResponse(http.StatusUnprocessableEntity, "Validation Failed", e.docs, v)
}

func notFound() *response { return errorResponse(http.StatusNotFound, "Not Found", docsRoot) }

func badCredentials() *response { return unauthorized("Bad credentials") }

func unauthorized(message string) *response {
	return errorResponse(http.StatusUnauthorized, message, docsRoot)
}

func primaryRateLimitResponse(reset time.Time, actor string) *response {
	r := errorResponse(http.StatusForbidden, "API rate limit exceeded for "+actor+".", docsPrimaryLimit)
	r.header = http.Header{}
	r.header.Set("X-RateLimit-Remaining", "0")
	r.header.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	return r
}

func secondaryRateLimitResponse(retryAfter int) *response {
	r := errorResponse(http.StatusForbidden,
		"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "+
			"If you reach out to GitHub Support for help, please include the request ID.", docsSecondaryLimit)
	r.header = http.Header{}
	r.header.Set("Retry-After", strconv.Itoa(retryAfter))
	return r
}
