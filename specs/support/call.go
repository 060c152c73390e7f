package support

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// API is a caller of one server under test: its base URL and the client that reaches it (the
// pair Serve returns, or a running server's address and a client of the spec's own).
type API struct {
	URL    string
	Client *http.Client
}

// Answer is one answer of the server under test: its status, headers and body, and the body
// decoded when it is a JSON object.
type Answer struct {
	Status int
	Header http.Header
	Raw    string
	JSON   map[string]any
}

// Call sends method path to the server with token as the bearer ("" for none). body is nil for
// none, a string sent as is, or a value sent as JSON; a request with a body says it is JSON.
func (api API) Call(method, path, token string, body any) Answer {
	ginkgo.GinkgoHelper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, api.URL+path, reader)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if reader != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return api.Do(req)
}

// Do sends req as it is and reads the whole answer.
func (api API) Do(req *http.Request) Answer {
	ginkgo.GinkgoHelper()
	res, err := api.Client.Do(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	a := Answer{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && raw[0] == '{' {
		gomega.Expect(json.Unmarshal(raw, &a.JSON)).To(gomega.Succeed(), a.Raw)
	}
	return a
}

// ID reads the answer's JSON number field as an id.
func (a Answer) ID(field string) int64 {
	ginkgo.GinkgoHelper()
	v, ok := a.JSON[field].(float64)
	gomega.Expect(ok).To(gomega.BeTrue(), "field %q of %s is not a number", field, a.Raw)
	return int64(v)
}

// GitLabHook is a hook delivery as GitLab sends it: body posted to url as JSON with the event
// (X-Gitlab-Event, e.g. "Issue Hook"), its UUID (also the Idempotency-Key), the sending
// instance and the hook's secret token.
func GitLabHook(ctx context.Context, url, event, uuid, instance, token string, body []byte) *http.Request {
	ginkgo.GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gitlab-Event", event)
	req.Header.Set("X-Gitlab-Event-UUID", uuid)
	req.Header.Set("Idempotency-Key", uuid)
	req.Header.Set("X-Gitlab-Instance", instance)
	req.Header.Set("X-Gitlab-Token", token)
	return req
}
