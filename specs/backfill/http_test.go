package backfill_test

import (
	"encoding/json"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

type httpClient struct{ c *http.Client }

// call sends method url with token ("" for none) and answers the status and the JSON body.
func (h *httpClient) call(method, url, token string) (int, map[string]any) {
	GinkgoHelper()
	req, err := http.NewRequest(method, url, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := h.c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	var body map[string]any
	Expect(json.Unmarshal(raw, &body)).To(Succeed(), string(raw))
	return res.StatusCode, body
}
