package support

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/hephaestus-dev/hephaestus/adapters/http/apidoc"
)

// APIDocument is the served OpenAPI document, loaded and validated by kin-openapi.
func APIDocument() (*openapi3.T, error) {
	raw, err := apidoc.JSON()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load the API document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the API document is not valid OpenAPI: %w", err)
	}
	return doc, nil
}

var (
	docRouterOnce sync.Once
	docRouter     routers.Router
	docRouterErr  error
)

// documentRouter finds a request's operation in the API document, whatever host the spec's
// server listens on (the document's servers are relative).
func documentRouter() (routers.Router, error) {
	docRouterOnce.Do(func() {
		doc, err := APIDocument()
		if err != nil {
			docRouterErr = err
			return
		}
		doc.Servers = nil
		// The install flows answer plain HTML pages, checked as text.
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		docRouter, docRouterErr = legacy.NewRouter(doc)
	})
	return docRouter, docRouterErr
}

// DocumentError is a request or answer of the API that the API document does not describe.
type DocumentError struct {
	Method, Path string
	Status       int
	Cause        error
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("API document does not describe %s %s → %d: %v", e.Method, e.Path, e.Status, e.Cause)
}

func (e *DocumentError) Unwrap() error { return e.Cause }

// ValidatingTransport sends each request through next and checks it, and its answer, against
// the API document: the operation must be documented (unless the server answered 404 or 405,
// i.e. it has no such route either), every answer's status, headers and body must match it
// (undocumented statuses and fields fail), and a request the server accepted (2xx) must match
// its documented parameters and body. A mismatch is the round trip's error, so the spec that
// sent it fails where it sent it. Webhook request bodies are the providers' own payloads and
// are not checked; event streams are passed through unread.
type ValidatingTransport struct {
	Next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t ValidatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	router, err := documentRouter()
	if err != nil {
		return nil, err
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if isEventStream(res.Header.Get("Content-Type")) {
		return res, nil
	}
	answer, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(answer))
	if err := checkExchange(req.Context(), router, req, body, res, answer); err != nil {
		return nil, &DocumentError{Method: req.Method, Path: req.URL.Path, Status: res.StatusCode, Cause: err}
	}
	return res, nil
}

func isEventStream(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "text/event-stream"
}

func checkExchange(ctx context.Context, router routers.Router, req *http.Request, body []byte, res *http.Response, answer []byte) error {
	probe := req.Clone(ctx)
	probe.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > 0 && probe.Header.Get("Content-Type") == "" {
		// The server reads every body as JSON whatever its Content-Type (the document says
		// so); many specs send none.
		probe.Header.Set("Content-Type", "application/json")
	}
	route, params, err := router.FindRoute(probe)
	if err != nil {
		if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed {
			return nil // no route in the document, none on the server
		}
		return fmt.Errorf("operation not in the document: %w", err)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
		ExcludeRequestBody:    strings.HasPrefix(req.URL.Path, "/webhooks/"),
	}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("request: %w", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                opts,
	}
	out.SetBodyBytes(answer)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("answer %s: %w", truncate(answer), err)
	}
	return nil
}

func truncate(b []byte) string {
	const limit = 300
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

// IsDocumentError reports whether err is a mismatch with the API document.
func IsDocumentError(err error) bool {
	var de *DocumentError
	return errors.As(err, &de)
}
