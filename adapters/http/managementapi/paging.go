package managementapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Paging bounds of every list (CONTRACT.md: ?page=0&size=50, size at most 200).
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
	// maxPage keeps page*size far from overflowing and OFFSET from scanning forever.
	maxPage = 1_000_000
)

// Page is the answer of every list: {"items":[…],"page":0,"size":50,"total":N}.
type Page[T any] struct {
	Items []T `json:"items"`
	Page  int `json:"page"`
	Size  int `json:"size"`
	Total int `json:"total"`
}

// NewPage wraps one page of items (never null in JSON).
func NewPage[T any](items []T, req ports.PageRequest, total int) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Items: items, Page: req.Page, Size: req.Size, Total: total}
}

// Paging reads ?page= and ?size=. Errors: ports.ErrMalformed ("invalid-paging") for a value
// that is not an integer, a negative page or a size outside 1..MaxPageSize.
func Paging(c *gin.Context) (ports.PageRequest, error) {
	page, err := queryInt(c, "page", 0)
	if err != nil || page < 0 || page > maxPage {
		return ports.PageRequest{}, ports.Reject(ports.ErrMalformed, "invalid-paging", "page")
	}
	size, err := queryInt(c, "size", DefaultPageSize)
	if err != nil || size < 1 || size > MaxPageSize {
		return ports.PageRequest{}, ports.Reject(ports.ErrMalformed, "invalid-paging", "size")
	}
	return ports.PageRequest{Page: page, Size: size}, nil
}

// WriteList answers one page of a workspace's list with 200: Paging reads the page, read reads
// its rows of workspace ws and the total, toJSON shapes each row. Errors (nothing is written):
// Paging's and read's, for the caller to answer through the error map.
func WriteList[R, J any](c *gin.Context, ws int64, read func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error), toJSON func(R) J) error {
	page, err := Paging(c)
	if err != nil {
		return err
	}
	rows, total, err := read(c.Request.Context(), ws, page)
	if err != nil {
		return err
	}
	items := make([]J, len(rows))
	for i, r := range rows {
		items[i] = toJSON(r)
	}
	c.JSON(http.StatusOK, NewPage(items, page, total))
	return nil
}

func queryInt(c *gin.Context, name string, def int) (int, error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return def, nil
	}
	return strconv.Atoi(v)
}
