package hxapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/oapi-codegen/runtime"
)

var _ = gin.New
var _ = runtime.BindStyledParameterWithOptions
var _ = http.MethodGet
