package operatorapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// erasureBody is the preview and start body:
// {"provider","sourceServerUrl","identities":[{"id","login","email"}…]}.
type erasureBody struct {
	Provider        string `json:"provider"`
	SourceServerURL string `json:"sourceServerUrl"`
	Identities      []struct {
		ID    json.RawMessage `json:"id"`
		Login string          `json:"login"`
		Email string          `json:"email"`
	} `json:"identities"`
}

// integerID is a JSON integer written as a number (providers' numeric ids).
var integerID = regexp.MustCompile(`^-?[0-9]{1,40}$`)

// request reads the body into the use case's request. An identity id is a string as the
// contract writes it ("583231", "U024BE7LH"); an integer number is taken as its digits, since a
// numeric provider id is easily sent unquoted.
func (b erasureBody) request() (personerasure.Request, error) {
	req := personerasure.Request{Provider: b.Provider, SourceServerURL: b.SourceServerURL}
	for _, i := range b.Identities {
		var id string
		raw := bytes.TrimSpace(i.ID)
		switch {
		case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		case raw[0] == '"':
			if err := json.Unmarshal(raw, &id); err != nil {
				return personerasure.Request{}, ports.Reject(ports.ErrMalformed, "invalid-json", "")
			}
		case integerID.Match(raw):
			id = string(raw)
		default:
			return personerasure.Request{}, ports.Reject(ports.ErrMalformed, personerasure.ReasonInvalidErasure, "identity id")
		}
		req.Identities = append(req.Identities, personerasure.Identity{ID: id, Login: i.Login, Email: i.Email})
	}
	return req, nil
}

func (h handlers) bindErasure(c *gin.Context) (personerasure.Request, bool) {
	var body erasureBody
	if err := bindJSON(c, &body); err != nil {
		h.fail(c, err)
		return personerasure.Request{}, false
	}
	req, err := body.request()
	if err != nil {
		h.fail(c, err)
		return personerasure.Request{}, false
	}
	return req, true
}

type storeMatchesJSON struct {
	Store   string `json:"store"`
	Matches int64  `json:"matches"`
}

func (h handlers) previewErasure(c *gin.Context) {
	req, ok := h.bindErasure(c)
	if !ok {
		return
	}
	matches, err := h.erasure.Preview(c.Request.Context(), managementapi.PrincipalOf(c), req)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]storeMatchesJSON, len(matches))
	for i, m := range matches {
		out[i] = storeMatchesJSON{Store: m.Store.String(), Matches: m.Matches}
	}
	c.JSON(http.StatusOK, gin.H{"stores": out})
}

type erasureStateJSON struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
}

func (h handlers) startErasure(c *gin.Context) {
	req, ok := h.bindErasure(c)
	if !ok {
		return
	}
	r, err := h.erasure.Start(c.Request.Context(), managementapi.PrincipalOf(c), req)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, erasureStateJSON{ID: r.ID(), State: r.State().String()})
}

type receiptJSON struct {
	Store   string `json:"store"`
	Pass    int    `json:"pass"`
	Deleted int64  `json:"deleted"`
	At      string `json:"at"`
	// FailedRows are the inbox rows the pass could not rewrite (always present, [] when none).
	FailedRows []int64 `json:"failedRows"`
}

type erasureJSON struct {
	ID       int64         `json:"id"`
	State    string        `json:"state"`
	Receipts []receiptJSON `json:"receipts"`
}

func toErasureJSON(r erasure.Request, receipts []erasure.Receipt) erasureJSON {
	out := erasureJSON{ID: r.ID(), State: r.State().String(), Receipts: make([]receiptJSON, len(receipts))}
	for i, rc := range receipts {
		failed := rc.FailedRows
		if failed == nil {
			failed = []int64{}
		}
		out.Receipts[i] = receiptJSON{Store: rc.Store.String(), Pass: rc.Pass, Deleted: rc.Deleted, At: timestamp(rc.At), FailedRows: failed}
	}
	return out
}

func (h handlers) getErasure(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, receipts, err := h.erasure.Erasure(c.Request.Context(), managementapi.PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toErasureJSON(r, receipts))
}

func (h handlers) resumeErasure(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.erasure.Resume(c.Request.Context(), managementapi.PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, erasureStateJSON{ID: r.ID(), State: r.State().String()})
}
